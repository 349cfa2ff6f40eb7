// CPU pack/unpack over the canonical form: a recursive walk in type-map
// order that skips whole subtrees outside the requested byte range, with
// fixed-size copy loops for the innermost strided blocks.
#include "canonical.hpp"

#include <cstdint>
#include <cstring>
#include <type_traits>

namespace collx_gpu {
namespace {

// ---------------------------------------------------------------- copies
// Exact copies only: bytes outside the type map are never read on pack and
// never written on unpack.

template <bool PACK, int64_t L>
inline void blocks_fixed(char *mem, int64_t stride, char *pk, int64_t n) {
#pragma GCC unroll 8
    for (int64_t i = 0; i < n; ++i) {
        if (PACK) __builtin_memcpy(pk + i * L, mem + i * stride, L);
        else __builtin_memcpy(mem + i * stride, pk + i * L, L);
    }
}

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
// Blocks of L = 1, 2 or 4 bytes: 8 / L blocks are gathered into one 64-bit
// word, so the packed side sees one 8-byte store (load) instead of 8 / L
// narrow ones; the store port, not the loads, limits the plain loop.
template <bool PACK, int L>
inline void blocks_word(char *mem, int64_t stride, char *pk, int64_t n) {
    using T = typename std::conditional<L == 1, uint8_t, typename std::conditional<L == 2, uint16_t, uint32_t>::type>::type;
    constexpr int K = 8 / L;
    int64_t i = 0;
    for (; i + 2 * K <= n; i += 2 * K) {
        uint64_t w0 = 0, w1 = 0;
        if (PACK) {
#pragma GCC unroll 8
            for (int k = 0; k < K; ++k) {
                T v0, v1;
                __builtin_memcpy(&v0, mem + (i + k) * stride, L);
                __builtin_memcpy(&v1, mem + (i + K + k) * stride, L);
                w0 |= uint64_t(v0) << (8 * L * k);
                w1 |= uint64_t(v1) << (8 * L * k);
            }
            __builtin_memcpy(pk + i * L, &w0, 8);
            __builtin_memcpy(pk + i * L + 8, &w1, 8);
        } else {
            __builtin_memcpy(&w0, pk + i * L, 8);
            __builtin_memcpy(&w1, pk + i * L + 8, 8);
#pragma GCC unroll 8
            for (int k = 0; k < K; ++k) {
                T v0 = T(w0 >> (8 * L * k)), v1 = T(w1 >> (8 * L * k));
                __builtin_memcpy(mem + (i + k) * stride, &v0, L);
                __builtin_memcpy(mem + (i + K + k) * stride, &v1, L);
            }
        }
    }
    blocks_fixed<PACK, L>(mem + i * stride, stride, pk + i * L, n - i);
}
#define COLLX_WORD(PACK, L) blocks_word<PACK, L>
#else
#define COLLX_WORD(PACK, L) blocks_fixed<PACK, L>
#endif

// one block of any length: the small ones as two overlapping fixed copies
inline void copy_var(char *dst, const char *src, int64_t len) {
    if (len <= 16) {
        if (len >= 8) {
            uint64_t a, b;
            __builtin_memcpy(&a, src, 8);
            __builtin_memcpy(&b, src + len - 8, 8);
            __builtin_memcpy(dst, &a, 8);
            __builtin_memcpy(dst + len - 8, &b, 8);
        } else if (len >= 4) {
            uint32_t a, b;
            __builtin_memcpy(&a, src, 4);
            __builtin_memcpy(&b, src + len - 4, 4);
            __builtin_memcpy(dst, &a, 4);
            __builtin_memcpy(dst + len - 4, &b, 4);
        } else if (len >= 2) {
            uint16_t a, b;
            __builtin_memcpy(&a, src, 2);
            __builtin_memcpy(&b, src + len - 2, 2);
            __builtin_memcpy(dst, &a, 2);
            __builtin_memcpy(dst + len - 2, &b, 2);
        } else if (len == 1) {
            *dst = *src;
        }
    } else if (len <= 32) {
        char a[16], b[16];
        __builtin_memcpy(a, src, 16);
        __builtin_memcpy(b, src + len - 16, 16);
        __builtin_memcpy(dst, a, 16);
        __builtin_memcpy(dst + len - 16, b, 16);
    } else {
        std::memcpy(dst, src, size_t(len));
    }
}

// n blocks of len bytes, memory stride `stride`, packed densely.
template <bool PACK>
inline void blocks(char *mem, int64_t stride, char *pk, int64_t n, int64_t len) {
    switch (len) {
    case 1: return COLLX_WORD(PACK, 1)(mem, stride, pk, n);
    case 2: return COLLX_WORD(PACK, 2)(mem, stride, pk, n);
    case 4: return COLLX_WORD(PACK, 4)(mem, stride, pk, n);
    case 8: return blocks_fixed<PACK, 8>(mem, stride, pk, n);
    case 12: return blocks_fixed<PACK, 12>(mem, stride, pk, n);
    case 16: return blocks_fixed<PACK, 16>(mem, stride, pk, n);
    case 24: return blocks_fixed<PACK, 24>(mem, stride, pk, n);
    case 32: return blocks_fixed<PACK, 32>(mem, stride, pk, n);
    case 48: return blocks_fixed<PACK, 48>(mem, stride, pk, n);
    case 64: return blocks_fixed<PACK, 64>(mem, stride, pk, n);
    case 128: return blocks_fixed<PACK, 128>(mem, stride, pk, n);
    case 256: return blocks_fixed<PACK, 256>(mem, stride, pk, n);
    default:
        for (int64_t i = 0; i < n; ++i) {
            if (PACK) copy_var(pk + i * len, mem + i * stride, len);
            else copy_var(mem + i * stride, pk + i * len, len);
        }
    }
}

// ------------------------------------------------------------ block lists
// Blocks of one length L at listed offsets.
template <bool PACK, int64_t L>
inline void list_fixed(char *base, const int32_t *off, char *pk, int64_t n) {
#pragma GCC unroll 4
    for (int64_t i = 0; i < n; ++i) {
        if (PACK) __builtin_memcpy(pk + i * L, base + off[i], L);
        else __builtin_memcpy(base + off[i], pk + i * L, L);
    }
}
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
template <bool PACK>
inline void list_bytes(char *base, const int32_t *off, char *pk, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        if (PACK) {
            uint64_t w = 0;
#pragma GCC unroll 8
            for (int k = 0; k < 8; ++k) w |= uint64_t(uint8_t(base[off[i + k]])) << (8 * k);
            __builtin_memcpy(pk + i, &w, 8);
        } else {
            uint64_t w;
            __builtin_memcpy(&w, pk + i, 8);
#pragma GCC unroll 8
            for (int k = 0; k < 8; ++k) base[off[i + k]] = char(w >> (8 * k));
        }
    }
    list_fixed<PACK, 1>(base, off + i, pk + i, n - i);
}
#define COLLX_LIST1(PACK) list_bytes<PACK>
#else
#define COLLX_LIST1(PACK) list_fixed<PACK, 1>
#endif

// pack of blocks of at most W bytes at listed offsets (see run_blocks)
template <int W>
inline void over_copy(const char *base, const int32_t *off, const int32_t *len, int64_t n, char *o, char *oend) {
    for (int64_t i = 0; i < n; ++i) {
        const char *m = base + off[i];
        int64_t l = len[i];
        if (__builtin_expect(l <= W && o + W <= oend && (uintptr_t(m) & 4095) <= 4096 - W, 1)) {
            char w[W];
            __builtin_memcpy(w, m, W);
            __builtin_memcpy(o, w, W);
        } else {
            copy_var(o, m, l);
        }
        o += l;
    }
}

// the blocks of run r, all inside the range; returns the packed bytes moved
template <bool PACK>
inline int64_t run_blocks(const BlockPlan &p, const BlockRun &r, char *base, char *pk) {
    const int32_t *off = p.off.data() + r.b0;
    int64_t n = r.n;
    switch (r.ulen) {
    case 0: {
        const int32_t *len = p.len.data() + r.b0;
        char *o = pk;
        if (PACK && r.maxlen <= 8) {
            // Blocks of up to 8 (16) bytes: one 8 (16)-byte load and store
            // each; a longer block, or one near the run's end or a page
            // end, takes the exact copy.  The store may run past the block
            // into packed bytes that the next blocks overwrite (never past
            // this run's output).  The load may read past the block, but
            // only inside the block's own page, so it cannot fault; those
            // bytes never reach the output.
            over_copy<8>(base, off, len, n, o, pk + r.bytes);
            break;
        }
        if (PACK && r.minlen < 16) {  // mostly small blocks: the longer ones take copy_var
            over_copy<16>(base, off, len, n, o, pk + r.bytes);
            break;
        }
        if (r.maxlen <= 3) {  // 1-3 bytes: first, middle and last byte, no branches
            for (int64_t i = 0; i < n; ++i) {
                char *m = base + off[i];
                int64_t l = len[i];
                if (PACK) o[0] = m[0], o[l >> 1] = m[l >> 1], o[l - 1] = m[l - 1];
                else m[0] = o[0], m[l >> 1] = o[l >> 1], m[l - 1] = o[l - 1];
                o += l;
            }
            break;
        }
        if (r.minlen >= 4 && r.maxlen <= 8) {  // 4-8 bytes: two overlapping words
            for (int64_t i = 0; i < n; ++i) {
                char *m = base + off[i];
                int64_t l = len[i];
                uint32_t a, b;
                if (PACK) {
                    __builtin_memcpy(&a, m, 4), __builtin_memcpy(&b, m + l - 4, 4);
                    __builtin_memcpy(o, &a, 4), __builtin_memcpy(o + l - 4, &b, 4);
                } else {
                    __builtin_memcpy(&a, o, 4), __builtin_memcpy(&b, o + l - 4, 4);
                    __builtin_memcpy(m, &a, 4), __builtin_memcpy(m + l - 4, &b, 4);
                }
                o += l;
            }
            break;
        }
        if (r.minlen >= 8 && r.maxlen <= 16) {
            for (int64_t i = 0; i < n; ++i) {
                char *m = base + off[i];
                int64_t l = len[i];
                uint64_t a, b;
                if (PACK) {
                    __builtin_memcpy(&a, m, 8), __builtin_memcpy(&b, m + l - 8, 8);
                    __builtin_memcpy(o, &a, 8), __builtin_memcpy(o + l - 8, &b, 8);
                } else {
                    __builtin_memcpy(&a, o, 8), __builtin_memcpy(&b, o + l - 8, 8);
                    __builtin_memcpy(m, &a, 8), __builtin_memcpy(m + l - 8, &b, 8);
                }
                o += l;
            }
            break;
        }
        if (r.minlen >= 16) {  // 16-byte pieces, the last one overlapping
            for (int64_t i = 0; i < n; ++i) {
                char *m = base + off[i];
                int64_t l = len[i], k = 0;
                char t[16];
                for (; k + 16 < l; k += 16) {
                    if (PACK) __builtin_memcpy(t, m + k, 16), __builtin_memcpy(o + k, t, 16);
                    else __builtin_memcpy(t, o + k, 16), __builtin_memcpy(m + k, t, 16);
                }
                if (PACK) __builtin_memcpy(t, m + l - 16, 16), __builtin_memcpy(o + l - 16, t, 16);
                else __builtin_memcpy(t, o + l - 16, 16), __builtin_memcpy(m + l - 16, t, 16);
                o += l;
            }
            break;
        }
        for (int64_t i = 0; i < n; ++i) {
            if (PACK) copy_var(o, base + off[i], len[i]);
            else copy_var(base + off[i], o, len[i]);
            o += len[i];
        }
        break;
    }
    case 1: COLLX_LIST1(PACK)(base, off, pk, n); break;
    case 2: list_fixed<PACK, 2>(base, off, pk, n); break;
    case 4: list_fixed<PACK, 4>(base, off, pk, n); break;
    case 8: list_fixed<PACK, 8>(base, off, pk, n); break;
    case 16: list_fixed<PACK, 16>(base, off, pk, n); break;
    case 32: list_fixed<PACK, 32>(base, off, pk, n); break;
    case 64: list_fixed<PACK, 64>(base, off, pk, n); break;
    default: {
        int64_t L = r.ulen;
        for (int64_t i = 0; i < n; ++i) {
            if (PACK) copy_var(pk + i * L, base + off[i], L);
            else copy_var(base + off[i], pk + i * L, L);
        }
    }
    }
    return r.bytes;
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
        const Seg *segs = q.segs.data();
        size_t n = q.segs.size(), i = 0;
        if (q.plan) {
            for (const BlockRun &r : q.plan->runs) {
                for (; i < size_t(r.s0); ++i) full_one(segs[i], base, o);
                o += run_blocks<PACK>(*q.plan, r, base + segs[r.s0].disp, o);
                i = size_t(r.s1);
            }
        }
        for (; i < n; ++i) full_one(segs[i], base, o);
    }
    static inline void full_one(const Seg &s, char *base, char *&o) {
        if (!s.child && s.dims.empty()) {
            copy1(base + s.disp, o, s.len);
            o += s.len;
        } else {
            full_seg(s, 0, base + s.disp, o);
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
        if (d + 2 == s.dims.size() && !s.child) {  // 2-D strided leaf: one loop nest, no recursion per row
            int64_t c1 = s.dims[d + 1].count, st1 = s.dims[d + 1].stride, row = c1 * s.len;
            for (int64_t i = 0; i < c; ++i) blocks<PACK>(mem + i * st, st1, o + i * row, c1, s.len);
            o += c * row;
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
        const BlockRun *r = q.plan ? q.plan->runs.data() : nullptr;
        const BlockRun *rend = q.plan ? r + q.plan->runs.size() : nullptr;
        for (size_t i = 0; i < q.segs.size();) {
            if (pos >= end) return;
            if (r != rend && size_t(r->s0) == i) {
                // a block run: skipped or copied whole, else walked segment by segment
                int64_t n = r->bytes;
                if (pos + n <= begin || (pos >= begin && pos + n <= end)) {
                    if (pos >= begin) run_blocks<PACK>(*q.plan, *r, base + q.segs[i].disp, out + (pos - begin));
                    pos += n;
                    i = size_t(r->s1);
                    ++r;
                    continue;
                }
                ++r;
            }
            const Seg &s = q.segs[i++];
            int64_t n = s.bytes();
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
