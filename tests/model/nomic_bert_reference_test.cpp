// nomic-bert without a llama.cpp peer: the fixtures hold no nomic-bert golden, so a small synthetic model
// (synth shape nomic-bert-tiny, F32) runs through lctx and through the straightforward reference below,
// written from the architecture's description and reading the tensors straight from the GGUF file: token
// embedding + token type 0, LayerNorm; per layer fused q|k|v, NeoX rotation of q and k by each token's
// position in its sequence, softmax(q k / sqrt(d)) v within the sequence, output projection, post-norm
// residuals, a SwiGLU feed-forward. Dropping the rotation (or rotating the wrong pairs, or by the batch
// index instead of the position) moves every row far beyond the bound.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "../../tools/lctx/synth_model.h"
#include "context/context.h"
#include "gguf/gguf.h"
#include "model/model.h"
#include "tensor/fp16.h"

namespace lctx::nomic_bert_reference_test {
namespace {

// A tensor of the file as rows of floats: row r holds ne[0] values.
struct Matrix {
    int64_t cols = 0, rows = 0;
    std::vector<float> v;
    const float *row(int64_t r) const { return v.data() + r * cols; }
};

Matrix read_tensor(const gguf::File &f, const std::string &name) {
    const gguf::TensorInfo *t = f.find_tensor(name);
    if (!t) throw std::runtime_error("no tensor " + name);
    Matrix m;
    m.cols = t->ne[0];
    m.rows = t->n_elements() / m.cols;
    m.v.resize(static_cast<size_t>(t->n_elements()));
    const uint8_t *p = f.tensor_data(*t);
    if (t->type == GgmlType::F32) {
        std::memcpy(m.v.data(), p, m.v.size() * sizeof(float));
    } else if (t->type == GgmlType::F16) {
        for (size_t i = 0; i < m.v.size(); ++i) {
            fp16_t h;
            std::memcpy(&h, p + i * sizeof h, sizeof h);
            m.v[i] = fp16_to_fp32(h);
        }
    } else {
        throw std::runtime_error(name + ": the reference reads F32 and F16 only");
    }
    return m;
}

// y = W x for W with rows of x.size() values.
std::vector<float> matvec(const Matrix &w, const std::vector<float> &x) {
    std::vector<float> y(static_cast<size_t>(w.rows));
    for (int64_t r = 0; r < w.rows; ++r) {
        double s = 0;
        for (int64_t c = 0; c < w.cols; ++c) s += static_cast<double>(w.row(r)[c]) * x[c];
        y[r] = static_cast<float>(s);
    }
    return y;
}

void layer_norm(std::vector<float> &x, const Matrix &w, const Matrix &b, double eps) {
    double mean = 0, var = 0;
    for (float v : x) mean += v;
    mean /= static_cast<double>(x.size());
    for (float v : x) var += (v - mean) * (v - mean);
    var /= static_cast<double>(x.size());
    for (size_t i = 0; i < x.size(); ++i)
        x[i] = static_cast<float>((x[i] - mean) / std::sqrt(var + eps)) * w.v[i] + b.v[i];
}

// NeoX rotation of one head: the pairs (j, j + n_rot / 2) turn by pos * base^(-2j / n_rot).
void rotate_neox(float *h, int n_rot, int pos, double base) {
    for (int j = 0; j < n_rot / 2; ++j) {
        const double theta = pos * std::pow(base, -2.0 * j / n_rot);
        const double c = std::cos(theta), s = std::sin(theta);
        const double a = h[j], b = h[j + n_rot / 2];
        h[j] = static_cast<float>(a * c - b * s);
        h[j + n_rot / 2] = static_cast<float>(a * s + b * c);
    }
}

// The final hidden state of every token of one sequence (positions 0..n-1).
std::vector<std::vector<float>> reference(const gguf::File &f, const std::vector<int32_t> &tokens) {
    const std::string a = "nomic-bert.";
    const int n_layer = static_cast<int>(*f.get_int(a + "block_count"));
    const int n_head = static_cast<int>(*f.get_int(a + "attention.head_count"));
    const double eps = *f.get_float(a + "attention.layer_norm_epsilon");
    const double base = f.get_float(a + "rope.freq_base").value_or(10000.0);
    const Matrix embd = read_tensor(f, "token_embd.weight"), types = read_tensor(f, "token_types.weight");
    const int n_embd = static_cast<int>(embd.cols), d = n_embd / n_head;
    const int n_rot = static_cast<int>(f.get_int(a + "rope.dimension_count").value_or(d));
    const int n = static_cast<int>(tokens.size());

    std::vector<std::vector<float>> x(n);
    for (int t = 0; t < n; ++t) {
        x[t].assign(embd.row(tokens[t]), embd.row(tokens[t]) + n_embd);
        for (int c = 0; c < n_embd; ++c) x[t][c] += types.row(0)[c];
        layer_norm(x[t], read_tensor(f, "token_embd_norm.weight"), read_tensor(f, "token_embd_norm.bias"),
                   eps);
    }
    for (int il = 0; il < n_layer; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        const Matrix qkv = read_tensor(f, p + "attn_qkv.weight"),
                     wo = read_tensor(f, p + "attn_output.weight");
        const Matrix up = read_tensor(f, p + "ffn_up.weight"), gate = read_tensor(f, p + "ffn_gate.weight");
        const Matrix down = read_tensor(f, p + "ffn_down.weight");
        std::vector<std::vector<float>> q(n), k(n), v(n);
        for (int t = 0; t < n; ++t) {
            const std::vector<float> all = matvec(qkv, x[t]);
            q[t].assign(all.begin(), all.begin() + n_embd);
            k[t].assign(all.begin() + n_embd, all.begin() + 2 * n_embd);
            v[t].assign(all.begin() + 2 * n_embd, all.end());
            for (int h = 0; h < n_head; ++h) {
                rotate_neox(q[t].data() + h * d, n_rot, t, base);
                rotate_neox(k[t].data() + h * d, n_rot, t, base);
            }
        }
        for (int t = 0; t < n; ++t) {
            std::vector<float> attn(n_embd, 0.0f);
            for (int h = 0; h < n_head; ++h) {
                std::vector<double> s(n);
                double mx = -1e300, sum = 0;
                for (int j = 0; j < n; ++j) {
                    double dot = 0;
                    for (int c = 0; c < d; ++c) dot += static_cast<double>(q[t][h * d + c]) * k[j][h * d + c];
                    s[j] = dot / std::sqrt(static_cast<double>(d));
                    mx = std::max(mx, s[j]);
                }
                for (double &e : s) sum += (e = std::exp(e - mx));
                for (int j = 0; j < n; ++j)
                    for (int c = 0; c < d; ++c)
                        attn[h * d + c] += static_cast<float>(s[j] / sum) * v[j][h * d + c];
            }
            const std::vector<float> o = matvec(wo, attn);
            std::vector<float> y = x[t];
            for (int c = 0; c < n_embd; ++c) y[c] += o[c];
            layer_norm(y, read_tensor(f, p + "attn_output_norm.weight"),
                       read_tensor(f, p + "attn_output_norm.bias"), eps);
            std::vector<float> g = matvec(gate, y);
            const std::vector<float> u = matvec(up, y);
            for (size_t c = 0; c < g.size(); ++c) g[c] = g[c] / (1.0f + std::exp(-g[c])) * u[c];
            const std::vector<float> ff = matvec(down, g);
            for (int c = 0; c < n_embd; ++c) y[c] += ff[c];
            layer_norm(y, read_tensor(f, p + "layer_output_norm.weight"),
                       read_tensor(f, p + "layer_output_norm.bias"), eps);
            x[t] = y;  // the next token's attention reads k, v of this layer, computed above
        }
    }
    return x;
}

TEST(NomicBertReference, EveryTokenMatchesAStraightforwardImplementation) {
    const synth::Shape *shape = synth::find_shape("nomic-bert-tiny");
    ASSERT_NE(shape, nullptr);
    synth::TypeChoice type;
    ASSERT_TRUE(synth::parse_type("F32", &type));
    synth::Options opts;
    opts.vocab_path = std::string(LCTX_FIXTURES_DIR) + "/vocab/" + shape->vocab_file;
    opts.n_threads = 1;
    const std::string path =
        (std::filesystem::temp_directory_path() / ("lctx_nomic_ref_" + std::to_string(getpid()) + ".gguf"))
            .string();
    synth::write_model(*shape, type, path, opts);
    const std::unique_ptr<gguf::File> file = gguf::File::open(path);
    auto model = Model::load(path);
    std::filesystem::remove(path);  // both keep their mapping
    const int64_t n_embd = model->hparams().n_embd;

    // Two texts in one batch, each from position 0: the second's rotation must restart.
    const std::vector<int32_t> a = {101, 2023, 2003, 1037, 3231, 1997, 2367, 102};
    const std::vector<int32_t> b = {101, 7592, 2088, 2003, 4248, 102};
    std::vector<int32_t> tok, pos, sid;
    for (size_t i = 0; i < a.size(); ++i) tok.push_back(a[i]), pos.push_back(int32_t(i)), sid.push_back(0);
    for (size_t i = 0; i < b.size(); ++i) tok.push_back(b[i]), pos.push_back(int32_t(i)), sid.push_back(1);
    std::vector<int32_t *> sids;
    for (int32_t &s : sid) sids.push_back(&s);
    std::vector<int8_t> out(tok.size(), 1);
    Batch batch;
    batch.n_tokens = static_cast<int32_t>(tok.size());
    batch.token = tok.data();
    batch.pos = pos.data();
    batch.seq_id = sids.data();
    batch.logits = out.data();

    std::vector<std::vector<float>> want = reference(*file, a);
    const std::vector<std::vector<float>> want_b = reference(*file, b);
    want.insert(want.end(), want_b.begin(), want_b.end());

    for (bool use_encode : {true, false}) {
        ContextParams cp;
        cp.n_ctx = 64;
        cp.n_batch = cp.n_ubatch = 64;
        cp.n_seq_max = 2;
        cp.embeddings = true;
        cp.pooling = PoolingType::None;
        Context ctx(*model, cp);
        ASSERT_EQ(use_encode ? ctx.encode(batch) : ctx.decode(batch), DecodeStatus::Ok);
        float worst = 0;
        for (int32_t i = 0; i < batch.n_tokens; ++i) {
            const float *e = ctx.embeddings_ith(i);
            ASSERT_NE(e, nullptr);
            for (int64_t c = 0; c < n_embd; ++c) worst = std::max(worst, std::fabs(e[c] - want[i][c]));
        }
        // f32 weights and activations on both sides: only the summation order differs (LayerNorm'd rows of
        // magnitude ~1, so ~1e-6); a missing or misplaced rotation moves rows by ~1e-1.
        std::printf("[ nomic-bert %s ] max |diff| to the reference = %.3g\n",
                    use_encode ? "encode" : "decode", worst);
        EXPECT_LE(worst, 1e-4f) << (use_encode ? "encode" : "decode");
    }
}

}  // namespace
}  // namespace lctx::nomic_bert_reference_test
