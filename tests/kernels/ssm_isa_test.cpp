// The vector levels of the state-space kernels (ssm_isa.h) against the scalar reference, on every level this
// CPU has: random inputs over channel counts that leave tails (37 channels: not a multiple of 8, 16 or the
// threads' chunk), rows of three sequences interleaved in one call, the states continued over two calls,
// time steps on both sides of softplus's threshold (20) and far below 0.
// Tolerances: the vector exp is within 1 ulp of exp and the vector softplus within 4 ulp of log1p(exp) (both
// measured over their whole range), against expf's and log1pf's half ulp; fused multiply-adds and the order
// of the 16-term sum add a few ulp more. So each row moves a channel's value by at most some 2^-20 of the
// magnitude of its terms (sum |h_j C_j| + |D x|), and a state carries the moves of the rows it continued:
// the bound is 2^-20 (4 + 2 steps) times that magnitude, steps being the rows the sequence has taken.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "dot_test_util.h"
#include "kernels/ssm.h"

namespace lctx::kernels::ssm_isa_test {
namespace {

std::vector<float> random(size_t n, float lo, float hi, uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> d(lo, hi);
    std::vector<float> v(n);
    for (float &x : v) x = d(rng);
    return v;
}

constexpr int64_t kInner = 37;
// Rows of three sequences, interleaved; the first call takes kSplit rows, the second the rest.
const std::vector<int> kSeq = {0, 0, 0, 1, 2, 2, 0, 1, 1, 1, 0, 2, 0, 0, 1, 2, 2, 2, 0, 1};
constexpr int kSplit = 7;
constexpr int kSeqs = 3;

struct ScanCase {
    int64_t d_state;
    std::vector<float> A, D, x, dt, bc;
    std::vector<std::vector<float>> state0;

    explicit ScanCase(int64_t n) : d_state(n) {
        const size_t rows = kSeq.size();
        A = random(kInner * n, -16, -0.05f, 1);
        D = random(kInner, -1, 1, 2);
        x = random(rows * kInner, -2, 2, 3);
        dt = random(rows * kInner, -8, 24, 4);
        for (size_t i = 0; i < dt.size(); i += 11) dt[i] = -100.0f;  // exp underflows: softplus ~ 0
        for (size_t i = 5; i < dt.size(); i += 13) dt[i] = 20.0f;    // the threshold itself
        bc = random(rows * 2 * n, -1, 1, 5);
        for (int s = 0; s < kSeqs; ++s) state0.push_back(random(kInner * n, -1, 1, 10 + s));
    }

    // Rows [r0, r1) on the states; returns their y.
    std::vector<float> run(int r0, int r1, std::vector<std::vector<float>> &states, ThreadPool &pool,
                           Isa isa) const {
        const int64_t n = r1 - r0;
        std::vector<float> y(n * kInner);
        std::vector<float *> rows(n);
        for (int64_t t = 0; t < n; ++t) rows[t] = states[kSeq[r0 + t]].data();
        SsmScanArgs a;
        a.x = x.data() + r0 * kInner;
        a.ldx = kInner;
        a.dt = dt.data() + r0 * kInner;
        a.lddt = kInner;
        a.bc = bc.data() + r0 * 2 * d_state;
        a.ldbc = 2 * d_state;
        a.y = y.data();
        a.ldy = kInner;
        a.n_rows = n;
        a.state = rows.data();
        a.a = A.data();
        a.d = D.data();
        a.d_inner = kInner;
        a.d_state = d_state;
        ssm_scan(a, pool, isa);
        return y;
    }

    // Both calls; returns y of every row, and the final states.
    std::vector<float> run_all(std::vector<std::vector<float>> &states, ThreadPool &pool, Isa isa) const {
        states = state0;
        std::vector<float> y = run(0, kSplit, states, pool, isa);
        const std::vector<float> y2 = run(kSplit, static_cast<int>(kSeq.size()), states, pool, isa);
        y.insert(y.end(), y2.begin(), y2.end());
        return y;
    }

    // Per row and channel: the magnitude of y's terms (sum |h_j C_j| + |D x|, in double from the reference's
    // inputs) and the rows its sequence has taken, for the bound above.
    void magnitudes(std::vector<double> &mag, std::vector<int> &steps) const {
        const size_t rows = kSeq.size();
        const int64_t n = d_state;
        std::vector<std::vector<double>> h;
        for (const auto &s : state0) h.emplace_back(s.begin(), s.end());
        std::vector<int> taken(kSeqs, 0);
        mag.assign(rows * kInner, 0.0);
        steps.assign(rows * kInner, 0);
        for (size_t t = 0; t < rows; ++t) {
            const int s = kSeq[t];
            ++taken[s];
            for (int64_t c = 0; c < kInner; ++c) {
                const double v = dt[t * kInner + c];
                const double sp = v > 20 ? v : std::log1p(std::exp(v));
                double m = std::fabs(D[c] * x[t * kInner + c]);
                for (int64_t j = 0; j < n; ++j) {
                    double &hj = h[s][c * n + j];
                    hj = hj * std::exp(sp * A[c * n + j]) + bc[t * 2 * n + j] * x[t * kInner + c] * sp;
                    m += std::fabs(hj * bc[t * 2 * n + n + j]);
                }
                mag[t * kInner + c] = m;
                steps[t * kInner + c] = taken[s];
            }
        }
    }
};

// 2^-20 (4 + 2 steps) of the magnitude (the header's bound)
double bound(double magnitude, int steps) {
    return std::ldexp(4.0 + 2.0 * steps, -20) * magnitude;
}

class SsmIsaTest : public ::testing::TestWithParam<Isa> {};

TEST_P(SsmIsaTest, ScanMatchesTheScalarReference) {
    ThreadPool pool(3);
    for (int64_t n : {16, 8, 32, 5}) {  // one or more vectors of a level; 5: the reference at every level
        const ScanCase sc(n);
        std::vector<std::vector<float>> ref_states, states;
        const std::vector<float> ref = sc.run_all(ref_states, pool, Isa::Scalar);
        const std::vector<float> got = sc.run_all(states, pool, GetParam());
        std::vector<double> mag;
        std::vector<int> steps;
        sc.magnitudes(mag, steps);
        for (size_t i = 0; i < ref.size(); ++i)
            ASSERT_NEAR(got[i], ref[i], bound(mag[i], steps[i]))
                << "d_state " << n << " row " << i / kInner << " channel " << i % kInner;
        // the final states: each element bounded by its sequence's rows (a state's own magnitude)
        std::vector<int> taken(kSeqs, 0);
        for (int s : kSeq) ++taken[s];
        for (int s = 0; s < kSeqs; ++s)
            for (size_t i = 0; i < states[s].size(); ++i)
                ASSERT_NEAR(states[s][i], ref_states[s][i],
                            bound(1.0 + std::fabs(ref_states[s][i]), taken[s]))
                    << "d_state " << n << " sequence " << s << " element " << i;
    }
}

TEST_P(SsmIsaTest, ScanGivesTheSameBitsOnOneAndThreeThreads) {
    ThreadPool one(1), three(3);
    const ScanCase sc(16);
    std::vector<std::vector<float>> s1, s3;
    EXPECT_EQ(sc.run_all(s1, one, GetParam()), sc.run_all(s3, three, GetParam()));
    EXPECT_EQ(s1, s3);
}

// One row per sequence from a zero state, B = 1, C = (1, 0, ..., 0) and x = 1 without D: each row's y is
// h[0] = B x dt', exactly dt' = softplus(dt) as the level computes it. Within 4 ulp of log1p(exp(dt)) over
// [-30, 25] (the header's measured bound; exp underflows below -87.3 on the vector levels, where softplus
// gives 0 for ~1e-38).
TEST_P(SsmIsaTest, ScanSoftplusIsWithinFourUlp) {
    ThreadPool pool(3);
    constexpr int64_t n = 16;
    constexpr int kRows = 40;
    std::vector<float> dt(kRows * kInner), x(kRows * kInner, 1.0f), bc(kRows * 2 * n, 0.0f),
        y(kRows * kInner);
    for (int t = 0; t < kRows; ++t) {
        std::fill(bc.begin() + t * 2 * n, bc.begin() + t * 2 * n + n, 1.0f);
        bc[t * 2 * n + n] = 1.0f;
    }
    for (size_t i = 0; i < dt.size(); ++i) dt[i] = -30.0f + 55.0f * static_cast<float>(i) / dt.size();
    dt[1] = 20.0f;
    dt[2] = std::nextafter(20.0f, 30.0f);
    dt[3] = std::nextafter(20.0f, 0.0f);
    const std::vector<float> A = random(kInner * n, -16, -0.05f, 1);
    std::vector<std::vector<float>> states(kRows, std::vector<float>(kInner * n, 0.0f));
    std::vector<float *> rows;
    for (auto &s : states) rows.push_back(s.data());
    SsmScanArgs a;
    a.x = x.data();
    a.ldx = kInner;
    a.dt = dt.data();
    a.lddt = kInner;
    a.bc = bc.data();
    a.ldbc = 2 * n;
    a.y = y.data();
    a.ldy = kInner;
    a.n_rows = kRows;
    a.state = rows.data();
    a.a = A.data();
    a.d_inner = kInner;
    a.d_state = n;
    ssm_scan(a, pool, GetParam());
    for (size_t i = 0; i < y.size(); ++i) {
        const double v = dt[i], ref = v > 20 ? v : std::log1p(std::exp(v));
        const double ulp = std::ldexp(1.0, std::ilogb(static_cast<float>(ref)) - 23);
        ASSERT_NEAR(y[i], ref, 4 * ulp) << "dt " << dt[i];
    }
}

struct ConvCase {
    int d_conv;
    std::vector<float> w, b, x;
    std::vector<std::vector<float>> state0;

    explicit ConvCase(int k) : d_conv(k) {
        w = random(kInner * k, -1, 1, 20);
        b = random(kInner, -1, 1, 21);
        x = random(kSeq.size() * kInner, -2, 2, 22);
        for (int s = 0; s < kSeqs; ++s) state0.push_back(random(kInner * (k - 1), -2, 2, 30 + s));
    }

    std::vector<float> run_all(std::vector<std::vector<float>> &states, ThreadPool &pool, Isa isa) const {
        states = state0;
        std::vector<float> y(kSeq.size() * kInner);
        for (auto [r0, r1] : {std::pair<int, int>{0, kSplit}, {kSplit, static_cast<int>(kSeq.size())}}) {
            std::vector<float *> rows;
            for (int t = r0; t < r1; ++t) rows.push_back(states[kSeq[t]].data());
            SsmConvArgs a;
            a.x = x.data() + r0 * kInner;
            a.ldx = kInner;
            a.y = y.data() + r0 * kInner;
            a.ldy = kInner;
            a.n_rows = r1 - r0;
            a.state = rows.data();
            a.w = w.data();
            a.b = b.data();
            a.d_inner = kInner;
            a.d_conv = d_conv;
            ssm_conv(a, pool, isa);
        }
        return y;
    }
};

TEST_P(SsmIsaTest, ConvMatchesTheScalarReference) {
    ThreadPool one(1), three(3);
    for (int k : {4, 2, 7}) {  // 4: the vector levels' kernel; others: the reference at every level
        const ConvCase cc(k);
        std::vector<std::vector<float>> ref_states, states, states1;
        const std::vector<float> ref = cc.run_all(ref_states, three, Isa::Scalar);
        const std::vector<float> got = cc.run_all(states, three, GetParam());
        // the magnitude of each output's terms, from the inputs in order per sequence
        std::vector<std::vector<float>> hist = cc.state0;
        for (size_t t = 0; t < kSeq.size(); ++t) {
            std::vector<float> &s = hist[kSeq[t]];
            for (int64_t c = 0; c < kInner; ++c) {
                double m = std::fabs(cc.b[c]) + std::fabs(cc.w[c * k + k - 1] * cc.x[t * kInner + c]);
                for (int j = 0; j < k - 1; ++j) m += std::fabs(cc.w[c * k + j] * s[c * (k - 1) + j]);
                // k + 1 roundings of the sum, each within half an ulp of the magnitude
                const size_t i = t * kInner + c;
                ASSERT_NEAR(got[i], ref[i], std::ldexp(k + 1.0, -24) * m)
                    << "d_conv " << k << " row " << t << " channel " << c;
                for (int j = 0; j + 1 < k - 1; ++j) s[c * (k - 1) + j] = s[c * (k - 1) + j + 1];
                if (k > 1) s[c * (k - 1) + k - 2] = cc.x[t * kInner + c];
            }
        }
        EXPECT_EQ(states, ref_states) << "d_conv " << k;  // the states are the inputs themselves
        EXPECT_EQ(states, hist) << "d_conv " << k;
        EXPECT_EQ(cc.run_all(states1, one, GetParam()), got) << "d_conv " << k << ": 1 thread against 3";
    }
}

INSTANTIATE_TEST_SUITE_P(Levels, SsmIsaTest, ::testing::ValuesIn(test::available_isas()),
                         [](const ::testing::TestParamInfo<Isa> &info) { return isa_name(info.param); });

}  // namespace
}  // namespace lctx::kernels::ssm_isa_test
