// The state-space kernels (ssm_conv, ssm_scan) on random inputs of odd sizes: against a double reference,
// the same bits on 1 and 3 threads, and rows of several sequences interleaved in one call giving what each
// sequence gives alone (each row continues its own sequence's state).
#include "kernels/ssm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace lctx::kernels::ssm_test {
namespace {

std::vector<float> random(size_t n, float lo, float hi, uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> d(lo, hi);
    std::vector<float> v(n);
    for (float &x : v) x = d(rng);
    return v;
}

constexpr int64_t kInner = 37;  // not a multiple of the threads' chunk of channels
constexpr int64_t kState = 5;

struct Conv {
    int d_conv;
    std::vector<float> w, b;
    Conv(int k, uint32_t seed)
        : d_conv(k), w(random(kInner * k, -1, 1, seed)), b(random(kInner, -1, 1, seed + 1)) {}

    // Runs rows of x through the states (row t uses states[seq[t]]); returns y.
    std::vector<float> run(const std::vector<float> &x, const std::vector<int> &seq,
                           std::vector<std::vector<float>> &states, ThreadPool &pool) const {
        const int64_t n = static_cast<int64_t>(seq.size());
        std::vector<float> y(n * kInner);
        std::vector<float *> rows(n);
        for (int64_t t = 0; t < n; ++t) rows[t] = states[seq[t]].data();
        SsmConvArgs a;
        a.x = x.data();
        a.ldx = kInner;
        a.y = y.data();
        a.ldy = kInner;
        a.n_rows = n;
        a.state = rows.data();
        a.w = w.data();
        a.b = b.data();
        a.d_inner = kInner;
        a.d_conv = d_conv;
        ssm_conv(a, pool);
        return y;
    }
};

struct Scan {
    std::vector<float> A = random(kInner * kState, -2, -0.1f, 7), D = random(kInner, -1, 1, 8);

    std::vector<float> run(const std::vector<float> &x, const std::vector<float> &dt,
                           const std::vector<float> &bc, const std::vector<int> &seq,
                           std::vector<std::vector<float>> &states, ThreadPool &pool) const {
        const int64_t n = static_cast<int64_t>(seq.size());
        std::vector<float> y(n * kInner);
        std::vector<float *> rows(n);
        for (int64_t t = 0; t < n; ++t) rows[t] = states[seq[t]].data();
        SsmScanArgs a;
        a.x = x.data();
        a.ldx = kInner;
        a.dt = dt.data();
        a.lddt = kInner;
        a.bc = bc.data();
        a.ldbc = 2 * kState;
        a.y = y.data();
        a.ldy = kInner;
        a.n_rows = n;
        a.state = rows.data();
        a.a = A.data();
        a.d = D.data();
        a.d_inner = kInner;
        a.d_state = kState;
        ssm_scan(a, pool);
        return y;
    }
};

TEST(SsmKernels, ConvMatchesADoubleReferenceAndContinuesItsState) {
    ThreadPool pool(3);
    for (int k : {1, 2, 4, 7}) {
        const Conv conv(k, 10 + k);
        const int n = 9;
        const std::vector<float> x = random(n * kInner, -2, 2, 20 + k);
        std::vector<std::vector<float>> state = {random(kInner * (k - 1), -1, 1, 30 + k)};
        const std::vector<float> start = state[0];
        // Two calls (4 rows, then 5) on one sequence.
        const std::vector<float> y1 =
            conv.run({x.begin(), x.begin() + 4 * kInner}, std::vector<int>(4, 0), state, pool);
        const std::vector<float> y2 =
            conv.run({x.begin() + 4 * kInner, x.end()}, std::vector<int>(5, 0), state, pool);
        for (int64_t c = 0; c < kInner; ++c) {
            std::vector<double> hist(start.begin() + c * (k - 1), start.begin() + (c + 1) * (k - 1));
            for (int t = 0; t < n; ++t) {
                hist.push_back(x[t * kInner + c]);
                double s = conv.b[c];
                for (int j = 0; j < k; ++j) s += double(conv.w[c * k + j]) * hist[hist.size() - k + j];
                const float got = t < 4 ? y1[t * kInner + c] : y2[(t - 4) * kInner + c];
                EXPECT_NEAR(got, s, 1e-5) << "d_conv " << k << " channel " << c << " row " << t;
            }
            for (int j = 0; j < k - 1; ++j)  // the state: the last k - 1 inputs, oldest first
                EXPECT_EQ(state[0][c * (k - 1) + j], float(hist[hist.size() - (k - 1) + j]));
        }
    }
}

TEST(SsmKernels, ScanMatchesADoubleReference) {
    ThreadPool pool(3);
    const Scan scan;
    const int n = 6;
    const std::vector<float> x = random(n * kInner, -2, 2, 40), dt = random(n * kInner, -4, 25, 41);
    const std::vector<float> bc = random(n * 2 * kState, -1, 1, 42);
    std::vector<std::vector<float>> state = {random(kInner * kState, -1, 1, 43)};
    std::vector<double> h(state[0].begin(), state[0].end());
    const std::vector<float> y = scan.run(x, dt, bc, std::vector<int>(n, 0), state, pool);
    for (int t = 0; t < n; ++t)
        for (int64_t c = 0; c < kInner; ++c) {
            const double v = dt[t * kInner + c];
            const double sp = v > 20 ? v : std::log1p(std::exp(v));  // softplus (dt above 20 included)
            double sum = 0;
            for (int64_t j = 0; j < kState; ++j) {
                double &s = h[c * kState + j];
                s = s * std::exp(sp * scan.A[c * kState + j]) +
                    bc[t * 2 * kState + j] * x[t * kInner + c] * sp;
                sum += s * bc[t * 2 * kState + kState + j];
            }
            sum += scan.D[c] * x[t * kInner + c];
            EXPECT_NEAR(y[t * kInner + c], sum, 1e-4 * (1 + std::fabs(sum)))
                << "row " << t << " channel " << c;
        }
    for (size_t i = 0; i < h.size(); ++i) EXPECT_NEAR(state[0][i], h[i], 1e-4 * (1 + std::fabs(h[i])));
}

TEST(SsmKernels, InterleavedSequencesAndThreadCountsGiveTheSameBits) {
    ThreadPool one(1), three(3);
    const Conv conv(4, 50);
    const Scan scan;
    const std::vector<int> seq = {0, 1, 0, 2, 2, 0, 1, 2};  // rows of three sequences, in order per sequence
    const int n = static_cast<int>(seq.size());
    const std::vector<float> x = random(n * kInner, -2, 2, 51), dt = random(n * kInner, -3, 3, 52);
    const std::vector<float> bc = random(n * 2 * kState, -1, 1, 53);
    std::vector<std::vector<float>> conv0, ssm0;
    for (uint32_t s = 0; s < 3; ++s) {
        conv0.push_back(random(kInner * 3, -1, 1, 60 + s));
        ssm0.push_back(random(kInner * kState, -1, 1, 70 + s));
    }
    std::vector<std::vector<float>> c3 = conv0, s3 = ssm0;
    const std::vector<float> yc3 = conv.run(x, seq, c3, three), ys3 = scan.run(x, dt, bc, seq, s3, three);
    // Each sequence alone, on one thread.
    for (int s = 0; s < 3; ++s) {
        std::vector<float> xs, dts, bcs;
        std::vector<int> rows;
        for (int t = 0; t < n; ++t) {
            if (seq[t] != s) continue;
            rows.push_back(t);
            xs.insert(xs.end(), x.begin() + t * kInner, x.begin() + (t + 1) * kInner);
            dts.insert(dts.end(), dt.begin() + t * kInner, dt.begin() + (t + 1) * kInner);
            bcs.insert(bcs.end(), bc.begin() + t * 2 * kState, bc.begin() + (t + 1) * 2 * kState);
        }
        std::vector<std::vector<float>> c1 = {conv0[s]}, s1 = {ssm0[s]};
        const std::vector<int> zeros(rows.size(), 0);
        const std::vector<float> yc1 = conv.run(xs, zeros, c1, one),
                                 ys1 = scan.run(xs, dts, bcs, zeros, s1, one);
        for (size_t i = 0; i < rows.size(); ++i)
            for (int64_t c = 0; c < kInner; ++c) {
                EXPECT_EQ(yc3[rows[i] * kInner + c], yc1[i * kInner + c]) << "conv, sequence " << s;
                EXPECT_EQ(ys3[rows[i] * kInner + c], ys1[i * kInner + c]) << "scan, sequence " << s;
            }
        EXPECT_EQ(c3[s], c1[0]);
        EXPECT_EQ(s3[s], s1[0]);
    }
}

}  // namespace
}  // namespace lctx::kernels::ssm_test
