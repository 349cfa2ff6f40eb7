// MPI datatype -> canonical form (see canonical.hpp), simplifier and cache.
#include "canonical.hpp"
#include "collx/gpu_dtype.h"

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstddef>
#include <mutex>
#include <sstream>
#include <unordered_map>

namespace collx_gpu {

static thread_local std::string tl_error;
void set_error(const std::string &msg) { tl_error = msg; }
const std::string &last_error() { return tl_error; }

int64_t Seg::body() const { return child ? child->size : len; }

static bool same_body(const Seg &a, const Seg &b) {
    if (a.len != b.len) return false;
    if (!a.child || !b.child) return !a.child && !b.child;
    return a.child == b.child || same_seq(*a.child, *b.child);
}
bool same_shape(const Seg &a, const Seg &b) { return a.dims == b.dims && same_body(a, b); }
bool same_seq(const Seq &a, const Seq &b) {
    if (a.size != b.size || a.segs.size() != b.segs.size()) return false;
    for (size_t i = 0; i < a.segs.size(); ++i)
        if (a.segs[i].disp != b.segs[i].disp || !same_shape(a.segs[i], b.segs[i])) return false;
    return true;
}

// Simplify one segment in place; false if it holds no bytes.
static bool normalize(Seg &s) {
    for (auto &d : s.dims) if (d.count <= 0) return false;
    if (!s.child && s.len <= 0) return false;
    if (s.child && s.child->segs.empty()) return false;
    // a child of one segment is inlined: its dims become our inner dims
    while (s.child && s.child->segs.size() == 1) {
        SeqP keep = s.child;
        const Seg &c = keep->segs[0];
        s.disp += c.disp;
        s.dims.insert(s.dims.end(), c.dims.begin(), c.dims.end());
        s.len = c.len;
        s.child = c.child;
    }
    if (s.child) s.len = 0;
    for (bool changed = true; changed;) {
        changed = false;
        size_t before = s.dims.size();
        s.dims.erase(std::remove_if(s.dims.begin(), s.dims.end(), [](const Dim &d) { return d.count == 1; }),
                     s.dims.end());
        if (s.dims.size() != before) changed = true;
        // dense stream: the innermost dim steps by exactly one block
        if (!s.child && !s.dims.empty() && s.dims.back().stride == s.len) {
            s.len *= s.dims.back().count;
            s.dims.pop_back();
            changed = true;
            continue;
        }
        // two dims that form one arithmetic progression
        for (size_t k = 0; k + 1 < s.dims.size(); ++k) {
            if (s.dims[k].stride == s.dims[k + 1].count * s.dims[k + 1].stride) {
                s.dims[k] = Dim{s.dims[k].count * s.dims[k + 1].count, s.dims[k + 1].stride};
                s.dims.erase(s.dims.begin() + k + 1);
                changed = true;
                break;
            }
        }
    }
    s.nblocks = 1;
    s.pk.assign(s.dims.size(), 0);
    int64_t step = s.body();
    for (size_t k = s.dims.size(); k-- > 0;) {
        s.pk[k] = step;
        step *= s.dims[k].count;
    }
    for (auto &d : s.dims) s.nblocks *= d.count;
    return true;
}

// rest(a) (a without its outer dim) has the shape of b
static bool rest_is(const Seg &a, const Seg &b) {
    if (a.dims.size() != b.dims.size() + 1) return false;
    if (!std::equal(a.dims.begin() + 1, a.dims.end(), b.dims.begin())) return false;
    return same_body(a, b);
}

// Merge b (next in type-map order) into a when together they are one segment.
static bool try_merge(Seg &a, const Seg &b) {
    if (!a.child && !b.child && a.dims.empty() && b.dims.empty() && b.disp == a.disp + a.len) {
        a.len += b.len;
        return true;
    }
    if (!a.dims.empty() && rest_is(a, b) && b.disp == a.disp + a.dims[0].count * a.dims[0].stride) {
        a.dims[0].count += 1;
        return true;
    }
    if (!a.dims.empty() && !b.dims.empty() && a.dims.size() == b.dims.size() &&
        a.dims[0].stride == b.dims[0].stride && std::equal(a.dims.begin() + 1, a.dims.end(), b.dims.begin() + 1) &&
        same_body(a, b) && b.disp == a.disp + a.dims[0].count * a.dims[0].stride) {
        a.dims[0].count += b.dims[0].count;
        return true;
    }
    if (!b.dims.empty() && rest_is(b, a) && b.disp == a.disp + b.dims[0].stride) {
        int64_t d = a.disp;
        a = b;
        a.disp = d;
        a.dims[0].count += 1;
        return true;
    }
    if (same_shape(a, b)) {
        a.dims.insert(a.dims.begin(), Dim{2, b.disp - a.disp});
        return true;
    }
    return false;
}

namespace {
struct Builder {
    std::vector<Seg> v;
    void push(Seg s) {
        if (!normalize(s)) return;
        if (!v.empty() && try_merge(v.back(), s)) {
            normalize(v.back());
            while (v.size() >= 2 && try_merge(v[v.size() - 2], v.back())) {
                v.pop_back();
                normalize(v.back());
            }
            return;
        }
        v.push_back(std::move(s));
    }
    SeqP finish();
};
} // namespace

// Runs of at least kMinRun small leaf segments become BlockRuns (see
// canonical.hpp).  A run holds at most kMaxRun segments so that a byte
// range starting inside one is found quickly.
static void build_plan(Seq &q) {
    constexpr size_t kMinRun = 8, kMaxRun = 4096;
    constexpr int64_t kMaxExpand = 16;  // a strided leaf of up to 16 blocks is listed block by block
    auto small = [](const Seg &s) { return !s.child && s.len <= INT32_MAX && s.nblocks <= kMaxExpand; };
    if (q.segs.size() < kMinRun) return;
    auto p = std::make_shared<BlockPlan>();
    std::vector<int64_t> offs;
    size_t i = 0, n = q.segs.size();
    while (i < n) {
        if (!small(q.segs[i])) {
            ++i;
            continue;
        }
        BlockRun r{int64_t(i), int64_t(i), int64_t(p->off.size()), 0, 0, -1, INT32_MAX, 0};
        int64_t d0 = q.segs[i].disp;
        size_t j = i;
        for (; j < n && j - i < kMaxRun && small(q.segs[j]); ++j) {
            const Seg &s = q.segs[j];
            // the seg's block offsets in type-map order (odometer over its dims)
            offs.assign(1, s.disp - d0);
            for (const Dim &d : s.dims) {
                size_t m = offs.size();
                offs.resize(m * size_t(d.count));
                for (size_t a = m; a-- > 0;)
                    for (int64_t k = d.count; k-- > 0;) offs[a * size_t(d.count) + size_t(k)] = offs[a] + k * d.stride;
            }
            bool fits = true;
            for (int64_t o : offs) fits &= o >= INT32_MIN && o <= INT32_MAX;
            if (!fits) break;
            for (int64_t o : offs) {
                p->off.push_back(int32_t(o));
                p->len.push_back(int32_t(s.len));
            }
            r.ulen = r.ulen == -1 || r.ulen == s.len ? int32_t(s.len) : 0;
            r.minlen = std::min(r.minlen, int32_t(s.len));
            r.maxlen = std::max(r.maxlen, int32_t(s.len));
            r.bytes += s.bytes();
        }
        if (j - i < kMinRun) {  // too short: leave these segments to the generic walk
            p->off.resize(size_t(r.b0));
            p->len.resize(size_t(r.b0));
            i = j == i ? i + 1 : j;
            continue;
        }
        r.s1 = int64_t(j);
        r.n = int64_t(p->off.size()) - r.b0;
        if (r.ulen < 0) r.ulen = 0;
        p->runs.push_back(r);
        i = j;
    }
    if (p->runs.empty()) return;
    bool all_uniform = true;
    for (auto &r : p->runs) all_uniform &= r.ulen > 0;
    if (all_uniform) p->len.clear();
    p->off.shrink_to_fit();
    p->len.shrink_to_fit();
    q.plan = std::move(p);
}

static SeqP seq_of(std::vector<Seg> v) {
    auto q = std::make_shared<Seq>();
    q->segs = std::move(v);
    for (auto &s : q->segs) {
        q->size += s.bytes();
        if (s.child) q->depth = std::max(q->depth, s.child->depth + 1);
    }
    build_plan(*q);
    return q;
}

// A block list that is k/p repetitions of its first p segments at a constant
// shift becomes one segment over a child sequence.
static void fold_period(std::vector<Seg> &v) {
    size_t k = v.size();
    for (size_t p = 2; p <= k / 2; ++p) {
        if (k % p) continue;
        int64_t delta = v[p].disp - v[0].disp;
        bool ok = true;
        for (size_t i = 0; ok && i + p < k; ++i)
            ok = v[i + p].disp - v[i].disp == delta && same_shape(v[i], v[i + p]);
        if (!ok) continue;
        std::vector<Seg> body(v.begin(), v.begin() + p);
        int64_t d0 = body[0].disp;
        for (auto &s : body) s.disp -= d0;
        Seg s;
        s.disp = d0;
        s.dims = {Dim{int64_t(k / p), delta}};
        s.child = seq_of(std::move(body));
        normalize(s);
        v.assign(1, std::move(s));
        return;
    }
}

SeqP Builder::finish() {
    fold_period(v);
    return seq_of(std::move(v));
}

SeqP make_leaf(int64_t disp, int64_t len) {
    Builder b;
    Seg s;
    s.disp = disp;
    s.len = len;
    b.push(s);
    return b.finish();
}

SeqP shift(const SeqP &t, int64_t delta) {
    if (delta == 0) return t;
    auto q = std::make_shared<Seq>(*t);
    for (auto &s : q->segs) s.disp += delta;
    return q;
}

SeqP repeat(const SeqP &t, int64_t n, int64_t stride) {
    if (n <= 0 || t->segs.empty()) return seq_of({});
    if (n == 1) return t;
    Builder b;
    if (t->segs.size() == 1) {
        Seg s = t->segs[0];
        s.dims.insert(s.dims.begin(), Dim{n, stride});
        b.push(std::move(s));
    } else if (n * int64_t(t->segs.size()) <= 64) {
        for (int64_t i = 0; i < n; ++i)
            for (const auto &seg : t->segs) {
                Seg s = seg;
                s.disp += i * stride;
                b.push(std::move(s));
            }
    } else {
        Seg s;
        s.disp = t->segs[0].disp;
        s.dims = {Dim{n, stride}};
        s.child = shift(t, -s.disp);
        b.push(std::move(s));
    }
    return b.finish();
}

SeqP concat(const std::vector<SeqP> &parts) {
    Builder b;
    for (const auto &p : parts)
        for (const auto &s : p->segs) b.push(s);
    return b.finish();
}

// ------------------------------------------------------------ description
static void describe_seq(const Seq &q, std::ostringstream &o) {
    o << "[";
    for (size_t i = 0; i < q.segs.size(); ++i) {
        const Seg &s = q.segs[i];
        if (i) o << " ";
        o << "@" << s.disp;
        for (auto &d : s.dims) o << " " << d.count << "x" << d.stride;
        if (s.child) {
            o << " ";
            describe_seq(*s.child, o);
        } else {
            o << " b" << s.len;
        }
    }
    o << "]";
}

std::string Form::describe() const {
    std::ostringstream o;
    o << "size " << size << " extent " << extent << " lb " << lb << " ";
    describe_seq(*root, o);
    return o.str();
}

// ------------------------------------------------------------ flattening
static bool flatten(const Seq &q, int64_t src, int64_t pk, std::vector<Dim> &dims, std::vector<int64_t> &pst,
                    std::vector<FlatItem> &out) {
    int64_t pos = 0;
    for (const Seg &s : q.segs) {
        size_t n0 = dims.size();
        for (size_t k = 0; k < s.dims.size(); ++k) {
            dims.push_back(s.dims[k]);
            pst.push_back(s.pk[k]);
        }
        bool ok = true;
        if (s.child) {
            ok = flatten(*s.child, src + s.disp, pk + pos, dims, pst, out);
        } else if (dims.size() > size_t(kMaxFlatDims)) {
            ok = false;
        } else {
            FlatItem it{};
            it.src = src + s.disp;
            it.pk = pk + pos;
            it.len = s.len;
            it.nd = int(dims.size());
            for (int d = 0; d < it.nd; ++d) {
                it.count[d] = dims[d].count;
                it.sstride[d] = dims[d].stride;
                it.pstride[d] = pst[d];
            }
            out.push_back(it);
        }
        dims.resize(n0);
        pst.resize(n0);
        if (!ok) return false;
        pos += s.bytes();
    }
    return true;
}

FormP form_from_seq(SeqP root, int64_t lb, int64_t extent) {
    auto f = std::make_shared<Form>();
    f->root = root;
    f->size = root->size;
    f->lb = lb;
    f->extent = extent;
    f->contiguous = root->segs.size() == 1 && !root->segs[0].child && root->segs[0].dims.empty() &&
                    root->segs[0].len == extent;
    std::vector<Dim> dims;
    std::vector<int64_t> pst;
    f->flat_ok = flatten(*root, 0, 0, dims, pst, f->flat);
    if (!f->flat_ok) f->flat.clear();
    uint64_t bits = uint64_t(extent) | uint64_t(f->size);
    for (const auto &it : f->flat) {
        bits |= uint64_t(it.src) | uint64_t(it.pk) | uint64_t(it.len);
        for (int d = 0; d < it.nd; ++d) bits |= uint64_t(it.sstride[d]) | uint64_t(it.pstride[d]);
    }
    f->align = 16;
    while (f->align > 1 && (bits & uint64_t(f->align - 1))) f->align >>= 1;
    if (!f->flat_ok) f->align = 1;
    static std::atomic<uint64_t> next_id{1};
    f->desc.id = next_id++;
    f->desc.items = f->flat_ok ? f->flat.data() : nullptr;
    f->desc.nitems = int32_t(f->flat.size());
    f->desc.align = int32_t(f->align);
    f->desc.size = f->size;
    f->desc.extent = f->extent;
    f->desc.form = f.get();
    return f;
}

// ------------------------------------------------------------ MPI walk
namespace {
struct TypeList {  // frees the derived handles get_contents returned
    std::vector<MPI_Datatype> t;
    ~TypeList() {
        for (auto &x : t) {
            int ni, na, nd, c;
            if (MPI_Type_get_envelope(x, &ni, &na, &nd, &c) == MPI_SUCCESS && c != MPI_COMBINER_NAMED)
                MPI_Type_free(&x);
        }
    }
};
} // namespace

static int named_form(MPI_Datatype t, SeqP &out) {
    MPI_Count size;
    MPI_Aint lb, ext;
    MPI_Type_size_x(t, &size);
    MPI_Type_get_extent(t, &lb, &ext);
    if (lb == 0 && size == ext) {
        out = make_leaf(0, size);
        return COLLX_GPU_SUCCESS;
    }
    // the value-index pairs have a gap between the value and the int
    struct { float a; int b; } fi;
    struct { double a; int b; } di;
    struct { long a; int b; } li;
    struct { short a; int b; } si;
    struct { long double a; int b; } ldi;
    (void)fi; (void)di; (void)li; (void)si; (void)ldi;
    int64_t first = -1, second = -1;
    if (t == MPI_FLOAT_INT) first = sizeof(float), second = offsetof(decltype(fi), b);
    else if (t == MPI_DOUBLE_INT) first = sizeof(double), second = offsetof(decltype(di), b);
    else if (t == MPI_LONG_INT) first = sizeof(long), second = offsetof(decltype(li), b);
    else if (t == MPI_SHORT_INT) first = sizeof(short), second = offsetof(decltype(si), b);
    else if (t == MPI_LONG_DOUBLE_INT) first = sizeof(long double), second = offsetof(decltype(ldi), b);
    if (first < 0 || first + int64_t(sizeof(int)) != size) {
        char name[MPI_MAX_OBJECT_NAME] = "?";
        int nl;
        MPI_Type_get_name(t, name, &nl);
        set_error(std::string("collx_gpu: unsupported predefined datatype ") + name +
                  " (size differs from extent, layout unknown)");
        return COLLX_GPU_ERR_UNSUPPORTED;
    }
    out = concat({make_leaf(0, first), make_leaf(second, sizeof(int))});
    return COLLX_GPU_SUCCESS;
}

static int walk(MPI_Datatype t, SeqP &out, int depth);

static int child_of(MPI_Datatype t, SeqP &seq, int64_t &ext, int depth) {
    MPI_Aint lb, e;
    if (MPI_Type_get_extent(t, &lb, &e) != MPI_SUCCESS) {
        set_error("collx_gpu: MPI_Type_get_extent failed on a component type");
        return COLLX_GPU_ERR_MPI;
    }
    ext = e;
    return walk(t, seq, depth + 1);
}

static int walk(MPI_Datatype t, SeqP &out, int depth) {
    if (depth > 64) {
        set_error("collx_gpu: datatype nesting deeper than 64 levels");
        return COLLX_GPU_ERR_UNSUPPORTED;
    }
    int ni, na, nd, comb;
    if (MPI_Type_get_envelope(t, &ni, &na, &nd, &comb) != MPI_SUCCESS) {
        set_error("collx_gpu: MPI_Type_get_envelope failed (invalid datatype?)");
        return COLLX_GPU_ERR_MPI;
    }
    if (comb == MPI_COMBINER_NAMED) return named_form(t, out);
    std::vector<int> I(std::max(ni, 1));
    std::vector<MPI_Aint> A(std::max(na, 1));
    TypeList T;
    T.t.resize(std::max(nd, 1), MPI_DATATYPE_NULL);
    if (MPI_Type_get_contents(t, ni, na, nd, I.data(), A.data(), T.t.data()) != MPI_SUCCESS) {
        set_error("collx_gpu: MPI_Type_get_contents failed");
        return COLLX_GPU_ERR_MPI;
    }
    T.t.resize(nd);
    SeqP c;
    int64_t ext = 0;
    int rc;
    auto first_child = [&]() { return child_of(T.t[0], c, ext, depth); };
    switch (comb) {
    case MPI_COMBINER_DUP:
    case MPI_COMBINER_RESIZED:
        if ((rc = first_child())) return rc;
        out = c;
        return 0;
    case MPI_COMBINER_CONTIGUOUS:
        if ((rc = first_child())) return rc;
        out = repeat(c, I[0], ext);
        return 0;
    case MPI_COMBINER_VECTOR:
        if ((rc = first_child())) return rc;
        out = repeat(repeat(c, I[1], ext), I[0], int64_t(I[2]) * ext);
        return 0;
    case MPI_COMBINER_HVECTOR:
        if ((rc = first_child())) return rc;
        out = repeat(repeat(c, I[1], ext), I[0], A[0]);
        return 0;
    case MPI_COMBINER_INDEXED:
    case MPI_COMBINER_HINDEXED:
    case MPI_COMBINER_INDEXED_BLOCK:
    case MPI_COMBINER_HINDEXED_BLOCK: {
        if ((rc = first_child())) return rc;
        int n = I[0];
        std::vector<SeqP> parts;
        parts.reserve(n);
        for (int i = 0; i < n; ++i) {
            int64_t bl, d;
            switch (comb) {
            case MPI_COMBINER_INDEXED: bl = I[1 + i]; d = int64_t(I[1 + n + i]) * ext; break;
            case MPI_COMBINER_INDEXED_BLOCK: bl = I[1]; d = int64_t(I[2 + i]) * ext; break;
            case MPI_COMBINER_HINDEXED_BLOCK: bl = I[1]; d = A[i]; break;
            default: bl = I[1 + i]; d = A[i]; break;
            }
            parts.push_back(shift(repeat(c, bl, ext), d));
        }
        out = concat(parts);
        return 0;
    }
    case MPI_COMBINER_STRUCT:
    {
        int n = I[0];
        std::vector<SeqP> parts;
        for (int i = 0; i < n; ++i) {
            if ((rc = child_of(T.t[i], c, ext, depth))) return rc;
            parts.push_back(shift(repeat(c, I[1 + i], ext), A[i]));
        }
        out = concat(parts);
        return 0;
    }
    case MPI_COMBINER_SUBARRAY: {
        if ((rc = first_child())) return rc;
        int n = I[0];
        const int *sizes = &I[1], *sub = &I[1 + n], *starts = &I[1 + 2 * n];
        bool corder = I[1 + 3 * n] == MPI_ORDER_C;
        std::vector<int64_t> st(n);
        int64_t acc = ext;
        for (int k = 0; k < n; ++k) {  // fastest dim first
            int d = corder ? n - 1 - k : k;
            st[d] = acc;
            acc *= sizes[d];
        }
        SeqP cur = c;
        int64_t off = 0;
        for (int k = 0; k < n; ++k) {
            int d = corder ? n - 1 - k : k;
            cur = repeat(cur, sub[d], st[d]);
            off += int64_t(starts[d]) * st[d];
        }
        out = shift(cur, off);
        return 0;
    }
    case MPI_COMBINER_DARRAY: {
        if ((rc = first_child())) return rc;
        int size = I[0], rank = I[1], n = I[2];
        const int *gs = &I[3], *dist = &I[3 + n], *darg = &I[3 + 2 * n], *ps = &I[3 + 3 * n];
        bool corder = I[3 + 4 * n] == MPI_ORDER_C;
        (void)size;
        std::vector<int> coord(n);
        int r = rank;
        for (int d = n - 1; d >= 0; --d) {  // process grid is row-major
            coord[d] = r % ps[d];
            r /= ps[d];
        }
        std::vector<int64_t> st(n);
        int64_t acc = ext;
        for (int k = 0; k < n; ++k) {
            int d = corder ? n - 1 - k : k;
            st[d] = acc;
            acc *= gs[d];
        }
        SeqP cur = c;
        for (int k = 0; k < n; ++k) {
            int d = corder ? n - 1 - k : k;
            std::vector<SeqP> runs;
            int64_t g = gs[d];
            if (dist[d] == MPI_DISTRIBUTE_NONE) {
                runs.push_back(repeat(cur, g, st[d]));
            } else if (dist[d] == MPI_DISTRIBUTE_BLOCK) {
                int64_t b = darg[d] == MPI_DISTRIBUTE_DFLT_DARG ? (g + ps[d] - 1) / ps[d] : darg[d];
                int64_t lo = coord[d] * b, hi = std::min(g, lo + b);
                if (hi > lo) runs.push_back(shift(repeat(cur, hi - lo, st[d]), lo * st[d]));
            } else if (dist[d] == MPI_DISTRIBUTE_CYCLIC) {
                int64_t b = darg[d] == MPI_DISTRIBUTE_DFLT_DARG ? 1 : darg[d];
                for (int64_t lo = coord[d] * b; lo < g; lo += b * ps[d])
                    runs.push_back(shift(repeat(cur, std::min(b, g - lo), st[d]), lo * st[d]));
            } else {
                set_error("collx_gpu: darray with an unknown distribution");
                return COLLX_GPU_ERR_UNSUPPORTED;
            }
            cur = concat(runs);
        }
        out = cur;
        return 0;
    }
    default: {
        std::ostringstream o;
        o << "collx_gpu: unsupported datatype combiner " << comb
          << " (Fortran F90 parameterised types are not handled)";
        set_error(o.str());
        return COLLX_GPU_ERR_UNSUPPORTED;
    }
    }
}

// Open MPI's MPI_Pack refuses uncommitted types; a 0-count pack on a private
// communicator with MPI_ERRORS_RETURN tells without side effects.
static MPI_Comm probe_comm() {
    static MPI_Comm c = MPI_COMM_NULL;
    static std::once_flag once;
    std::call_once(once, [] {
        PMPI_Comm_dup(MPI_COMM_SELF, &c);
        PMPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    });
    return c;
}

static bool is_committed(MPI_Datatype t) {
    char dummy[1];
    int pos = 0;
    return PMPI_Pack(dummy, 0, t, dummy, 0, &pos, probe_comm()) == MPI_SUCCESS;
}

int build_form(MPI_Datatype type, FormP &out) {
    int init = 0, fin = 0;
    MPI_Initialized(&init);
    MPI_Finalized(&fin);
    if (!init || fin) {
        set_error("collx_gpu: MPI is not initialised");
        return COLLX_GPU_ERR_MPI;
    }
    if (type == MPI_DATATYPE_NULL) {
        set_error("collx_gpu: MPI_DATATYPE_NULL");
        return COLLX_GPU_ERR_ARG;
    }
    if (!is_committed(type)) {
        set_error("collx_gpu: datatype is not committed (call MPI_Type_commit first)");
        return COLLX_GPU_ERR_UNCOMMITTED;
    }
    SeqP root;
    int rc = walk(type, root, 0);
    if (rc) return rc;
    MPI_Aint lb, ext;
    MPI_Count size;
    MPI_Type_get_extent(type, &lb, &ext);
    MPI_Type_size_x(type, &size);
    if (root->size != size) {
        std::ostringstream o;
        o << "collx_gpu: internal error: canonical size " << root->size << " differs from MPI_Type_size "
          << size;
        set_error(o.str());
        return COLLX_GPU_ERR_UNSUPPORTED;
    }
    auto f = form_from_seq(root, lb, ext);
    MPI_Aint tlb, text;
    MPI_Type_get_true_extent(type, &tlb, &text);
    const_cast<Form &>(*f).true_lb = tlb;
    const_cast<Form &>(*f).true_extent = text;
    out = f;
    return COLLX_GPU_SUCCESS;
}

// ------------------------------------------------------------ cache
namespace {
std::mutex cache_mu;
std::unordered_map<MPI_Datatype, FormP> cache;
int keyval = MPI_KEYVAL_INVALID;

int on_type_free(MPI_Datatype t, int, void *, void *) {
    std::lock_guard<std::mutex> g(cache_mu);
    cache.erase(t);
    return MPI_SUCCESS;
}
} // namespace

int get_form(MPI_Datatype type, FormP &out) {
    {
        std::lock_guard<std::mutex> g(cache_mu);
        auto it = cache.find(type);
        if (it != cache.end()) {
            out = it->second;
            return COLLX_GPU_SUCCESS;
        }
    }
    int rc = build_form(type, out);
    if (rc) return rc;
    int ni, na, nd, comb;
    MPI_Type_get_envelope(type, &ni, &na, &nd, &comb);
    if (comb != MPI_COMBINER_NAMED) {
        // (re)setting the attribute may run on_type_free: no lock held here
        static std::once_flag once;
        std::call_once(once, [] { MPI_Type_create_keyval(MPI_TYPE_NULL_COPY_FN, on_type_free, &keyval, nullptr); });
        MPI_Type_set_attr(type, keyval, nullptr);
    }
    std::lock_guard<std::mutex> g(cache_mu);
    cache[type] = out;
    return COLLX_GPU_SUCCESS;
}

int forget_form(MPI_Datatype type) {
    std::lock_guard<std::mutex> g(cache_mu);
    cache.erase(type);
    return COLLX_GPU_SUCCESS;
}

} // namespace collx_gpu
