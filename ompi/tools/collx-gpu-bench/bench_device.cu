// Device pack/unpack throughput of the GPU datatype engine on a real GPU,
// against (a) one cudaMemcpyAsync per contiguous block (what a CUDA-aware
// Open MPI's accelerator path issues), and a single cudaMemcpy2DAsync where
// the type is one 2-D stride, and (b) the CPU engine after a device-to-host
// copy of the whole span (a host-staged pack).  Every engine result is
// checked against the CPU engine, byte for byte, before it is timed.
//
//   collx-gpu-bench-device [--sizes 8,256] (MiB packed) [--blocks 1,4,16,64]
//                          [--types vector,subarray,indexed,struct] [--reps 7]
//                          [--perblock 65536]  (blocks timed for baseline a)
//
// Share of memory bandwidth: a pack or unpack reads and writes the packed
// bytes once each, so its traffic is 2 x packed; the device's bandwidth is
// that of a 1 GiB cudaMemcpy device to device in the same run (read + write).
// Prints a Markdown table.  One process, no mpirun.
#include <mpi.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "collx/gpu_dtype.h"

namespace {

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

void cuda_ok(cudaError_t e, const char *what) {
    if (e == cudaSuccess) return;
    std::printf("FAIL: %s: %s\n", what, cudaGetErrorString(e));
    std::exit(2);
}

std::vector<long> list_arg(const char *s) {
    std::vector<long> v;
    std::stringstream ss(s);
    std::string x;
    while (std::getline(ss, x, ',')) v.push_back(std::atol(x.c_str()));
    return v;
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

// One benchmark type: count elements of t over `span` bytes, the source
// offset of its k-th contiguous block (all blocks are `block` bytes), and,
// where the whole type is one 2-D stride, that stride.
struct Case {
    std::string name;
    MPI_Datatype t = MPI_DATATYPE_NULL;
    int64_t count = 1, span = 0, nblocks = 0, block = 0, pitch2d = 0;
    std::function<int64_t(int64_t)> block_at;
};

Case make_vector(int64_t bytes, int b) {
    Case c;
    c.name = "vector";
    c.block = b;
    c.nblocks = bytes / b;
    MPI_Type_vector(int(c.nblocks), b, 2 * b, MPI_BYTE, &c.t);
    c.span = 2 * c.nblocks * b;
    c.pitch2d = 2 * b;
    c.block_at = [b](int64_t k) { return k * 2 * b; };
    return c;
}

// x-face of width w of a 3-D array [n0][n1][n2] (C order), elements of e bytes:
// what a 3-D stencil sends to its x neighbours; rows of w*e bytes
Case make_subarray(int64_t bytes, int b) {
    Case c;
    c.name = "subarray";
    c.block = b;
    int e = b >= 8 ? 8 : b, w = b / e;
    MPI_Datatype base = e == 8 ? MPI_DOUBLE : e == 4 ? MPI_FLOAT : e == 2 ? MPI_SHORT : MPI_CHAR;
    int n2 = 4 * w, n1 = 512, n0 = int(bytes / (int64_t(n1) * b));
    int sizes[3] = {n0, n1, n2}, sub[3] = {n0, n1, w}, st[3] = {0, 0, w};
    MPI_Type_create_subarray(3, sizes, sub, st, MPI_ORDER_C, base, &c.t);
    c.span = int64_t(n0) * n1 * n2 * e;
    c.nblocks = int64_t(n0) * n1;
    c.pitch2d = int64_t(n2) * e;
    int64_t row = int64_t(n2) * e, first = int64_t(w) * e;
    c.block_at = [row, first](int64_t k) { return k * row + first; };
    return c;
}

// 4096 blocks per element with gaps of 0, 1 or 2 blocks (seeded), repeated
// `count` times: an irregular index list
Case make_indexed(int64_t bytes, int b) {
    Case c;
    c.name = "indexed";
    c.block = b;
    const int k = 4096;
    std::mt19937 rng(7);
    auto disp = std::make_shared<std::vector<int64_t>>(k);
    std::vector<int> bl(k, b), dp(k);
    int64_t pos = 0;
    for (int i = 0; i < k; ++i) {
        dp[i] = int(pos);
        (*disp)[i] = pos;
        pos += b + b * int64_t(rng() % 3);
    }
    MPI_Datatype t;
    MPI_Type_indexed(k, bl.data(), dp.data(), MPI_BYTE, &t);
    MPI_Type_create_resized(t, 0, pos, &c.t);
    MPI_Type_free(&t);
    c.count = bytes / (int64_t(k) * b);
    c.span = c.count * pos;
    c.nblocks = c.count * k;
    c.block_at = [disp, pos, k](int64_t i) { return (i / k) * pos + (*disp)[i % k]; };
    return c;
}

// a particle-like struct: three members of b bytes (int, float and byte
// fields where b allows) at 0, 3b and 5b, extent 8b
Case make_struct(int64_t bytes, int b) {
    Case c;
    c.name = "struct";
    c.block = b;
    int bl[3] = {b, b, b};
    MPI_Datatype ty[3] = {MPI_BYTE, MPI_BYTE, MPI_BYTE};
    if (b % 4 == 0) {
        bl[0] = bl[1] = b / 4;
        ty[0] = MPI_INT;
        ty[1] = MPI_FLOAT;
    }
    MPI_Aint dp[3] = {0, 3 * b, 5 * b};
    MPI_Datatype t;
    MPI_Type_create_struct(3, bl, dp, ty, &t);
    MPI_Type_create_resized(t, 0, 8 * b, &c.t);
    MPI_Type_free(&t);
    c.count = bytes / (3 * int64_t(b));
    c.span = c.count * 8 * b;
    c.nblocks = c.count * 3;
    c.block_at = [b](int64_t i) {
        static const int64_t off[3] = {0, 3, 5};
        return (i / 3) * 8 * b + off[i % 3] * b;
    };
    return c;
}

}  // namespace

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    std::vector<long> sizes = {8, 256}, blocks = {1, 4, 16, 64};
    std::string types = "vector,subarray,indexed,struct";
    int reps = 7;
    int64_t perblock = 65536;
    for (int i = 1; i + 1 < argc; i += 2) {
        std::string a = argv[i];
        if (a == "--sizes") sizes = list_arg(argv[i + 1]);
        else if (a == "--blocks") blocks = list_arg(argv[i + 1]);
        else if (a == "--types") types = argv[i + 1];
        else if (a == "--reps") reps = std::atoi(argv[i + 1]);
        else if (a == "--perblock") perblock = std::atoll(argv[i + 1]);
        else { std::printf("unknown option %s\n", argv[i]); return 2; }
    }
    if (collx_gpu_set_backend("cuda")) {
        std::printf("FAIL: cuda backend: %s\n", collx_gpu_last_error());
        return 1;
    }
    cudaDeviceProp prop;
    cuda_ok(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
    cudaStream_t s;
    cuda_ok(cudaStreamCreate(&s), "cudaStreamCreate");

    // the device's memory bandwidth, as a plain copy sees it
    double peak;
    {
        size_t n = size_t(1) << 30;
        void *a, *b;
        cuda_ok(cudaMalloc(&a, n), "cudaMalloc");
        cuda_ok(cudaMalloc(&b, n), "cudaMalloc");
        std::vector<double> ts;
        for (int r = 0; r < 6; ++r) {
            double t0 = now();
            cuda_ok(cudaMemcpyAsync(b, a, n, cudaMemcpyDeviceToDevice, s), "copy");
            cuda_ok(cudaStreamSynchronize(s), "sync");
            if (r) ts.push_back(now() - t0);
        }
        peak = 2.0 * n / median(ts) / 1e9;
        cudaFree(a);
        cudaFree(b);
    }
    std::printf("# device: %s, %d SMs; device-to-device cudaMemcpy of 1 GiB: %.0f GB/s (read + write)\n", prop.name,
                prop.multiProcessorCount, peak);
    std::printf("# medians of %d repetitions; per-block copies timed over the first %lld blocks\n", reps,
                (long long)perblock);
    std::printf("| type | block (B) | packed (MiB) | pack GB/s | pack %% of bw | unpack GB/s | unpack %% of bw | "
                "per-block cudaMemcpyAsync GB/s | pack / per-block | one cudaMemcpy2DAsync GB/s | "
                "CPU engine + host copy GB/s | pack / CPU |\n");
    std::printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    std::fflush(stdout);

    int bad = 0;
    std::stringstream ts(types);
    std::string ty;
    std::vector<std::string> tlist;
    while (std::getline(ts, ty, ',')) tlist.push_back(ty);
    for (long mib : sizes)
        for (const std::string &tn : tlist)
            for (long b : blocks) {
                int64_t bytes = int64_t(mib) << 20;
                Case c = tn == "vector" ? make_vector(bytes, int(b))
                         : tn == "subarray" ? make_subarray(bytes, int(b))
                         : tn == "indexed" ? make_indexed(bytes, int(b))
                                           : make_struct(bytes, int(b));
                MPI_Type_commit(&c.t);
                const collx_gpu_dtype_t *f;
                if (collx_gpu_dtype_get(c.t, &f)) {
                    std::printf("FAIL: %s %ld: %s\n", tn.c_str(), b, collx_gpu_last_error());
                    ++bad;
                    continue;
                }
                int64_t n = c.count * collx_gpu_dtype_size(f);
                unsigned char *h, *hp, *hq;  // pinned: the span, packed (CPU), packed (device, checked)
                cuda_ok(cudaMallocHost(&h, size_t(c.span)), "cudaMallocHost");
                cuda_ok(cudaMallocHost(&hp, size_t(n)), "cudaMallocHost");
                cuda_ok(cudaMallocHost(&hq, size_t(n)), "cudaMallocHost");
                for (int64_t i = 0; i < c.span; ++i) h[i] = (unsigned char)(i * 131 + (i >> 12));
                unsigned char *d, *dp;
                cuda_ok(cudaMalloc(&d, size_t(c.span)), "cudaMalloc");
                cuda_ok(cudaMalloc(&dp, size_t(n)), "cudaMalloc");
                cuda_ok(cudaMemcpy(d, h, size_t(c.span), cudaMemcpyHostToDevice), "upload");

                // (b) host-staged CPU pack: copy the span down, pack on the CPU; its output is the reference
                std::vector<double> tcpu;
                for (int r = 0; r < 3; ++r) {
                    double t0 = now();
                    cuda_ok(cudaMemcpyAsync(h, d, size_t(c.span), cudaMemcpyDeviceToHost, s), "D2H");
                    cuda_ok(cudaStreamSynchronize(s), "sync");
                    collx_gpu_pack_range_cpu(f, h, c.count, 0, n, hp);
                    tcpu.push_back(now() - t0);
                }
                // the engine on the device, checked, then timed
                int64_t pos = 0;
                bool ok = !collx_gpu_pack(d, c.count, c.t, dp, n, &pos) && pos == n;
                cuda_ok(cudaMemcpy(hq, dp, size_t(n), cudaMemcpyDeviceToHost), "D2H");
                if (!ok || std::memcmp(hp, hq, size_t(n))) {
                    std::printf("FAIL: %s %ld B: device pack differs from the CPU engine (%s)\n", tn.c_str(), b,
                                ok ? "bytes" : collx_gpu_last_error());
                    ++bad;
                }
                std::vector<double> tp, tu;
                for (int r = 0; r < reps; ++r) {
                    pos = 0;
                    double t0 = now();
                    collx_gpu_pack(d, c.count, c.t, dp, n, &pos);
                    tp.push_back(now() - t0);
                }
                // unpack into a device span filled with 0x5A: the map gets the packed bytes, the gaps stay
                cuda_ok(cudaMemset(d, 0x5A, size_t(c.span)), "memset");
                pos = 0;
                ok = !collx_gpu_unpack(dp, n, &pos, d, c.count, c.t) && pos == n;
                std::memset(h, 0x5A, size_t(c.span));
                collx_gpu_unpack_range_cpu(f, h, c.count, 0, n, hp);
                std::vector<unsigned char> back(size_t(c.span));
                cuda_ok(cudaMemcpy(back.data(), d, size_t(c.span), cudaMemcpyDeviceToHost), "D2H");
                if (!ok || std::memcmp(back.data(), h, size_t(c.span))) {
                    std::printf("FAIL: %s %ld B: device unpack differs from the CPU engine (%s)\n", tn.c_str(), b,
                                ok ? "bytes" : collx_gpu_last_error());
                    ++bad;
                }
                for (int r = 0; r < reps; ++r) {
                    pos = 0;
                    double t0 = now();
                    collx_gpu_unpack(dp, n, &pos, d, c.count, c.t);
                    tu.push_back(now() - t0);
                }
                // (a) one cudaMemcpyAsync per block, over the first `perblock` blocks
                int64_t m = std::min<int64_t>(c.nblocks, perblock);
                std::vector<double> tb;
                for (int r = 0; r < 3; ++r) {
                    double t0 = now();
                    for (int64_t k = 0; k < m; ++k)
                        cudaMemcpyAsync(dp + k * c.block, d + c.block_at(k), size_t(c.block), cudaMemcpyDeviceToDevice, s);
                    cuda_ok(cudaStreamSynchronize(s), "per-block copies");
                    tb.push_back(now() - t0);
                }
                // (a') one 2-D copy where the type is a single stride
                std::string two_d = "-";
                if (c.pitch2d) {
                    std::vector<double> t2;
                    for (int r = 0; r < reps; ++r) {
                        double t0 = now();
                        cuda_ok(cudaMemcpy2DAsync(dp, size_t(c.block), d + c.block_at(0), size_t(c.pitch2d),
                                                  size_t(c.block), size_t(c.nblocks), cudaMemcpyDeviceToDevice, s),
                                "cudaMemcpy2DAsync");
                        cuda_ok(cudaStreamSynchronize(s), "sync");
                        t2.push_back(now() - t0);
                    }
                    char buf[32];
                    std::snprintf(buf, sizeof buf, "%.1f", n / median(t2) / 1e9);
                    two_d = buf;
                }
                double gp = n / median(tp) / 1e9, gu = n / median(tu) / 1e9;
                double gb = m * c.block / median(tb) / 1e9, gc = n / median(tcpu) / 1e9;
                std::printf("| %s | %ld | %.0f | %.1f | %.0f%% | %.1f | %.0f%% | %.3f | %.0fx | %s | %.2f | %.0fx |\n",
                            tn.c_str(), b, n / 1048576.0, gp, 100 * 2 * gp / peak, gu, 100 * 2 * gu / peak, gb, gp / gb,
                            two_d.c_str(), gc, gp / gc);
                std::fflush(stdout);
                cudaFree(d);
                cudaFree(dp);
                cudaFreeHost(h);
                cudaFreeHost(hp);
                cudaFreeHost(hq);
                MPI_Type_free(&c.t);
            }
    std::printf("%s: %d check(s) failed\n", bad ? "FAIL" : "PASS", bad);
    MPI_Finalize();
    return bad ? 1 : 0;
}
