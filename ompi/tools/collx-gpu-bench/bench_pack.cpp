// CPU pack throughput of the engine vs the system MPI_Pack, same run, same
// buffers; medians and best over repetitions.  Prints a Markdown table.
//   collx-gpu-bench-pack [--bytes N] [--reps R]
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "collx/gpu_dtype.h"

static double now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int64_t bytes = 8 << 20;
    int reps = 11;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!std::strcmp(argv[i], "--bytes")) bytes = std::atoll(argv[i + 1]);
        if (!std::strcmp(argv[i], "--reps")) reps = std::atoi(argv[i + 1]);
    }
    std::printf("| type | block (B) | packed (MiB) | MPI_Pack (GB/s) | collx CPU (GB/s) | speed-up | MPI_Pack best | collx best | speed-up (best) |\n");
    std::printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    const int blocks[] = {1, 4, 8, 16, 64, 256, 1024, 4096};
    std::mt19937 rng(7);
    for (int kind = 0; kind < 3; ++kind)
        for (int bs : blocks) {
            int64_t n = bytes / bs;  // number of blocks
            MPI_Datatype t;
            std::string name;
            int64_t span;
            if (kind == 0) {  // vector: every other block
                MPI_Type_vector(int(n), bs, 2 * bs, MPI_BYTE, &t);
                name = "vector";
                span = 2 * n * bs;
            } else if (kind == 1) {  // 2-D subarray: rows of bs bytes out of rows of 2*bs+8
                int rows = int(n), cols = 2 * bs + 8;
                int sizes[2] = {rows, cols}, sub[2] = {rows, bs}, st[2] = {0, 4};
                MPI_Type_create_subarray(2, sizes, sub, st, MPI_ORDER_C, MPI_BYTE, &t);
                name = "subarray";
                span = int64_t(rows) * cols;
            } else {  // indexed: irregular gaps
                std::vector<int> bl(n, bs), dp(n);
                int64_t pos = 0;
                for (int64_t i = 0; i < n; ++i) {
                    dp[i] = int(pos);
                    pos += bs + bs * int64_t(rng() % 3);
                }
                MPI_Type_indexed(int(n), bl.data(), dp.data(), MPI_BYTE, &t);
                name = "indexed";
                span = pos + bs;
            }
            MPI_Type_commit(&t);
            std::vector<unsigned char> src(size_t(span) + 64);
            for (size_t i = 0; i < src.size(); ++i) src[i] = (unsigned char)(i * 7);
            int ub;
            MPI_Pack_size(1, t, MPI_COMM_WORLD, &ub);
            std::vector<unsigned char> a(ub), b(ub);
            std::vector<double> tm, tc;
            int64_t packed = 0;
            for (int r = 0; r < reps; ++r) {
                int p = 0;
                double t0 = now();
                MPI_Pack(src.data(), 1, t, a.data(), ub, &p, MPI_COMM_WORLD);
                double t1 = now();
                int64_t q = 0;
                collx_gpu_pack(src.data(), 1, t, b.data(), ub, &q);
                double t2 = now();
                tm.push_back(t1 - t0);
                tc.push_back(t2 - t1);
                packed = q;
                if (p != q || std::memcmp(a.data(), b.data(), size_t(p))) {
                    std::printf("MISMATCH for %s %d\n", name.c_str(), bs);
                    return 1;
                }
            }
            std::sort(tm.begin(), tm.end());
            std::sort(tc.begin(), tc.end());
            // median, and best (least disturbed by other load on a shared machine)
            double mm = tm[tm.size() / 2], mc = tc[tc.size() / 2], bm = tm[0], bc = tc[0];
            std::printf("| %s | %d | %.1f | %.2f | %.2f | %.1fx | %.2f | %.2f | %.1fx |\n", name.c_str(), bs,
                        packed / 1048576.0, packed / mm / 1e9, packed / mc / 1e9, mm / mc, packed / bm / 1e9,
                        packed / bc / 1e9, bm / bc);
            std::fflush(stdout);
            MPI_Type_free(&t);
        }
    MPI_Finalize();
    return 0;
}
