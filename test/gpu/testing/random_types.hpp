// Random nested MPI datatypes for the equivalence tests (every constructor,
// negative strides and displacements, resized bounds), kept small.
#pragma once
#include <mpi.h>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace collx_gpu_testing {

struct RandomTypes {
    std::mt19937_64 rng;
    explicit RandomTypes(uint64_t seed) : rng(seed) {}
    int r(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }
    std::string last;  // constructor names of the last type, for messages

    static bool named(MPI_Datatype t) {
        int ni, na, nd, c;
        MPI_Type_get_envelope(t, &ni, &na, &nd, &c);
        return c == MPI_COMBINER_NAMED;
    }
    static void release(MPI_Datatype &t) {
        if (!named(t)) MPI_Type_free(&t);
    }
    MPI_Datatype basic() {
        static const MPI_Datatype b[] = {MPI_BYTE,  MPI_CHAR,       MPI_SHORT,  MPI_INT,      MPI_FLOAT,
                                         MPI_DOUBLE, MPI_LONG_LONG, MPI_2INT,   MPI_FLOAT_INT, MPI_DOUBLE_INT,
                                         MPI_SHORT_INT, MPI_LONG_DOUBLE_INT};
        return b[r(0, int(sizeof b / sizeof b[0]) - 1)];
    }
    static MPI_Aint ext(MPI_Datatype t) {
        MPI_Aint lb, e;
        MPI_Type_get_extent(t, &lb, &e);
        return e;
    }

    // a committed-able (uncommitted) type; depth levels of constructors
    MPI_Datatype gen(int depth) {
        if (depth == 0 || r(0, 5) == 0) {
            last += "b";
            return basic();
        }
        MPI_Datatype out = MPI_DATATYPE_NULL;
        int kind = r(0, 12);
        if (kind == 7) {  // struct of several children
            int n = r(1, 3);
            std::vector<MPI_Datatype> ts(n);
            std::vector<int> bl(n);
            std::vector<MPI_Aint> d(n);
            last += "struct(";
            for (int i = 0; i < n; ++i) {
                ts[i] = gen(depth - 1);
                bl[i] = r(0, 3);
                d[i] = r(-24, 64);
            }
            last += ")";
            MPI_Type_create_struct(n, bl.data(), d.data(), ts.data(), &out);
            for (auto &t : ts) release(t);
            return out;
        }
        MPI_Datatype c = gen(depth - 1);
        MPI_Aint e = ext(c);
        if (e <= 0) e = 1;
        switch (kind) {
        case 0: last += "contig"; MPI_Type_contiguous(r(0, 4), c, &out); break;
        case 1: last += "vector"; MPI_Type_vector(r(0, 4), r(0, 3), r(-4, 6), c, &out); break;
        case 2: last += "hvector"; MPI_Type_create_hvector(r(0, 4), r(0, 3), r(-3, 4) * e + r(-2, 2) * r(0, 1), c, &out); break;
        case 3: case 4: {
            int n = r(0, 4);
            std::vector<int> bl(n), d(n);
            std::vector<MPI_Aint> hd(n);
            for (int i = 0; i < n; ++i) {
                bl[i] = r(0, 3);
                d[i] = r(-5, 10);
                hd[i] = r(-40, 80);
            }
            if (kind == 3) { last += "indexed"; MPI_Type_indexed(n, bl.data(), d.data(), c, &out); }
            else { last += "hindexed"; MPI_Type_create_hindexed(n, bl.data(), hd.data(), c, &out); }
            break;
        }
        case 5: case 6: {
            int n = r(0, 4), b = r(0, 3);
            std::vector<int> d(n);
            std::vector<MPI_Aint> hd(n);
            for (int i = 0; i < n; ++i) {
                d[i] = r(-5, 10);
                hd[i] = r(-40, 80);
            }
            if (kind == 5) { last += "indexed_block"; MPI_Type_create_indexed_block(n, b, d.data(), c, &out); }
            else { last += "hindexed_block"; MPI_Type_create_hindexed_block(n, b, hd.data(), c, &out); }
            break;
        }
        case 8: {
            int nd = r(1, 3);
            int sizes[3], sub[3], st[3];
            for (int i = 0; i < nd; ++i) {
                sizes[i] = r(1, 4);
                sub[i] = r(1, sizes[i]);
                st[i] = r(0, sizes[i] - sub[i]);
            }
            last += "subarray";
            MPI_Type_create_subarray(nd, sizes, sub, st, r(0, 1) ? MPI_ORDER_C : MPI_ORDER_FORTRAN, c, &out);
            break;
        }
        case 9: {  // (Open MPI 4.1 refuses some derived old types here)
            release(c);
            c = basic();
            int nd = r(1, 2);
            int gs[2], dist[2], darg[2], ps[2], size = 1;
            for (int i = 0; i < nd; ++i) {
                gs[i] = r(1, 6);
                ps[i] = r(1, 3);
                int k = r(0, 2);
                if (k == 0) { dist[i] = MPI_DISTRIBUTE_NONE; ps[i] = 1; darg[i] = MPI_DISTRIBUTE_DFLT_DARG; }
                else if (k == 1) {
                    dist[i] = MPI_DISTRIBUTE_BLOCK;
                    int minb = (gs[i] + ps[i] - 1) / ps[i];
                    darg[i] = r(0, 1) ? MPI_DISTRIBUTE_DFLT_DARG : minb + r(0, 1);
                } else {
                    dist[i] = MPI_DISTRIBUTE_CYCLIC;
                    darg[i] = r(0, 1) ? MPI_DISTRIBUTE_DFLT_DARG : r(1, 3);
                }
                size *= ps[i];
            }
            last += "darray";
            MPI_Type_create_darray(size, r(0, size - 1), nd, gs, dist, darg, ps,
                                   r(0, 1) ? MPI_ORDER_C : MPI_ORDER_FORTRAN, c, &out);
            break;
        }
        case 10: case 11: {
            MPI_Aint lb, te;
            MPI_Type_get_true_extent(c, &lb, &te);
            last += "resized";
            MPI_Type_create_resized(c, lb - r(0, 8), te + r(0, 16) + 1, &out);
            break;
        }
        default: last += "dup"; MPI_Type_dup(c, &out); break;
        }
        last += "(";
        last += ")";
        release(c);
        return out;
    }

    // committed random type with limited footprint
    MPI_Datatype make(int max_depth) {
        for (;;) {
            last.clear();
            MPI_Datatype t = gen(r(1, max_depth));
            if (named(t)) return t;
            MPI_Type_commit(&t);
            MPI_Count size;
            MPI_Aint lb, te, l2, e;
            MPI_Type_size_x(t, &size);
            MPI_Type_get_true_extent(t, &lb, &te);
            MPI_Type_get_extent(t, &l2, &e);
            if (size <= 8192 && te <= 65536 && e >= 0 && e <= 65536) return t;
            MPI_Type_free(&t);
        }
    }
};

// byte span [lo, hi) touched by count elements (relative to the buffer pointer)
inline void span_of(MPI_Datatype t, int64_t count, int64_t &lo, int64_t &hi) {
    MPI_Aint lb, e, tlb, te;
    MPI_Type_get_extent(t, &lb, &e);
    MPI_Type_get_true_extent(t, &tlb, &te);
    lo = tlb;
    hi = tlb + te;
    if (count > 1) {
        int64_t last = (count - 1) * e;
        lo = lo < lo + last ? lo : lo + last;
        hi = hi > hi + last ? hi : hi + last;
    }
    if (hi < lo) hi = lo;
}

} // namespace collx_gpu_testing
