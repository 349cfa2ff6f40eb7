// A small data-parallel trainer: a multilayer perceptron (ReLU hidden layers,
// softmax cross-entropy) learns a synthetic classification task by SGD; every
// rank draws its own batches, gradients are summed with MPI_Allreduce /
// MPI_Iallreduce through whatever coll component mpirun selected.
//
//   trainer [--layers 128,512,512,10] [--batch 16] [--iters 40] [--warmup 3]
//           [--mode layer|bucket|overlap] [--bucket-bytes B] [--lr 0.1]
//           [--seed S] [--out-of-place] [--perturb-rank R]
//
// Gradient exchange (--mode):
//   layer    one blocking MPI_Allreduce per layer, issued as soon as backprop
//            has produced that layer's gradient
//   bucket   layers fused into buckets of at least --bucket-bytes (default
//            1 MiB) of gradient, one blocking MPI_Allreduce per bucket
//   overlap  one MPI_Iallreduce per bucket (per layer with --bucket-bytes 0,
//            the default in this mode) started during backprop, progressed by
//            MPI_Testall after each later layer, waited for before the update
// Gradients live in one buffer, last layer first, so a bucket is a
// contiguous range that backprop completes from its end to its start.  The
// exchange sums in place (MPI_IN_PLACE) unless --out-of-place gives it a
// separate result buffer (upstream han 4.1.4 crashes on in-place allreduce,
// Open MPI issue #11473).
//
// It reports the median time per iteration (slowest rank, after --warmup
// iterations), the share of it spent in MPI calls of the gradient exchange,
// and the loss at the start and the end; the last line is machine-readable:
//
//   RESULT mode=overlap ranks=8 params=400906 iter_ms=3.210 comm_share=0.412 loss0=2.31 loss1=1.02 weights=identical
//
// At the end every rank's weights are compared bitwise (a 64-bit hash of the
// bytes, allgathered, and the largest difference between ranks of any weight):
// exit 1 if they differ or the loss did not go down.  --perturb-rank R adds
// a tiny error to rank R's summed gradient, as a broken allreduce would: the
// check must then fail.
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

int rank_, nranks;

// deterministic random numbers: splitmix64 of a key
std::uint64_t mix(std::uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}
float uniform(std::uint64_t key)  // in [-1, 1)
{
    return static_cast<float>((mix(key) >> 40) * (2.0 / (1ULL << 24)) - 1.0);
}

struct Options {
    std::vector<int> layers{128, 512, 512, 10};
    int batch = 16, iters = 40, warmup = 3;
    std::string mode = "layer";
    long bucket_bytes = -1;
    float lr = 0.1f;
    std::uint64_t seed = 1;
    int perturb_rank = -1;
    bool in_place = true;
};

[[noreturn]] void usage()
{
    if (rank_ == 0)
        std::fprintf(stderr, "usage: trainer [--layers N0,N1,...,K] [--batch B] [--iters N] [--warmup N]\n"
                             "               [--mode layer|bucket|overlap] [--bucket-bytes B] [--lr X]\n"
                             "               [--seed S] [--out-of-place] [--perturb-rank R]\n");
    MPI_Finalize();
    std::exit(2);
}

Options parse(int argc, char **argv)
{
    Options o;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "--out-of-place") {
            o.in_place = false;
            continue;
        }
        if (i + 1 >= argc) usage();
        std::string v = argv[++i];
        if (a == "--layers") {
            o.layers.clear();
            for (std::size_t p = 0; p <= v.size();) {
                std::size_t q = v.find(',', p);
                if (q == std::string::npos) q = v.size();
                o.layers.push_back(std::atoi(v.substr(p, q - p).c_str()));
                p = q + 1;
            }
        } else if (a == "--batch") o.batch = std::atoi(v.c_str());
        else if (a == "--iters") o.iters = std::atoi(v.c_str());
        else if (a == "--warmup") o.warmup = std::atoi(v.c_str());
        else if (a == "--mode") o.mode = v;
        else if (a == "--bucket-bytes") o.bucket_bytes = std::atol(v.c_str());
        else if (a == "--lr") o.lr = static_cast<float>(std::atof(v.c_str()));
        else if (a == "--seed") o.seed = std::strtoull(v.c_str(), nullptr, 10);
        else if (a == "--perturb-rank") o.perturb_rank = std::atoi(v.c_str());
        else usage();
    }
    if (o.layers.size() < 2 || o.batch < 1 || o.iters < 2 || o.warmup < 0 || o.warmup >= o.iters ||
        (o.mode != "layer" && o.mode != "bucket" && o.mode != "overlap"))
        usage();
    for (int n : o.layers)
        if (n < 1) usage();
    if (o.bucket_bytes < 0) o.bucket_bytes = o.mode == "bucket" ? (1L << 20) : 0;
    if (o.mode == "layer") o.bucket_bytes = 0;
    return o;
}

struct Layer {
    int in, out;
    std::size_t off;  // of W (out x in, row-major), then b (out), in params/grads
};

class Mlp {
public:
    explicit Mlp(const Options &o) : opt_(o)
    {
        const int L = static_cast<int>(o.layers.size()) - 1;
        std::size_t off = 0;
        layers_.resize(L);
        for (int l = L - 1; l >= 0; --l) {  // last layer first in the buffers
            layers_[l] = {o.layers[l], o.layers[l + 1], off};
            off += static_cast<std::size_t>(o.layers[l]) * o.layers[l + 1] + o.layers[l + 1];
        }
        params_.resize(off);
        grads_.resize(off);
        if (!o.in_place) sums_.resize(off);
        for (int l = 0; l < L; ++l) {  // same seed on every rank: same initial weights
            const Layer &ly = layers_[l];
            const float scale = std::sqrt(6.0f / ly.in);
            for (std::size_t k = 0; k < static_cast<std::size_t>(ly.in) * ly.out; ++k)
                params_[ly.off + k] = scale * uniform(o.seed * 1000003ULL + l * 0x10000000ULL + k);
        }
        acts_.resize(L + 1);
        pre_.resize(L);
        // buckets: consecutive layers from the last, closed at >= bucket_bytes
        std::size_t start = 0;
        for (int l = L - 1; l >= 0; --l) {
            const std::size_t end = layers_[l].off + size_of(l);
            if ((end - start) * sizeof(float) >= static_cast<std::size_t>(o.bucket_bytes) || l == 0) {
                buckets_.push_back({start, end - start, l});
                start = end;
            }
        }
        // the teacher: the class of x is the argmax of T x
        const int in = o.layers.front(), K = o.layers.back();
        teacher_.resize(static_cast<std::size_t>(in) * K);
        for (std::size_t k = 0; k < teacher_.size(); ++k) teacher_[k] = uniform(o.seed * 7919ULL + 0x5eed0000000ULL + k);
    }

    std::size_t size() const { return params_.size(); }
    std::size_t buckets() const { return buckets_.size(); }
    const std::vector<float> &params() const { return params_; }

    // one SGD step on this rank's batch of iteration it; returns the loss;
    // adds the time spent in the exchange's MPI calls to *comm
    double step(int it, double *comm)
    {
        const int L = static_cast<int>(layers_.size()), B = opt_.batch, in = opt_.layers.front(),
                  K = opt_.layers.back();
        // the batch, deterministic per (seed, rank, iteration)
        acts_[0].resize(static_cast<std::size_t>(B) * in);
        labels_.resize(B);
        for (int b = 0; b < B; ++b) {
            float *x = &acts_[0][static_cast<std::size_t>(b) * in];
            const std::uint64_t key = ((opt_.seed * 131ULL + rank_) * 1000003ULL + it) * 4096ULL + b;
            for (int i = 0; i < in; ++i) x[i] = uniform(key * 65536ULL + i);
            int best = 0;
            float bv = -1e30f;
            for (int k = 0; k < K; ++k) {
                float s = 0;
                for (int i = 0; i < in; ++i) s += teacher_[static_cast<std::size_t>(k) * in + i] * x[i];
                if (s > bv) bv = s, best = k;
            }
            labels_[b] = best;
        }
        // forward
        for (int l = 0; l < L; ++l) {
            const Layer &ly = layers_[l];
            const float *W = &params_[ly.off], *bias = W + static_cast<std::size_t>(ly.in) * ly.out;
            pre_[l].assign(static_cast<std::size_t>(B) * ly.out, 0.0f);
            acts_[l + 1].resize(static_cast<std::size_t>(B) * ly.out);
            for (int b = 0; b < B; ++b) {
                const float *a = &acts_[l][static_cast<std::size_t>(b) * ly.in];
                float *z = &pre_[l][static_cast<std::size_t>(b) * ly.out];
                for (int o = 0; o < ly.out; ++o) {
                    const float *w = W + static_cast<std::size_t>(o) * ly.in;
                    float s = bias[o];
                    for (int i = 0; i < ly.in; ++i) s += w[i] * a[i];
                    z[o] = s;
                }
                float *y = &acts_[l + 1][static_cast<std::size_t>(b) * ly.out];
                for (int o = 0; o < ly.out; ++o) y[o] = l + 1 < L ? std::max(z[o], 0.0f) : z[o];
            }
        }
        // loss and its gradient with respect to the logits
        double loss = 0;
        std::vector<float> dz(static_cast<std::size_t>(B) * K);
        for (int b = 0; b < B; ++b) {
            const float *z = &acts_[L][static_cast<std::size_t>(b) * K];
            const float m = *std::max_element(z, z + K);
            double sum = 0;
            for (int k = 0; k < K; ++k) sum += std::exp(z[k] - m);
            loss += std::log(sum) - (z[labels_[b]] - m);
            for (int k = 0; k < K; ++k)
                dz[static_cast<std::size_t>(b) * K + k] =
                    static_cast<float>((std::exp(z[k] - m) / sum - (k == labels_[b])) / B);
        }
        // backward, exchanging each bucket as soon as it is complete
        std::vector<MPI_Request> reqs;
        std::size_t next = 0;  // next bucket to close
        for (int l = L - 1; l >= 0; --l) {
            const Layer &ly = layers_[l];
            float *gW = &grads_[ly.off], *gb = gW + static_cast<std::size_t>(ly.in) * ly.out;
            std::fill(gW, gW + size_of(l), 0.0f);
            const float *W = &params_[ly.off];
            std::vector<float> da(l > 0 ? static_cast<std::size_t>(B) * ly.in : 0, 0.0f);
            for (int b = 0; b < B; ++b) {
                const float *a = &acts_[l][static_cast<std::size_t>(b) * ly.in];
                const float *d = &dz[static_cast<std::size_t>(b) * ly.out];
                for (int o = 0; o < ly.out; ++o) {
                    if (d[o] == 0.0f) continue;
                    float *g = gW + static_cast<std::size_t>(o) * ly.in;
                    for (int i = 0; i < ly.in; ++i) g[i] += d[o] * a[i];
                    gb[o] += d[o];
                    if (l > 0) {
                        const float *w = W + static_cast<std::size_t>(o) * ly.in;
                        float *x = &da[static_cast<std::size_t>(b) * ly.in];
                        for (int i = 0; i < ly.in; ++i) x[i] += d[o] * w[i];
                    }
                }
            }
            if (l > 0) {  // through the ReLU of the layer below
                for (std::size_t k = 0; k < da.size(); ++k)
                    if (pre_[l - 1][k] <= 0.0f) da[k] = 0.0f;
                dz.swap(da);
            }
            const double t0 = MPI_Wtime();
            if (!reqs.empty()) {  // let outstanding exchanges progress
                int done;
                MPI_Testall(static_cast<int>(reqs.size()), reqs.data(), &done, MPI_STATUSES_IGNORE);
            }
            if (next < buckets_.size() && buckets_[next].last_layer == l) {
                const Bucket &bk = buckets_[next++];
                const void *in = opt_.in_place ? MPI_IN_PLACE : &grads_[bk.start];
                float *sum = opt_.in_place ? &grads_[bk.start] : &sums_[bk.start];
                if (opt_.mode == "overlap") {
                    reqs.emplace_back();
                    MPI_Iallreduce(in, sum, static_cast<int>(bk.count), MPI_FLOAT, MPI_SUM,
                                   MPI_COMM_WORLD, &reqs.back());
                } else {
                    MPI_Allreduce(in, sum, static_cast<int>(bk.count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
                }
            }
            *comm += MPI_Wtime() - t0;
        }
        const double t0 = MPI_Wtime();
        MPI_Waitall(static_cast<int>(reqs.size()), reqs.data(), MPI_STATUSES_IGNORE);
        *comm += MPI_Wtime() - t0;
        std::vector<float> &sum = opt_.in_place ? grads_ : sums_;
        if (rank_ == opt_.perturb_rank) sum[it % sum.size()] += 1e-3f;  // a broken exchange
        const float scale = opt_.lr / nranks;
        for (std::size_t k = 0; k < params_.size(); ++k) params_[k] -= scale * sum[k];
        return loss / B;
    }

private:
    struct Bucket {
        std::size_t start, count;
        int last_layer;  // backprop completes the bucket with this layer
    };
    std::size_t size_of(int l) const
    {
        return static_cast<std::size_t>(layers_[l].in) * layers_[l].out + layers_[l].out;
    }
    const Options &opt_;
    std::vector<Layer> layers_;
    std::vector<Bucket> buckets_;
    std::vector<float> params_, grads_, sums_, teacher_;
    std::vector<std::vector<float>> acts_, pre_;
    std::vector<int> labels_;
};

std::uint64_t fnv1a(const void *p, std::size_t n)
{
    const unsigned char *c = static_cast<const unsigned char *>(p);
    std::uint64_t h = 1469598103934665603ULL;
    for (std::size_t i = 0; i < n; ++i) h = (h ^ c[i]) * 1099511628211ULL;
    return h;
}

}  // namespace

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    const Options opt = parse(argc, argv);
    Mlp net(opt);
    if (rank_ == 0) {
        std::string shape;
        for (int n : opt.layers) shape += (shape.empty() ? "" : "-") + std::to_string(n);
        std::printf("trainer: %d ranks, MLP %s (%zu parameters, %.2f MB of gradient), batch %d per rank, "
                    "mode %s, %zu exchange(s) per iteration%s\n",
                    nranks, shape.c_str(), net.size(), net.size() * 4.0 / 1e6, opt.batch,
                    opt.mode.c_str(), net.buckets(), opt.in_place ? "" : ", out of place");
        std::fflush(stdout);
    }
    const int N = opt.iters;
    std::vector<double> t(N), c(N), loss(N);
    MPI_Barrier(MPI_COMM_WORLD);
    for (int it = 0; it < N; ++it) {
        double comm = 0;
        const double t0 = MPI_Wtime();
        loss[it] = net.step(it, &comm);
        t[it] = MPI_Wtime() - t0;
        c[it] = comm;
    }
    // per iteration: the slowest rank's time; sums for the shares and losses
    std::vector<double> tmax(N), tsum(N), csum(N), lsum(N);
    MPI_Reduce(t.data(), tmax.data(), N, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(t.data(), tsum.data(), N, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(c.data(), csum.data(), N, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(loss.data(), lsum.data(), N, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);

    // identical weights: hashes of every rank, and the spread of each weight
    const std::vector<float> &p = net.params();
    std::uint64_t h = fnv1a(p.data(), p.size() * sizeof(float));
    std::vector<std::uint64_t> hs(nranks);
    MPI_Allgather(&h, 1, MPI_UINT64_T, hs.data(), 1, MPI_UINT64_T, MPI_COMM_WORLD);
    std::vector<float> hi(p.size()), lo(p.size());
    MPI_Allreduce(p.data(), hi.data(), static_cast<int>(p.size()), MPI_FLOAT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(p.data(), lo.data(), static_cast<int>(p.size()), MPI_FLOAT, MPI_MIN, MPI_COMM_WORLD);
    double maxdiff = 0;
    for (std::size_t k = 0; k < p.size(); ++k) maxdiff = std::max(maxdiff, double(hi[k]) - lo[k]);
    int distinct = 0;
    for (int r = 0; r < nranks; ++r)
        if (std::find(hs.begin(), hs.begin() + r, hs[r]) == hs.begin() + r) ++distinct;
    const bool same = distinct == 1 && maxdiff == 0;

    int rc = 0;
    if (rank_ == 0) {
        std::vector<double> timed(tmax.begin() + opt.warmup, tmax.end());
        std::sort(timed.begin(), timed.end());
        const double med = timed[timed.size() / 2];
        double ts = 0, cs = 0;
        for (int it = opt.warmup; it < N; ++it) ts += tsum[it], cs += csum[it];
        const int k = std::max(1, std::min(5, N / 4));
        double l0 = 0, l1 = 0;
        for (int i = 0; i < k; ++i) l0 += lsum[i], l1 += lsum[N - 1 - i];
        l0 /= k * nranks;
        l1 /= k * nranks;
        std::printf("time per iteration (median, slowest rank): %.3f ms; communication share %.1f%%\n",
                    med * 1e3, 100 * cs / ts);
        std::printf("loss %.4f (first %d iterations) -> %.4f (last %d)\n", l0, k, l1, k);
        if (same)
            std::printf("weights identical on all %d ranks (hash %016llx)\n", nranks,
                        static_cast<unsigned long long>(hs[0]));
        else
            std::printf("weights DIFFER between ranks: %d distinct hashes, max |difference| %.3g\n",
                        distinct, maxdiff);
        if (!(l1 < l0)) std::printf("loss did NOT decrease\n");
        std::printf("RESULT mode=%s ranks=%d params=%zu iter_ms=%.3f comm_share=%.4f loss0=%.4f loss1=%.4f "
                    "weights=%s\n",
                    opt.mode.c_str(), nranks, net.size(), med * 1e3, cs / ts, l0, l1,
                    same ? "identical" : "differ");
        rc = same && l1 < l0 ? 0 : 1;
    }
    MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Finalize();
    return rc;
}
