// End-to-end test of the interposer's staged path on CPU: host memory
// registered with the "fake" device backend stands in for device memory, so
// Send/Recv, Isend/Irecv, Bcast, Reduce/Allreduce, Pack/Unpack on such
// buffers go through the same pipelined staging code as real device
// buffers.  Two ranks; prints PASS:/FAIL: lines (rank 0).
#include <mpi.h>

#include <cstdio>
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "collx/gpu_dtype.h"

static int rank, nfail;

static void verdict(const char *what, int ok) {
    int all = 0, mine = ok ? 0 : 1;
    PMPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) std::printf("%s: %s\n", all ? "FAIL" : "PASS", what);
    if (all) ++nfail;
}

// a device buffer (with the fake backend: host memory registered as device
// memory) and its host shadow v: push() after writing v, pull() before reading
struct DevBuf {
    std::vector<unsigned char> v;
    unsigned char *d;
    DevBuf(size_t n, unsigned char fill) : v(n, fill) {
        d = static_cast<unsigned char *>(collx_gpu_device_alloc(n));
        push();
    }
    ~DevBuf() { collx_gpu_device_free(d); }
    unsigned char *p() { return d; }
    void push() { collx_gpu_memcpy(d, v.data(), v.size()); }
    void pull() { collx_gpu_memcpy(v.data(), d, v.size()); }
};

static void pattern(std::vector<unsigned char> &v, unsigned seed) {
    for (size_t i = 0; i < v.size(); ++i) v[i] = (unsigned char)(seed + i * 29 + (i >> 7));
}

// expected receive buffer: the sender's type map bytes, unpacked (plain MPI,
// host memory) into a buffer with the receiver's initial fill
static std::vector<unsigned char> expected(MPI_Datatype st, int scount, unsigned seed, MPI_Datatype rt, int rcount,
                                           size_t rbytes, unsigned char fill) {
    std::vector<unsigned char> src(rbytes > 0 ? 0 : 0);
    MPI_Aint lb, e;
    MPI_Type_get_extent(st, &lb, &e);
    std::vector<unsigned char> sbuf(size_t(e) * scount + 64);
    pattern(sbuf, seed);
    int sz;
    PMPI_Pack_size(scount, st, MPI_COMM_SELF, &sz);
    std::vector<unsigned char> packed(sz + 1);
    int pos = 0;
    PMPI_Pack(sbuf.data(), scount, st, packed.data(), sz, &pos, MPI_COMM_SELF);
    std::vector<unsigned char> out(rbytes, fill);
    int q = 0;
    PMPI_Unpack(packed.data(), pos, &q, out.data(), rcount, rt, MPI_COMM_SELF);
    return out;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        if (!rank) std::printf("FAIL: needs 2 ranks\n");
        MPI_Finalize();
        return 1;
    }
    const char *be = getenv("COLLX_GPU_TEST_BACKEND") ? getenv("COLLX_GPU_TEST_BACKEND") : "fake";
    if (collx_gpu_set_backend(be)) {
        std::printf("FAIL: fake backend: %s\n", collx_gpu_last_error());
        return 1;
    }
    int peer = 1 - rank;

    // a strided type (blocks of 3 doubles every 5) and a struct with a gap
    MPI_Datatype vec, st, sub;
    MPI_Type_vector(1000, 3, 5, MPI_DOUBLE, &vec);
    MPI_Type_commit(&vec);
    int bl[3] = {1, 2, 3};
    MPI_Aint dp[3] = {0, 8, 20};
    MPI_Datatype ty[3] = {MPI_INT, MPI_SHORT, MPI_FLOAT};
    MPI_Type_create_struct(3, bl, dp, ty, &st);
    MPI_Type_commit(&st);
    int sizes[2] = {64, 64}, subs[2] = {40, 17}, starts[2] = {3, 5};
    MPI_Type_create_subarray(2, sizes, subs, starts, MPI_ORDER_C, MPI_INT, &sub);
    MPI_Type_commit(&sub);
    MPI_Aint lb, ext;

    // 1. blocking Send/Recv of a vector (24 KB packed: several chunks)
    {
        MPI_Type_get_extent(vec, &lb, &ext);
        int count = 2;
        size_t n = size_t(ext) * count;
        DevBuf b(n, 0xEE);
        int ok = 1;
        if (rank == 0) {
            pattern(b.v, 11);
            b.push();
            MPI_Send(b.p(), count, vec, peer, 7, MPI_COMM_WORLD);
        } else {
            MPI_Status s;
            MPI_Recv(b.p(), count, vec, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &s);
            int c = -1;
            MPI_Get_count(&s, vec, &c);
            b.pull();
            ok = s.MPI_SOURCE == 0 && s.MPI_TAG == 7 && c == count && b.v == expected(vec, count, 11, vec, count, n, 0xEE);
        }
        verdict("blocking Send/Recv, vector(1000,3,5,double) x2, multi-chunk, status and gaps untouched", ok);
    }
    // 2. simultaneous exchange with Isend/Irecv + Waitall (progress interleaving)
    {
        MPI_Type_get_extent(st, &lb, &ext);
        int count = 3000;
        size_t n = size_t(ext) * count;
        DevBuf s(n, 0), r(n, 0x11);
        pattern(s.v, 20 + rank);
        s.push();
        MPI_Request q[2];
        MPI_Irecv(r.p(), count, st, peer, 3, MPI_COMM_WORLD, &q[0]);
        MPI_Isend(s.p(), count, st, peer, 3, MPI_COMM_WORLD, &q[1]);
        MPI_Status ss[2];
        MPI_Waitall(2, q, ss);
        r.pull();
        int ok = r.v == expected(st, count, 20 + peer, st, count, n, 0x11);
        verdict("Isend/Irecv exchange, struct{int,short[2],float[3]} x3000, Waitall", ok);
    }
    // 3. several messages on one tag in flight: order kept; Wait and Test
    {
        MPI_Type_get_extent(sub, &lb, &ext);
        const int k = 3;
        std::vector<DevBuf *> bufs;
        MPI_Request q[k];
        for (int i = 0; i < k; ++i) {
            bufs.push_back(new DevBuf(size_t(ext), 0x22));
            if (rank == 0) {
                pattern(bufs[i]->v, 40 + i);
                bufs[i]->push();
                MPI_Isend(bufs[i]->p(), 1, sub, peer, 5, MPI_COMM_WORLD, &q[i]);
            } else {
                MPI_Irecv(bufs[i]->p(), 1, sub, peer, 5, MPI_COMM_WORLD, &q[i]);
            }
        }
        int ok = 1;
        MPI_Wait(&q[0], MPI_STATUS_IGNORE);
        for (int i = 1; i < k; ++i) {
            int flag = 0;
            while (!flag) MPI_Test(&q[i], &flag, MPI_STATUS_IGNORE);
        }
        if (rank == 1)
            for (int i = 0; i < k; ++i)
                bufs[i]->pull(), ok &= bufs[i]->v == expected(sub, 1, 40 + i, sub, 1, size_t(ext), 0x22);
        for (auto *b : bufs) delete b;
        verdict("3 Isend/Irecv of subarray(64x64 -> 40x17) on one tag: order, Wait + Test", ok);
    }
    // 4. device sender, host receiver of the same type map (small: one message)
    {
        MPI_Type_get_extent(st, &lb, &ext);
        int count = 10;
        size_t n = size_t(ext) * count;
        int ok = 1;
        if (rank == 0) {
            DevBuf b(n, 0);
            pattern(b.v, 60);
            b.push();
            MPI_Send(b.p(), count, st, peer, 9, MPI_COMM_WORLD);
        } else {
            std::vector<unsigned char> h(n, 0x33);
            MPI_Recv(h.data(), count, st, peer, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            ok = h == expected(st, count, 60, st, count, n, 0x33);
        }
        verdict("device -> host buffer (single-chunk message interoperates with plain MPI)", ok);
    }
    // 5. zero-count message and host buffers straight through
    {
        DevBuf b(16, 0x44);
        int hv[4] = {rank, rank, rank, rank}, hr[4] = {0, 0, 0, 0};
        MPI_Status s;
        MPI_Sendrecv(hv, 4, MPI_INT, peer, 1, hr, 4, MPI_INT, peer, 1, MPI_COMM_WORLD, &s);
        MPI_Request q;
        MPI_Irecv(b.p(), 0, vec, peer, 2, MPI_COMM_WORLD, &q);
        MPI_Send(b.p(), 0, vec, peer, 2, MPI_COMM_WORLD);
        MPI_Wait(&q, &s);
        b.pull();
        int c = -1;
        MPI_Get_count(&s, vec, &c);
        verdict("zero-count staged message; host buffers through PMPI", c == 0 && hr[0] == peer && b.v[0] == 0x44);
    }
    // 6. Bcast and Allreduce/Reduce on device buffers with derived types
    {
        MPI_Type_get_extent(vec, &lb, &ext);
        DevBuf b(size_t(ext), 0x55);
        if (rank == 1) pattern(b.v, 70), b.push();
        MPI_Bcast(b.p(), 1, vec, 1, MPI_COMM_WORLD);
        b.pull();
        int ok = rank == 1 || b.v == expected(vec, 1, 70, vec, 1, size_t(ext), 0x55);
        verdict("MPI_Bcast of vector(1000,3,5,double) from a device buffer to a device buffer", ok);

        // (Open MPI's predefined ops take predefined types only: doubles here,
        // the derived-type path is the one Bcast and point-to-point test)
        DevBuf s(1000 * sizeof(double), 0), r(1000 * sizeof(double), 0x66);
        double *sd = reinterpret_cast<double *>(s.v.data());
        for (int i = 0; i < 1000; ++i) sd[i] = i * (rank + 1);
        s.push();
        MPI_Allreduce(s.p(), r.p(), 500, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        r.pull();
        const double *rd = reinterpret_cast<const double *>(r.v.data());
        std::vector<unsigned char> gap(sizeof(double), 0x66);
        ok = 1;
        for (int i = 0; i < 1000; ++i) {
            if (i < 500) ok &= rd[i] == 3.0 * i;
            else ok &= !std::memcmp(&rd[i], gap.data(), sizeof(double));
        }
        verdict("MPI_Allreduce(SUM) of 500 doubles, device buffers; bytes past the count untouched", ok);
        MPI_Allreduce(MPI_IN_PLACE, s.p(), 1000, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        s.pull();
        ok = 1;
        for (int i = 0; i < 1000; ++i) ok &= sd[i] == 2.0 * i;
        verdict("MPI_Allreduce(MPI_IN_PLACE, MAX) on a device buffer", ok);
        for (int i = 0; i < 1000; ++i) sd[i] = i + rank;
        s.push();
        std::memset(r.v.data(), 0x66, r.v.size());
        r.push();
        MPI_Reduce(s.p(), r.p(), 1000, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        r.pull();
        ok = 1;
        if (rank == 0)
            for (int i = 0; i < 1000; ++i) ok &= rd[i] == 2.0 * i + 1;
        verdict("MPI_Reduce(SUM) to root 0, device buffers", ok);
    }
    // 7. MPI_Pack / MPI_Unpack with device buffers
    {
        MPI_Type_get_extent(sub, &lb, &ext);
        DevBuf b(size_t(ext), 0), out(size_t(ext), 0x77);
        pattern(b.v, 80);
        b.push();
        int sz;
        MPI_Pack_size(1, sub, MPI_COMM_WORLD, &sz);
        std::vector<unsigned char> pk(sz + 4), ref(sz + 4);
        int p1 = 4, p2 = 4;
        MPI_Pack(b.p(), 1, sub, pk.data(), sz + 4, &p1, MPI_COMM_WORLD);
        PMPI_Pack(b.v.data(), 1, sub, ref.data(), sz + 4, &p2, MPI_COMM_WORLD);
        int ok = p1 == p2 && !std::memcmp(pk.data() + 4, ref.data() + 4, size_t(p1 - 4));
        int q = 4;
        MPI_Unpack(pk.data(), p1, &q, out.p(), 1, sub, MPI_COMM_WORLD);
        out.pull();
        ok &= q == p1 && out.v == expected(sub, 1, 80, sub, 1, size_t(ext), 0x77);
        verdict("MPI_Pack/MPI_Unpack with a device buffer, position semantics", ok);
    }
    // 8. bad input: an uncommitted type on a device buffer is an MPI error, not a crash
    {
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        MPI_Datatype u;
        MPI_Type_vector(2, 1, 2, MPI_INT, &u);
        DevBuf b(64, 0);
        int sz = 0, pos = 0;
        std::vector<unsigned char> pk(64);
        int rc = MPI_Pack(b.p(), 1, u, pk.data(), 64, &pos, MPI_COMM_WORLD);
        (void)sz;
        MPI_Type_free(&u);
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
        verdict("uncommitted datatype on a device buffer: MPI error returned", rc != MPI_SUCCESS);
    }
    // 9. every pairing of host/device sender and receiver, for sizes around
    // the chunk size C (COLLX_GPU_CHUNK_BYTES): 0, < C, exactly C, several
    // C, not a multiple of C; the receive posted for exactly the message and
    // for more (status count, bytes past the message untouched)
    {
        int64_t C = 1 << 20;
        if (const char *e = getenv("COLLX_GPU_CHUNK_BYTES")) C = std::max<int64_t>(64, std::atoll(e)) & ~int64_t(15);
        // element: short at 0, char at 3, char at 5, extent 8: 4 packed bytes
        MPI_Datatype e0, el;
        int ebl[3] = {1, 1, 1};
        MPI_Aint edp[3] = {0, 3, 5};
        MPI_Datatype ety[3] = {MPI_SHORT, MPI_CHAR, MPI_CHAR};
        MPI_Type_create_struct(3, ebl, edp, ety, &e0);
        MPI_Type_create_resized(e0, 0, 8, &el);
        MPI_Type_commit(&el);
        MPI_Type_free(&e0);
        const int64_t bytes[5] = {0, C / 2 + 4, C, 3 * C, 2 * C + C / 4 + 4};
        const char *sname[5] = {"0 B", "< 1 chunk", "1 chunk", "3 chunks", "2.25 chunks + 4 B"};
        const char *pname[3] = {"host -> device", "device -> host", "device -> device"};
        for (int pair = 0; pair < 3; ++pair)
            for (int k = 0; k < 5; ++k) {
                int ok = 1;
                for (int extra : {0, 3}) {
                    int scount = int(bytes[k] / 4), rcount = scount + extra;
                    bool sdev = pair != 0, rdev = pair != 1;
                    unsigned seed = unsigned(100 + 10 * pair + k + extra);
                    int tag = 20 + pair * 10 + k;
                    if (rank == 0) {
                        size_t n = size_t(scount) * 8 + 8;
                        DevBuf d(n, 0);
                        pattern(d.v, seed);
                        d.push();
                        MPI_Send(sdev ? (void *)d.p() : (void *)d.v.data(), scount, el, peer, tag, MPI_COMM_WORLD);
                    } else {
                        size_t n = size_t(rcount) * 8 + 8;
                        DevBuf d(n, 0x5A);
                        MPI_Status s;
                        MPI_Recv(rdev ? (void *)d.p() : (void *)d.v.data(), rcount, el, peer, tag, MPI_COMM_WORLD, &s);
                        if (rdev) d.pull();
                        int c = -1;
                        MPI_Get_count(&s, el, &c);
                        ok &= c == scount && s.MPI_SOURCE == peer && s.MPI_TAG == tag;
                        ok &= d.v == expected(el, scount, seed, el, scount, n, 0x5A);
                    }
                }
                std::string what = std::string("staged pairing ") + pname[pair] + ", " + sname[k] + " (" +
                                   std::to_string(bytes[k]) + " B, chunk " + std::to_string(C) +
                                   "), receive posted for exactly it and for 12 B more";
                verdict(what.c_str(), ok);
            }
        // a message longer than the device receive buffer: MPI_ERR_TRUNCATE, not a hang or a crash
        {
            int scount = int((2 * C + 8) / 4), rcount = int(C / 4);
            int ok = 1;
            if (rank == 0) {
                std::vector<unsigned char> h(size_t(scount) * 8, 1);
                MPI_Send(h.data(), scount, el, peer, 90, MPI_COMM_WORLD);
            } else {
                MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
                DevBuf d(size_t(rcount) * 8, 0);
                MPI_Status s;
                int rc = MPI_Recv(d.p(), rcount, el, peer, 90, MPI_COMM_WORLD, &s);
                int cls = MPI_SUCCESS;
                MPI_Error_class(rc, &cls);
                ok = cls == MPI_ERR_TRUNCATE;
                MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
            }
            verdict("host sender of 2 chunks + 8 B into a 1-chunk device receive: MPI_ERR_TRUNCATE", ok);
        }
        // no tags are reserved: a tag at MPI_TAG_UB works on the staged path
        {
            void *v;
            int flag;
            MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &v, &flag);
            int tag = flag ? *static_cast<int *>(v) : 32767;
            int count = int((C + C / 2) / 4);
            DevBuf d(size_t(count) * 8 + 8, 0x3C);
            int ok = 1;
            if (rank == 0) {
                pattern(d.v, 77);
                d.push();
                MPI_Send(d.p(), count, el, peer, tag, MPI_COMM_WORLD);
            } else {
                MPI_Status s;
                MPI_Recv(d.p(), count, el, peer, MPI_ANY_TAG, MPI_COMM_WORLD, &s);
                d.pull();
                ok = s.MPI_TAG == tag && d.v == expected(el, count, 77, el, count, d.v.size(), 0x3C);
            }
            verdict(("device -> device with tag MPI_TAG_UB = " + std::to_string(tag) + ", 1.5 chunks").c_str(), ok);
        }
        MPI_Type_free(&el);
    }
    MPI_Type_free(&vec);
    MPI_Type_free(&st);
    MPI_Type_free(&sub);
    if (rank == 0) std::printf("%d check(s) failed\n", nfail);
    MPI_Finalize();
    return nfail ? 1 : 0;
}
