// A deliberately naive, independent type-map expander (no simplification):
// the oracle that decides, when the engine and the system MPI_Pack disagree,
// which of the two is right.
#pragma once
#include <mpi.h>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

namespace collx_gpu_testing {

using Blocks = std::vector<std::pair<int64_t, int64_t>>;  // (offset, bytes), type-map order

inline void naive_expand(MPI_Datatype t, int64_t base, Blocks &out) {
    int ni, na, nd, comb;
    MPI_Type_get_envelope(t, &ni, &na, &nd, &comb);
    if (comb == MPI_COMBINER_NAMED) {
        int s;
        MPI_Type_size(t, &s);
        MPI_Aint lb, e;
        MPI_Type_get_extent(t, &lb, &e);
        if (s != e) {  // value-int pairs: value, then int at the padded offset
            int64_t first = s - int64_t(sizeof(int));
            int64_t second = e - int64_t(sizeof(int)) >= first ? (t == MPI_LONG_DOUBLE_INT ? 16 : (first <= 4 ? 4 : 8)) : first;
            out.push_back({base, first});
            out.push_back({base + second, int64_t(sizeof(int))});
        } else {
            out.push_back({base, s});
        }
        return;
    }
    std::vector<int> I(ni + 1);
    std::vector<MPI_Aint> A(na + 1);
    std::vector<MPI_Datatype> T(nd + 1, MPI_DATATYPE_NULL);
    MPI_Type_get_contents(t, ni, na, nd, I.data(), A.data(), T.data());
    auto ext = [](MPI_Datatype x) { MPI_Aint lb, e; MPI_Type_get_extent(x, &lb, &e); return int64_t(e); };
    int64_t e0 = nd ? ext(T[0]) : 0;
    switch (comb) {
    case MPI_COMBINER_DUP: case MPI_COMBINER_RESIZED: naive_expand(T[0], base, out); break;
    case MPI_COMBINER_CONTIGUOUS:
        for (int i = 0; i < I[0]; ++i) naive_expand(T[0], base + i * e0, out);
        break;
    case MPI_COMBINER_VECTOR: case MPI_COMBINER_HVECTOR: {
        int64_t st = comb == MPI_COMBINER_VECTOR ? int64_t(I[2]) * e0 : int64_t(A[0]);
        for (int i = 0; i < I[0]; ++i)
            for (int j = 0; j < I[1]; ++j) naive_expand(T[0], base + i * st + j * e0, out);
        break;
    }
    case MPI_COMBINER_INDEXED:
        for (int i = 0; i < I[0]; ++i)
            for (int j = 0; j < I[1 + i]; ++j) naive_expand(T[0], base + (int64_t(I[1 + I[0] + i]) + j) * e0, out);
        break;
    case MPI_COMBINER_HINDEXED:
        for (int i = 0; i < I[0]; ++i)
            for (int j = 0; j < I[1 + i]; ++j) naive_expand(T[0], base + A[i] + j * e0, out);
        break;
    case MPI_COMBINER_INDEXED_BLOCK:
        for (int i = 0; i < I[0]; ++i)
            for (int j = 0; j < I[1]; ++j) naive_expand(T[0], base + (int64_t(I[2 + i]) + j) * e0, out);
        break;
    case MPI_COMBINER_HINDEXED_BLOCK:
        for (int i = 0; i < I[0]; ++i)
            for (int j = 0; j < I[1]; ++j) naive_expand(T[0], base + A[i] + j * e0, out);
        break;
    case MPI_COMBINER_STRUCT:
        for (int i = 0; i < I[0]; ++i)
            for (int j = 0; j < I[1 + i]; ++j) naive_expand(T[i], base + A[i] + j * ext(T[i]), out);
        break;
    case MPI_COMBINER_SUBARRAY: case MPI_COMBINER_DARRAY: {
        // owned global indices per dimension, then the product with the
        // fastest dimension innermost
        int n = comb == MPI_COMBINER_SUBARRAY ? I[0] : I[2];
        bool corder = comb == MPI_COMBINER_SUBARRAY ? I[1 + 3 * n] == MPI_ORDER_C : I[3 + 4 * n] == MPI_ORDER_C;
        const int *sizes = comb == MPI_COMBINER_SUBARRAY ? &I[1] : &I[3];
        std::vector<std::vector<int64_t>> idx(n);
        std::vector<int> coord(n);
        if (comb == MPI_COMBINER_DARRAY) {
            int r = I[1];
            for (int d = n - 1; d >= 0; --d) { coord[d] = r % I[3 + 3 * n + d]; r /= I[3 + 3 * n + d]; }
        }
        for (int d = 0; d < n; ++d) {
            if (comb == MPI_COMBINER_SUBARRAY) {
                for (int k = 0; k < I[1 + n + d]; ++k) idx[d].push_back(I[1 + 2 * n + d] + k);
                continue;
            }
            int g = sizes[d], dist = I[3 + n + d], darg = I[3 + 2 * n + d], p = I[3 + 3 * n + d];
            for (int k = 0; k < g; ++k) {
                bool mine;
                if (dist == MPI_DISTRIBUTE_NONE) mine = true;
                else if (dist == MPI_DISTRIBUTE_BLOCK) {
                    int b = darg == MPI_DISTRIBUTE_DFLT_DARG ? (g + p - 1) / p : darg;
                    mine = k / b == coord[d];
                } else {
                    int b = darg == MPI_DISTRIBUTE_DFLT_DARG ? 1 : darg;
                    mine = (k / b) % p == coord[d];
                }
                if (mine) idx[d].push_back(k);
            }
        }
        std::vector<int64_t> stride(n);
        int64_t acc = e0;
        for (int k = 0; k < n; ++k) {
            int d = corder ? n - 1 - k : k;
            stride[d] = acc;
            acc *= sizes[d];
        }
        std::vector<size_t> it(n, 0);
        for (int d = 0; d < n; ++d) if (idx[d].empty()) return;
        for (;;) {
            int64_t off = 0;
            for (int d = 0; d < n; ++d) off += idx[d][it[d]] * stride[d];
            naive_expand(T[0], base + off, out);
            int k = 0;  // odometer, fastest first
            for (; k < n; ++k) {
                int d = corder ? n - 1 - k : k;
                if (++it[d] < idx[d].size()) break;
                it[d] = 0;
            }
            if (k == n) break;
        }
        break;
    }
    default: break;
    }
    for (auto &x : T) {
        int a, b, c, cb;
        if (x != MPI_DATATYPE_NULL && MPI_Type_get_envelope(x, &a, &b, &c, &cb) == MPI_SUCCESS &&
            cb != MPI_COMBINER_NAMED)
            MPI_Type_free(&x);
    }
}

inline void naive_pack(MPI_Datatype t, const unsigned char *buf, int64_t count, unsigned char *out) {
    Blocks b;
    naive_expand(t, 0, b);
    MPI_Aint lb, e;
    MPI_Type_get_extent(t, &lb, &e);
    for (int64_t i = 0; i < count; ++i)
        for (auto &x : b) {
            std::memcpy(out, buf + i * e + x.first, size_t(x.second));
            out += x.second;
        }
}

} // namespace collx_gpu_testing
