// CPU pack/unpack over the canonical form: a recursive walk in type-map
// order that skips whole subtrees outside the requested byte range, with
// fixed-size copy loops for the innermost strided blocks.
#include "canonical.hpp"

#include <cstring>

namespace collx_gpu {
namespace {

template <bool PACK, int64_t L>
inline void blocks_fixed(char *mem, int64_t stride, char *pk, int64_t n) {
#pragma GCC unroll 8
    for (int64_t i = 0; i < n; ++i) {
        if (PACK) __builtin_memcpy(pk + i * L, mem + i * stride, L);
        else __builtin_memcpy(mem + i * stride, pk + i * L, L);
    }
}

// n blocks of len bytes, memory stride `stride`, packed densely.
template <bool PACK>
inline void blocks(char *mem, int64_t stride, char *pk, int64_t n, int64_t len) {
    switch (len) {
    case 1: return blocks_fixed<PACK, 1>(mem, stride, pk, n);
    case 2: return blocks_fixed<PACK, 2>(mem, stride, pk, n);
    case 4: return blocks_fixed<PACK, 4>(mem, stride, pk, n);
    case 8: return blocks_fixed<PACK, 8>(mem, stride, pk, n);
    case 12: return blocks_fixed<PACK, 12>(mem, stride, pk, n);
    case 16: return blocks_fixed<PACK, 16>(mem, stride, pk, n);
    case 24: return blocks_fixed<PACK, 24>(mem, stride, pk, n);
    case 32: return blocks_fixed<PACK, 32>(mem, stride, pk, n);
    case 48: return blocks_fixed<PACK, 48>(mem, stride, pk, n);
    case 64: return blocks_fixed<PACK, 64>(mem, stride, pk, n);
    case 128: return blocks_fixed<PACK, 128>(mem, stride, pk, n);
    default:
        for (int64_t i = 0; i < n; ++i) {
            if (PACK) std::memcpy(pk + i * len, mem + i * stride, len);
            else std::memcpy(mem + i * stride, pk + i * len, len);
        }
    }
}

template <bool PACK>
struct Walker {
    int64_t begin, end;  // stream byte range
    char *out;           // stream byte `begin` <-> out[0]

    // block of len bytes at mem, stream position pos (may be partial)
    inline void part(char *mem, int64_t pos, int64_t len) {
        int64_t a = pos < begin ? begin - pos : 0;
        int64_t b = pos + len > end ? end - pos : len;
        if (b <= a) return;
        if (PACK) std::memcpy(out + (pos + a - begin), mem + a, b - a);
        else std::memcpy(mem + a, out + (pos + a - begin), b - a);
    }

    // a whole subtree inside [begin, end): no range arithmetic, the output
    // pointer just advances
    static inline void copy1(char *mem, char *o, int64_t len) {
        switch (len) {
        case 1: if (PACK) __builtin_memcpy(o, mem, 1); else __builtin_memcpy(mem, o, 1); return;
        case 2: if (PACK) __builtin_memcpy(o, mem, 2); else __builtin_memcpy(mem, o, 2); return;
        case 4: if (PACK) __builtin_memcpy(o, mem, 4); else __builtin_memcpy(mem, o, 4); return;
        case 8: if (PACK) __builtin_memcpy(o, mem, 8); else __builtin_memcpy(mem, o, 8); return;
        case 16: if (PACK) __builtin_memcpy(o, mem, 16); else __builtin_memcpy(mem, o, 16); return;
        default: if (PACK) std::memcpy(o, mem, len); else std::memcpy(mem, o, len);
        }
    }
    static void full_seq(const Seq &q, char *base, char *&o) {
        for (const Seg &s : q.segs) {
            if (!s.child && s.dims.empty()) {
                copy1(base + s.disp, o, s.len);
                o += s.len;
            } else {
                full_seg(s, 0, base + s.disp, o);
            }
        }
    }
    static void full_seg(const Seg &s, size_t d, char *mem, char *&o) {
        if (d == s.dims.size()) {
            if (s.child) full_seq(*s.child, mem, o);
            else {
                copy1(mem, o, s.len);
                o += s.len;
            }
            return;
        }
        int64_t c = s.dims[d].count, st = s.dims[d].stride;
        if (d + 1 == s.dims.size() && !s.child) {
            blocks<PACK>(mem, st, o, c, s.len);
            o += c * s.len;
            return;
        }
        for (int64_t i = 0; i < c; ++i) full_seg(s, d + 1, mem + i * st, o);
    }

    void seq(const Seq &q, char *base, int64_t pos) {
        if (pos >= begin && pos + q.size <= end) {
            char *o = out + (pos - begin);
            full_seq(q, base, o);
            return;
        }
        for (const Seg &s : q.segs) {
            int64_t n = s.bytes();
            if (pos >= end) return;
            if (pos + n > begin) dims(s, 0, base + s.disp, pos);
            pos += n;
        }
    }

    void dims(const Seg &s, size_t d, char *mem, int64_t pos) {
        if (d == s.dims.size()) {
            if (s.child) seq(*s.child, mem, pos);
            else part(mem, pos, s.len);
            return;
        }
        int64_t unit = s.pk[d], c = s.dims[d].count, st = s.dims[d].stride;
        int64_t i0 = pos < begin ? (begin - pos) / unit : 0;
        int64_t i1 = pos + c * unit > end ? (end - pos + unit - 1) / unit : c;
        if (d + 1 == s.dims.size() && !s.child) {
            // innermost run of leaf blocks (unit == len): whole blocks in one
            // tight loop, the partial ones at the range ends byte-wise
            int64_t f0 = pos + i0 * unit >= begin ? i0 : i0 + 1;
            int64_t f1 = pos + i1 * unit <= end ? i1 : i1 - 1;
            if (f0 > f1) {
                part(mem + i0 * st, pos + i0 * unit, s.len);
                return;
            }
            if (f0 > i0) part(mem + i0 * st, pos + i0 * unit, s.len);
            if (f1 > f0) blocks<PACK>(mem + f0 * st, st, out + (pos + f0 * unit - begin), f1 - f0, s.len);
            if (f1 < i1) part(mem + f1 * st, pos + f1 * unit, s.len);
            return;
        }
        for (int64_t i = i0; i < i1; ++i) dims(s, d + 1, mem + i * st, pos + i * unit);
    }
};

template <bool PACK>
void run(const Form &f, char *buf, int64_t count, int64_t begin, int64_t end, char *packed) {
    if (end <= begin || f.size == 0) return;
    Walker<PACK> w{begin, end, packed};
    if (f.contiguous) {
        // one dense run per element; with extent == size the whole stream is dense
        char *base = buf + f.root->segs[0].disp;
        if (PACK) std::memcpy(packed, base + begin, end - begin);
        else std::memcpy(base + begin, packed, end - begin);
        return;
    }
    int64_t i0 = begin / f.size, i1 = (end + f.size - 1) / f.size;
    if (i1 > count) i1 = count;
    for (int64_t i = i0; i < i1; ++i) w.seq(*f.root, buf + i * f.extent, i * f.size);
}

} // namespace

void pack_range(const Form &f, const char *buf, int64_t count, int64_t begin, int64_t end, char *packed) {
    run<true>(f, const_cast<char *>(buf), count, begin, end, packed);
}
void unpack_range(const Form &f, char *buf, int64_t count, int64_t begin, int64_t end, const char *packed) {
    run<false>(f, buf, count, begin, end, const_cast<char *>(packed));
}

} // namespace collx_gpu
