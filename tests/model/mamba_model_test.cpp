// The mamba family against a reference forward pass written here in double precision from the description
// of the selective state-space layer (the fixture's F32 weights read straight from the file), also with
// Falcon Mamba's norms of dt, B and C (ssm.dt_b_c_rms, a rewritten fixture); the hyper-parameters it reads;
// and the files it refuses, by name.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "gguf_rewrite.h"
#include "model/model.h"
#include "model/reference_compare.h"
#include "util/error.h"

namespace lctx::mamba_model_test {
namespace {

const std::string kMamba = std::string(LCTX_FIXTURES_DIR) + "/golden/models/mamba.gguf";

std::vector<double> tensor(const Model &m, const std::string &name) {
    const gguf::TensorInfo *t = m.file().find_tensor(name);
    EXPECT_NE(t, nullptr) << name;
    EXPECT_EQ(t->type, GgmlType::F32) << name;
    std::vector<float> f(static_cast<size_t>(t->n_elements()));
    std::memcpy(f.data(), m.file().tensor_data(*t), f.size() * sizeof(float));
    return {f.begin(), f.end()};
}

// y[r] = sum_c W[r][c] x[c] for W stored [rows][cols].
std::vector<double> matvec(const std::vector<double> &w, const std::vector<double> &x, size_t rows) {
    const size_t cols = x.size();
    std::vector<double> y(rows, 0.0);
    for (size_t r = 0; r < rows; ++r)
        for (size_t c = 0; c < cols; ++c) y[r] += w[r * cols + c] * x[c];
    return y;
}

std::vector<double> rms(std::vector<double> x, double eps, const std::vector<double> *w = nullptr) {
    double ss = 0;
    for (double v : x) ss += v * v;
    const double s = 1.0 / std::sqrt(ss / static_cast<double>(x.size()) + eps);
    for (size_t i = 0; i < x.size(); ++i) x[i] *= s * (w ? (*w)[i] : 1.0);
    return x;
}

double silu(double v) {
    return v / (1.0 + std::exp(-v));
}

// [n_tokens][n_vocab] logits of one sequence, token by token, each layer keeping its conv and SSM state.
std::vector<double> reference(const Model &m, const std::vector<int32_t> &tokens) {
    const HParams &hp = m.hparams();
    const size_t E = hp.n_embd, D = hp.ssm_d_inner, N = hp.ssm_d_state, K = hp.ssm_d_conv, R = hp.ssm_dt_rank;
    const double eps = hp.norm_rms_eps;
    struct Layer {
        std::vector<double> norm, in, conv, conv_b, xp, dt, dt_b, a, d, out;
        std::vector<double> conv_state, h;  // [D][K - 1], [D][N]
    };
    std::vector<Layer> layers(hp.n_layer);
    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        Layer &l = layers[il];
        l.norm = tensor(m, p + "attn_norm.weight");
        l.in = tensor(m, p + "ssm_in.weight");
        l.conv = tensor(m, p + "ssm_conv1d.weight");
        l.conv_b = tensor(m, p + "ssm_conv1d.bias");
        l.xp = tensor(m, p + "ssm_x.weight");
        l.dt = tensor(m, p + "ssm_dt.weight");
        l.dt_b = tensor(m, p + "ssm_dt.bias");
        l.a = tensor(m, p + "ssm_a");
        l.d = tensor(m, p + "ssm_d");
        l.out = tensor(m, p + "ssm_out.weight");
        l.conv_state.assign(D * (K - 1), 0.0);
        l.h.assign(D * N, 0.0);
    }
    const std::vector<double> embd = tensor(m, "token_embd.weight"),
                              out_norm = tensor(m, "output_norm.weight");
    const std::vector<double> out = tensor(m, "output.weight");
    std::vector<double> logits;
    for (int32_t tok : tokens) {
        std::vector<double> x(embd.begin() + static_cast<ptrdiff_t>(tok * E),
                              embd.begin() + static_cast<ptrdiff_t>((tok + 1) * E));
        for (Layer &l : layers) {
            const std::vector<double> xz = matvec(l.in, rms(x, eps, &l.norm), 2 * D);
            std::vector<double> xs(D);
            for (size_t c = 0; c < D; ++c) {  // window: the state's K - 1 inputs, then this one
                double s = l.conv_b[c];
                for (size_t k = 0; k + 1 < K; ++k) s += l.conv[c * K + k] * l.conv_state[c * (K - 1) + k];
                s += l.conv[c * K + K - 1] * xz[c];
                for (size_t k = 0; k + 2 < K; ++k)
                    l.conv_state[c * (K - 1) + k] = l.conv_state[c * (K - 1) + k + 1];
                l.conv_state[c * (K - 1) + K - 2] = xz[c];
                xs[c] = silu(s);
            }
            const std::vector<double> dbc = matvec(l.xp, xs, R + 2 * N);
            std::vector<double> dt(dbc.begin(), dbc.begin() + R), B(dbc.begin() + R, dbc.begin() + R + N),
                C(dbc.begin() + R + N, dbc.end());
            if (hp.ssm_dt_b_c_rms) {
                dt = rms(dt, eps);
                B = rms(B, eps);
                C = rms(C, eps);
            }
            std::vector<double> y(D);
            const std::vector<double> dt_full = matvec(l.dt, dt, D);
            for (size_t c = 0; c < D; ++c) {
                const double v = dt_full[c] + l.dt_b[c];
                const double sp = std::log1p(std::exp(v));
                double sum = 0;
                for (size_t j = 0; j < N; ++j) {
                    double &h = l.h[c * N + j];
                    h = h * std::exp(sp * l.a[c * N + j]) + B[j] * xs[c] * sp;
                    sum += h * C[j];
                }
                y[c] = (sum + l.d[c] * xs[c]) * silu(xz[D + c]);
            }
            const std::vector<double> o = matvec(l.out, y, E);
            for (size_t i = 0; i < E; ++i) x[i] += o[i];
        }
        const std::vector<double> lg = matvec(out, rms(x, eps, &out_norm), hp.n_vocab);
        logits.insert(logits.end(), lg.begin(), lg.end());
    }
    return logits;
}

const std::vector<int32_t> kTokens = {1,  427, 199, 395, 379, 355, 313, 444, 17,  341,
                                      25, 322, 233, 498, 448, 32,  468, 95,  188, 274};

// f32 arithmetic against double over 2 layers and 20 tokens of state. Measured max |diff| (2026-12-01; plain
// / dt_b_c_rms, |logit| up to ~4): scalar 1.3e-6 / 1.2e-6, avx2 1.9e-6 / 1.5e-6, avx512 1.9e-6 / 1.6e-6. 1e-4
// leaves room for another summation order and still catches a misplaced term (a wrong conv tap or state
// update moves logits by ~0.1 or more).
constexpr double kTol = 1e-4;

TEST(MambaModel, FixtureHyperParameters) {
    auto m = Model::load(kMamba);
    const HParams &hp = m->hparams();
    EXPECT_EQ(hp.arch, Arch::Mamba);
    EXPECT_TRUE(hp.recurrent);
    EXPECT_EQ(hp.ssm_d_conv, 4u);
    EXPECT_EQ(hp.ssm_d_inner, 128u);
    EXPECT_EQ(hp.ssm_d_state, 16u);
    EXPECT_EQ(hp.ssm_dt_rank, 4u);
    EXPECT_FALSE(hp.ssm_dt_b_c_rms);
    EXPECT_EQ(hp.n_embd_k_s(), 3u * 128u);
    EXPECT_EQ(hp.n_embd_v_s(), 16u * 128u);
    EXPECT_EQ(m->description(), "mamba ?B all F32 (guessed)");
}

TEST(MambaModel, LogitsMatchADoubleReference) {
    auto m = Model::load(kMamba);
    // One batch in micro-batches of 7: the state goes on across them.
    const std::vector<float> got = testing::all_logits(*m, kTokens, 64, 1, 7);
    const double d = testing::max_diff(got, reference(*m, kTokens));
    std::printf("[ mamba ] max |diff| to the double reference = %.3g\n", d);
    EXPECT_LE(d, kTol);
}

TEST(MambaModel, DtBCNormsMatchADoubleReference) {
    testing::Rewrite r;
    r.add = [](gguf::Writer &w) { w.set_bool("mamba.ssm.dt_b_c_rms", true); };
    const std::string path = testing::rewrite_gguf(kMamba, r, "mamba-dbc");
    auto m = Model::load(path);
    EXPECT_TRUE(m->hparams().ssm_dt_b_c_rms);
    const std::vector<float> got = testing::all_logits(*m, kTokens, 64, 1, 7);
    const std::vector<double> ref = reference(*m, kTokens);
    const double d = testing::max_diff(got, ref);
    std::printf("[ mamba dt_b_c_rms ] max |diff| to the double reference = %.3g\n", d);
    EXPECT_LE(d, kTol);
    // The norms change the logits (the test would not notice them missing otherwise).
    auto plain = Model::load(kMamba);
    EXPECT_GT(testing::max_diff(testing::all_logits(*plain, kTokens, 64, 1, 7), ref), 100 * kTol);
    m.reset();
    std::filesystem::remove(path);
}

// Loading `path` throws an lctx::Error whose message contains `what`; the file is removed.
void expect_refused(const std::string &path, const std::string &what) {
    try {
        Model::load(path);
        ADD_FAILURE() << "loaded; expected an error naming " << what;
    } catch (const Error &e) {
        EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
    std::filesystem::remove(path);
}

TEST(MambaModel, RefusesBadFiles) {
    using testing::dropping;
    for (const char *key : {"mamba.ssm.conv_kernel", "mamba.ssm.inner_size", "mamba.ssm.state_size",
                            "mamba.ssm.time_step_rank", "mamba.attention.layer_norm_rms_epsilon"})
        expect_refused(testing::rewrite_gguf(kMamba, dropping({key}), "mamba-nokey"), key);
    testing::Rewrite zero;
    zero.add = [](gguf::Writer &w) { w.set_u32("mamba.ssm.state_size", 0); };
    expect_refused(testing::rewrite_gguf(kMamba, zero, "mamba-zero"), "mamba.ssm.state_size");
    testing::Rewrite huge;  // each size in range, their product (the SSM state) not
    huge.add = [](gguf::Writer &w) {
        w.set_u32("mamba.ssm.state_size", 1u << 20);
        w.set_u32("mamba.ssm.inner_size", 1u << 20);
    };
    expect_refused(testing::rewrite_gguf(kMamba, huge, "mamba-huge"), "ssm.inner_size");
    testing::Rewrite wide;
    wide.add = [](gguf::Writer &w) { w.set_u32("mamba.ssm.conv_kernel", 65); };
    expect_refused(testing::rewrite_gguf(kMamba, wide, "mamba-wide"), "mamba.ssm.conv_kernel");
    for (const char *t :
         {"blk.1.ssm_a", "blk.0.ssm_conv1d.weight", "blk.0.ssm_dt.bias", "blk.1.ssm_out.weight"})
        expect_refused(testing::rewrite_gguf(kMamba, dropping({t}), "mamba-notensor"), t);
    testing::Rewrite shape;
    shape.reshape = "blk.0.ssm_conv1d.weight";
    shape.reshape_ne = {8, 64};  // the right element count, the wrong shape
    expect_refused(testing::rewrite_gguf(kMamba, shape, "mamba-shape"), "blk.0.ssm_conv1d.weight");
}

}  // namespace
}  // namespace lctx::mamba_model_test
