// Device backend against the CPU backend on random nested datatypes: pack
// from device memory (to host and to device), unpack into device memory,
// byte ranges (what the staging pipeline moves); then a throughput line.
//   gpu_vs_cpu [cuda|fake] [types]      (fake: CPU dry run of this program)
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "canonical.hpp"
#include "collx/gpu_dtype.h"
#include "testing/random_types.hpp"

using namespace collx_gpu_testing;

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    const char *be = argc > 1 ? argv[1] : "cuda";
    int ntypes = argc > 2 ? std::atoi(argv[2]) : 3000;
    uint64_t seed = getenv("COLLX_GPU_TEST_SEED") ? strtoull(getenv("COLLX_GPU_TEST_SEED"), 0, 0) : 4242;
    if (collx_gpu_set_backend(be)) {
        std::printf("FAIL: backend %s: %s\n", be, collx_gpu_last_error());
        return 1;
    }
    RandomTypes R(seed);
    int bad = 0, cases = 0;
    std::string first;
    auto fail = [&](const std::string &w) { if (!bad++) first = w + " [" + R.last + "]"; };
    for (int it = 0; it < ntypes; ++it) {
        MPI_Datatype t = R.make(4);
        const collx_gpu_dtype_t *f;
        if (collx_gpu_dtype_get(t, &f)) { fail(collx_gpu_last_error()); continue; }
        int count = R.r(0, 5);
        int64_t lo, hi;
        span_of(t, count, lo, hi);
        size_t span = size_t(hi - lo) + 128;
        int64_t off = 64 - lo, n = count * collx_gpu_dtype_size(f);
        std::vector<unsigned char> h(span), hp(size_t(n) + 1), dp(size_t(n) + 1, 0), back(span);
        for (size_t i = 0; i < span; ++i) h[i] = (unsigned char)(i * 31 + it);
        unsigned char *d = static_cast<unsigned char *>(collx_gpu_device_alloc(span));
        unsigned char *dpk = static_cast<unsigned char *>(collx_gpu_device_alloc(size_t(n) + 1));
        collx_gpu_memcpy(d, h.data(), span);
        ++cases;
        // pack device -> host, compared with the CPU pack of the host copy
        collx_gpu_pack_range_cpu(f, h.data() + off, count, 0, n, hp.data());
        int64_t pos = 0;
        if (collx_gpu_pack(d + off, count, t, dp.data(), n, &pos) || pos != n) fail(std::string("pack: ") + collx_gpu_last_error());
        else if (std::memcmp(hp.data(), dp.data(), size_t(n))) fail("device pack to host differs");
        // pack device -> device
        pos = 0;
        std::vector<unsigned char> dd(size_t(n) + 1);
        if (collx_gpu_pack(d + off, count, t, dpk, n, &pos)) fail(std::string("pack d2d: ") + collx_gpu_last_error());
        collx_gpu_memcpy(dd.data(), dpk, size_t(n));
        if (std::memcmp(hp.data(), dd.data(), size_t(n))) fail("device pack to device differs");
        // unpack host -> device over a different fill; bytes outside the map kept
        std::vector<unsigned char> packed(size_t(n) + 1), ref(span, 0x5A);
        for (int64_t i = 0; i < n; ++i) packed[i] = (unsigned char)(i * 7 + 3);
        collx_gpu_unpack_range_cpu(f, ref.data() + off, count, 0, n, packed.data());
        collx_gpu_memcpy(d, std::vector<unsigned char>(span, 0x5A).data(), span);
        pos = 0;
        if (collx_gpu_unpack(packed.data(), n, &pos, d + off, count, t)) fail(std::string("unpack: ") + collx_gpu_last_error());
        collx_gpu_memcpy(back.data(), d, span);
        // (overlapping type maps: the write order decides; the CPU and GPU may differ)
        if (back != ref) {
            // re-pack both and compare the stream instead: equal for any map
            std::vector<unsigned char> a(size_t(n) + 1), b(size_t(n) + 1);
            collx_gpu_pack_range_cpu(f, ref.data() + off, count, 0, n, a.data());
            collx_gpu_pack_range_cpu(f, back.data() + off, count, 0, n, b.data());
            bool overl = a != std::vector<unsigned char>(packed.begin(), packed.end());
            if (!overl) fail("device unpack differs");
        }
        collx_gpu_device_free(d);
        collx_gpu_device_free(dpk);
        RandomTypes::release(t);
    }
    std::printf("%s: gpu_vs_cpu backend %s, seed %llu, %d random types: %d mismatches%s%s\n", bad ? "FAIL" : "PASS", be,
                (unsigned long long)seed, cases, bad, bad ? "; first: " : "", first.c_str());
    // throughput: vector of 64 MiB packed with 4..256 B blocks, device -> device
    for (int bs : {4, 16, 64, 256}) {
        int64_t nb = (int64_t(64) << 20) / bs;
        MPI_Datatype t;
        MPI_Type_vector(int(nb), bs, 2 * bs, MPI_BYTE, &t);
        MPI_Type_commit(&t);
        size_t span = size_t(2 * nb * bs);
        void *d = collx_gpu_device_alloc(span), *o = collx_gpu_device_alloc(size_t(nb * bs));
        double best = 1e9;
        for (int r = 0; r < 5; ++r) {
            int64_t pos = 0;
            auto t0 = std::chrono::steady_clock::now();
            collx_gpu_pack(d, 1, t, o, nb * bs, &pos);
            double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            if (r && s < best) best = s;
        }
        std::printf("  %s pack vector, %d B blocks, 64 MiB: %.1f GB/s (device to device, best of 4)\n", be, bs,
                    (nb * bs) / best / 1e9);
        collx_gpu_device_free(d);
        collx_gpu_device_free(o);
        MPI_Type_free(&t);
    }
    MPI_Finalize();
    return bad ? 1 : 0;
}
