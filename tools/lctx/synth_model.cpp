#include "synth_model.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <thread>

#include "gguf/gguf.h"
#include "util/atomic_file.h"
#include "util/error.h"

namespace lctx::synth {

namespace {

Shape make_shape(const char *name, uint32_t n_embd, uint32_t n_layer, uint32_t n_head, uint32_t n_head_kv,
                 uint32_t n_ff, uint32_t n_ctx, bool tied, const char *vocab, const char *arch = "llama",
                 float rope_base = 10000.0f, float rms_eps = 1e-5f) {
    Shape s;
    s.name = name;
    s.arch = arch;
    s.rope_freq_base = rope_base;
    s.rms_eps = rms_eps;
    s.n_embd = n_embd;
    s.n_layer = n_layer;
    s.n_head = n_head;
    s.n_head_kv = n_head_kv;
    s.n_ff = n_ff;
    s.n_ctx_train = n_ctx;
    s.tied_output = tied;
    s.vocab_file = vocab;
    return s;
}

Shape gemma2(const char *name, uint32_t n_embd, uint32_t n_layer, uint32_t n_head, uint32_t n_head_kv,
             uint32_t head_dim, uint32_t n_ff, uint32_t n_ctx, uint32_t window) {
    Shape s =
        make_shape(name, n_embd, n_layer, n_head, n_head_kv, n_ff, n_ctx, true, "ggml-vocab-llama-spm.gguf");
    s.arch = "gemma2";
    s.head_dim = head_dim;
    s.sliding_window = window;
    s.attn_softcap = 50.0f;
    s.final_softcap = 30.0f;
    s.rms_eps = 1e-6f;
    return s;
}

Shape phi3(const char *name, uint32_t n_embd, uint32_t n_layer, uint32_t n_head, uint32_t n_ff,
           uint32_t n_ctx, uint32_t window) {
    Shape s = make_shape(name, n_embd, n_layer, n_head, n_head, n_ff, n_ctx, false, "ggml-vocab-phi-3.gguf",
                         "phi3");
    s.sliding_window = window;
    return s;
}

Shape bloom(const char *name, uint32_t n_embd, uint32_t n_layer, uint32_t n_head, uint32_t n_ff,
            uint32_t n_ctx) {
    Shape s =
        make_shape(name, n_embd, n_layer, n_head, n_head, n_ff, n_ctx, true, "ggml-vocab-llama-spm.gguf");
    s.arch = "bloom";
    return s;
}

Shape mamba(const char *name, uint32_t n_embd, uint32_t n_layer, uint32_t d_inner, uint32_t dt_rank,
            const char *vocab) {
    Shape s = make_shape(name, n_embd, n_layer, 0, 0, 0, 1048576, true, vocab, "mamba");
    s.ssm_d_conv = 4;
    s.ssm_d_inner = d_inner;
    s.ssm_d_state = 16;
    s.ssm_dt_rank = dt_rank;
    return s;
}

// An encoder with the bge vocabulary (WordPiece, [CLS] ... [SEP]), LayerNorm epsilon 1e-12 as BERT's.
Shape bert(const char *name, uint32_t n_embd, uint32_t n_layer, uint32_t n_head, uint32_t n_ff,
           uint32_t n_ctx, int pooling, bool cls_head) {
    Shape s = make_shape(name, n_embd, n_layer, n_head, n_head, n_ff, n_ctx, false,
                         "ggml-vocab-bert-bge.gguf", "bert", 10000.0f, 1e-12f);
    s.pooling_type = pooling;
    s.cls_head = cls_head;
    return s;
}

Shape nomic_bert(const char *name, uint32_t n_embd, uint32_t n_layer, uint32_t n_head, uint32_t n_ff,
                 uint32_t n_ctx) {
    Shape s = bert(name, n_embd, n_layer, n_head, n_ff, n_ctx, 1, false);
    s.arch = "nomic-bert";
    s.rope_freq_base = 1000.0f;
    return s;
}

// T5 with the real T5 vocabulary (SentencePiece unigram, 32128 tokens) of the T5 golden fixtures; head size
// 64 as every T5, RMS epsilon 1e-6, 32 relative-position buckets, the output matrix tied to the embedding
// (as t5-small's; llama.cpp then skips T5's rescale, and lctx with it).
Shape t5(const char *name, uint32_t n_embd, uint32_t n_layer, uint32_t n_head, uint32_t n_ff, bool gated) {
    Shape s = make_shape(name, n_embd, n_layer, n_head, n_head, n_ff, 512, true,
                         "../golden-t5/vocab/ggml-vocab-t5.gguf", "t5", 10000.0f, 1e-6f);
    s.head_dim = 64;
    s.n_rel_buckets = 32;
    s.ffn_gated = gated;
    return s;
}

const std::vector<Shape> &shapes() {
    static const std::vector<Shape> all = {
        // Small enough for tests; rows of 256 so every type quantizes without a fallback.
        make_shape("tiny", 256, 2, 4, 2, 512, 512, false, "ggml-vocab-llama-spm.gguf"),
        // HuggingFaceTB/SmolLM-135M; the GPT-2 vocabulary stands in for its own (49152 -> 50257 tokens).
        make_shape("smollm-135m", 576, 30, 9, 3, 1536, 2048, true, "ggml-vocab-gpt-2.gguf"),
        // TinyLlama/TinyLlama-1.1B: the llama SPM vocabulary it was trained with.
        make_shape("tinyllama-1.1b", 2048, 22, 32, 4, 5632, 2048, false, "ggml-vocab-llama-spm.gguf"),
        // A qwen2 small enough for tests: q/k/v biases, NeoX rope, the GPT-2 BPE vocabulary.
        make_shape("qwen2-tiny", 256, 2, 4, 2, 512, 512, false, "ggml-vocab-gpt-2.gguf", "qwen2", 1e6f,
                   1e-6f),
        // Qwen/Qwen2-0.5B (tied output). The fixtures hold no Qwen2 vocabulary: the GPT-2 BPE one (50257
        // tokens) stands in for its 151936, so the output product is a third of the real one.
        make_shape("qwen2-0.5b", 896, 24, 14, 2, 4864, 32768, true, "ggml-vocab-gpt-2.gguf", "qwen2", 1e6f,
                   1e-6f),
        // A phi3 small enough for tests: fused q|k|v and gate|up, Phi-3's vocabulary, a window of 8
        // positions.
        phi3("phi3-tiny", 256, 2, 4, 512, 512, 8),
        // microsoft/Phi-3-mini-4k-instruct with its own vocabulary (32064 tokens): fused attn_qkv and gate|up
        // ffn_up, a sliding window of 2047 in every layer.
        phi3("phi3-mini", 3072, 32, 32, 8192, 4096, 2047),
        // google/gemma-2-2b: head size 256 (8 heads of 256 on a 2304 stream), window 4096 on the even layers,
        // caps 50 / 30. Gemma's own 256000-token vocabulary is not in fixtures/vocab; the llama SPM one
        // (32000)
        // stands in, which makes the tied output matrix 8x smaller than the real model's.
        gemma2("gemma2-2b", 2304, 26, 8, 4, 256, 9216, 8192, 4096),
        // Small gemma2 and bloom models for tests (head size 128, not 256 / 4, in the gemma2 one).
        gemma2("gemma2-tiny", 256, 2, 4, 2, 128, 512, 512, 16),
        bloom("bloom-tiny", 256, 2, 4, 1024, 512),
        // A mamba small enough for tests, and state-spaces/mamba-130m (tied output; the GPT-2 vocabulary
        // stands in for its GPT-NeoX one, 50257 tokens instead of 50280).
        mamba("mamba-tiny", 256, 2, 512, 16, "ggml-vocab-llama-spm.gguf"),
        mamba("mamba-130m", 768, 24, 1536, 48, "ggml-vocab-gpt-2.gguf"),
        // BAAI/bge-small-en-v1.5: 12 layers of 384 (12 heads), feed-forward 1536, 512 positions, CLS pooling.
        bert("bge-small", 384, 12, 12, 1536, 512, 2, false),
        // A reranker of bge-small's size (rank pooling over a classification head): /v1/rerank's throughput.
        bert("bge-rerank-small", 384, 12, 12, 1536, 512, 4, true),
        // Small encoders for tests: a bge-like one, and a reranker (rank pooling over a classification head).
        bert("bert-tiny", 64, 2, 4, 128, 128, 2, false),
        bert("bert-rerank-tiny", 64, 2, 4, 128, 128, 4, true),
        // nomic-ai/nomic-embed-text-v1.5 (nomic-bert: rotary positions with base 1000, fused q|k|v, SwiGLU,
        // mean pooling), and a small one for tests.
        nomic_bert("nomic-embed-text", 768, 12, 12, 3072, 2048),
        nomic_bert("nomic-bert-tiny", 64, 2, 4, 128, 128),
        // google-t5/t5-small: 6 encoder and 6 decoder layers of 512, 8 heads of 64, a ReLU feed-forward of
        // 2048. A gated one small enough for tests (the Flan-T5 feed-forward).
        t5("t5-small", 512, 6, 8, 2048, false),
        t5("t5-tiny", 128, 2, 2, 256, true),
    };
    return all;
}

struct TypeEntry {
    const char *name;
    GgmlType base;
    bool mixture;
    uint32_t file_type;  // llama_ftype
};
// llama_ftype ids: ALL_F32 0, MOSTLY_F16 1, Q4_0 2, Q8_0 7, Q3_K_S 11, Q4_K_S 14, Q5_K_S 16 (the
// closest to a pure K type), Q4_K_M 15, Q6_K 18, BF16 32.
constexpr TypeEntry kTypes[] = {
    {"F32", GgmlType::F32, false, 0},    {"F16", GgmlType::F16, false, 1},
    {"BF16", GgmlType::BF16, false, 32}, {"Q8_0", GgmlType::Q8_0, false, 7},
    {"Q4_0", GgmlType::Q4_0, false, 2},  {"Q4_K", GgmlType::Q4_K, false, 14},
    {"Q6_K", GgmlType::Q6_K, false, 18}, {"Q4_K_M", GgmlType::Q4_K, true, 15},
    {"Q3_K", GgmlType::Q3_K, false, 11}, {"Q5_K", GgmlType::Q5_K, false, 16},
};

// llama.cpp's rule for which layers of a K-quant mixture get more bits: the first and last eighth, and
// every third layer in between.
bool use_more_bits(int i, int n) {
    return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
}

// The type llama.cpp falls back to when a row is not a whole number of the wanted type's blocks.
GgmlType fallback_type(GgmlType wanted, int64_t row) {
    if (row % type_traits(wanted).block_size == 0) return wanted;
    GgmlType t = GgmlType::F16;
    switch (wanted) {
        case GgmlType::Q4_K:
            t = GgmlType::Q5_0;
            break;
        case GgmlType::Q5_K:
            t = GgmlType::Q5_1;
            break;
        case GgmlType::Q6_K:
            t = GgmlType::Q8_0;
            break;
        case GgmlType::Q2_K:
        case GgmlType::Q3_K:
        case GgmlType::IQ4_XS:
            t = GgmlType::IQ4_NL;
            break;
        default:
            t = GgmlType::F16;
            break;
    }
    if (row % type_traits(t).block_size != 0) t = GgmlType::F16;
    return t;
}

uint64_t splitmix64(uint64_t &state) {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

// xoshiro256** (Blackman & Vigna): fast, and good enough for weights nobody reads.
struct Rng {
    uint64_t s[4];
    explicit Rng(uint64_t seed) {
        for (uint64_t &x : s) x = splitmix64(seed);
    }
    static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
    uint64_t next() {
        const uint64_t r = rotl(s[1] * 5, 7) * 9;
        const uint64_t t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = rotl(s[3], 45);
        return r;
    }
};

void put_bytes(std::vector<uint8_t> &out, const void *p, size_t n) {
    const uint8_t *b = static_cast<const uint8_t *>(p);
    out.insert(out.end(), b, b + n);
}
template <typename T>
void put(std::vector<uint8_t> &out, T v) {
    put_bytes(out, &v, sizeof v);
}

}  // namespace

const Shape *find_shape(const std::string &name) {
    for (const Shape &s : shapes())
        if (s.name == name) return &s;
    return nullptr;
}

std::vector<std::string> shape_names() {
    std::vector<std::string> v;
    for (const Shape &s : shapes()) v.push_back(s.name);
    return v;
}

bool parse_type(const std::string &name, TypeChoice *out) {
    std::string up = name;
    for (char &c : up) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    for (const TypeEntry &e : kTypes)
        if (up == e.name) {
            *out = TypeChoice{e.name, e.base, e.mixture, e.file_type};
            return true;
        }
    return false;
}

std::vector<std::string> type_names() {
    std::vector<std::string> v;
    for (const TypeEntry &e : kTypes) v.push_back(e.name);
    return v;
}

namespace {

void finish_sizes(std::vector<TensorPlan> &plan) {
    for (TensorPlan &t : plan) {
        size_t n = row_size(t.type, t.ne[0]);
        for (size_t d = 1; d < t.ne.size(); ++d) n *= static_cast<size_t>(t.ne[d]);
        t.nbytes = n;
    }
}

// bert after token_embd, in the order llama.cpp's converter writes it. The position and token-type tables
// stay F32 (llama-quantize leaves them as converted); a mixture's extra bits go to nothing (it has no output
// matrix).
template <typename Matrix, typename Norm, typename Bias>
void plan_bert(const Shape &s, GgmlType base, Matrix matrix, Norm norm, Bias bias) {
    const int64_t e = s.n_embd, ff = s.n_ff;
    const bool nomic = s.arch == "nomic-bert";  // rotary positions, fused q|k|v, SwiGLU, no biases
    matrix("token_types.weight", e, 2, GgmlType::F32);
    if (!nomic) matrix("position_embd.weight", e, s.n_ctx_train, GgmlType::F32);
    norm("token_embd_norm.weight");
    bias("token_embd_norm.bias", e);
    for (uint32_t il = 0; il < s.n_layer; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        if (nomic) {
            matrix(p + "attn_qkv.weight", e, 3 * e, base);
            matrix(p + "attn_output.weight", e, e, base);
            norm(p + "attn_output_norm.weight");
            bias(p + "attn_output_norm.bias", e);
            matrix(p + "ffn_up.weight", e, ff, base);
            matrix(p + "ffn_gate.weight", e, ff, base);
            matrix(p + "ffn_down.weight", ff, e, base);
            norm(p + "layer_output_norm.weight");
            bias(p + "layer_output_norm.bias", e);
            continue;
        }
        for (const char *m : {"attn_q", "attn_k", "attn_v", "attn_output"}) {
            matrix(p + m + ".weight", e, e, base);
            bias(p + m + ".bias", e);
        }
        norm(p + "attn_output_norm.weight");
        bias(p + "attn_output_norm.bias", e);
        matrix(p + "ffn_up.weight", e, ff, base);
        bias(p + "ffn_up.bias", ff);
        matrix(p + "ffn_down.weight", ff, e, base);
        bias(p + "ffn_down.bias", e);
        norm(p + "layer_output_norm.weight");
        bias(p + "layer_output_norm.bias", e);
    }
    if (s.cls_head) {
        matrix("cls.weight", e, e, base);
        bias("cls.bias", e);
        matrix("cls.output.weight", e, 1, base);
        bias("cls.output.bias", 1);
    }
}

// t5 after token_embd, in the order llama.cpp's converter writes it: the encoder's layers and norm, then the
// decoder's (with cross-attention), the output matrix last. The bias tables (heads x buckets, only in the
// first layer of each stack) stay F32 as llama-quantize leaves them.
template <typename Matrix, typename Norm>
void plan_t5(const Shape &s, GgmlType base, Matrix matrix, Norm norm) {
    const int64_t e = s.n_embd, ff = s.n_ff, inner = int64_t(s.head_size()) * s.n_head;
    for (const char *stack : {"enc", "dec"}) {
        const bool dec = stack[0] == 'd';
        for (uint32_t il = 0; il < s.n_layer; ++il) {
            const std::string p = std::string(stack) + ".blk." + std::to_string(il) + ".";
            norm(p + "attn_norm.weight");
            if (il == 0) matrix(p + "attn_rel_b.weight", s.n_head, s.n_rel_buckets, GgmlType::F32);
            for (const char *m : {"attn_q", "attn_k", "attn_v"}) matrix(p + m + ".weight", e, inner, base);
            matrix(p + "attn_o.weight", inner, e, base);
            if (dec) {
                norm(p + "cross_attn_norm.weight");
                for (const char *m : {"cross_attn_q", "cross_attn_k", "cross_attn_v"})
                    matrix(p + m + ".weight", e, inner, base);
                matrix(p + "cross_attn_o.weight", inner, e, base);
            }
            norm(p + "ffn_norm.weight");
            if (s.ffn_gated) matrix(p + "ffn_gate.weight", e, ff, base);
            matrix(p + "ffn_up.weight", e, ff, base);
            matrix(p + "ffn_down.weight", ff, e, base);
        }
        norm(std::string(stack) + ".output_norm.weight");
    }
}

}  // namespace

std::vector<TensorPlan> plan_tensors(const Shape &s, uint32_t n_vocab, const TypeChoice &type) {
    const int64_t head_dim = s.head_size();
    const int64_t q_dim = head_dim * s.n_head;
    const int64_t n_embd_kv = head_dim * s.n_head_kv;
    const int64_t e = s.n_embd;
    const int nl = static_cast<int>(s.n_layer);
    const bool is_gemma2 = s.arch == "gemma2", is_bloom = s.arch == "bloom";
    const bool tied = s.tied_output || is_gemma2;  // gemma2 has no output matrix
    std::vector<TensorPlan> plan;
    auto matrix = [&](const std::string &name, int64_t ne0, int64_t ne1, GgmlType wanted) {
        plan.push_back(TensorPlan{name, {ne0, ne1}, fallback_type(wanted, ne0), wanted, false, false, 0});
    };
    auto norm = [&](const std::string &name) {
        plan.push_back(TensorPlan{name, {e}, GgmlType::F32, GgmlType::F32, true, false, 0});
    };
    auto bias = [&](const std::string &name, int64_t n) {  // values near 0
        plan.push_back(TensorPlan{name, {n}, GgmlType::F32, GgmlType::F32, false, false, 0});
    };
    const GgmlType base = type.base;
    // In a mixture the output matrix (token_embd when tied) gets Q6_K, or Q8_0 when its rows are not whole
    // blocks of the base type (llama.cpp's rule for output.weight).
    GgmlType out_type = base;
    if (type.k_mixture) out_type = e % type_traits(base).block_size != 0 ? GgmlType::Q8_0 : GgmlType::Q6_K;
    matrix("token_embd.weight", e, n_vocab, tied ? out_type : base);
    if (s.arch == "bert" || s.arch == "nomic-bert") {
        plan_bert(s, base, matrix, norm, bias);
        finish_sizes(plan);
        return plan;
    }
    if (s.arch == "t5") {
        plan_t5(s, base, matrix, norm);
        if (!tied) matrix("output.weight", e, n_vocab, out_type);
        finish_sizes(plan);
        return plan;
    }
    if (is_bloom) {
        norm("token_embd_norm.weight");
        bias("token_embd_norm.bias", e);
    }
    for (int il = 0; il < nl; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        const bool more = type.k_mixture && use_more_bits(il, nl);
        norm(p + "attn_norm.weight");
        if (s.arch == "mamba") {
            // llama.cpp's quantize keeps the small 2-D ssm_conv1d, ssm_x and ssm_dt (and ssm_a) in F32.
            const int64_t d = s.ssm_d_inner, n = s.ssm_d_state, r = s.ssm_dt_rank;
            matrix(p + "ssm_in.weight", e, 2 * d, base);
            matrix(p + "ssm_conv1d.weight", s.ssm_d_conv, d, GgmlType::F32);
            bias(p + "ssm_conv1d.bias", d);
            matrix(p + "ssm_x.weight", d, r + 2 * n, GgmlType::F32);
            matrix(p + "ssm_dt.weight", r, d, GgmlType::F32);
            bias(p + "ssm_dt.bias", d);
            plan.push_back(TensorPlan{p + "ssm_a", {n, d}, GgmlType::F32, GgmlType::F32, true, true, 0});
            plan.push_back(TensorPlan{p + "ssm_d", {d}, GgmlType::F32, GgmlType::F32, true, false, 0});
            matrix(p + "ssm_out.weight", d, e, more ? GgmlType::Q6_K : base);
            continue;
        }
        if (is_bloom) {
            // llama.cpp's mixture gives the fused q | k | v Q5_K
            bias(p + "attn_norm.bias", e);
            matrix(p + "attn_qkv.weight", e, q_dim + 2 * n_embd_kv, type.k_mixture ? GgmlType::Q5_K : base);
            bias(p + "attn_qkv.bias", q_dim + 2 * n_embd_kv);
            matrix(p + "attn_output.weight", q_dim, e, base);
            bias(p + "attn_output.bias", e);
            norm(p + "ffn_norm.weight");
            bias(p + "ffn_norm.bias", e);
            matrix(p + "ffn_up.weight", e, s.n_ff, base);
            bias(p + "ffn_up.bias", s.n_ff);
            matrix(p + "ffn_down.weight", s.n_ff, e, more ? GgmlType::Q6_K : base);
            bias(p + "ffn_down.bias", e);
            continue;
        }
        if (s.arch == "phi3") {
            // q | k | v rows in one matrix; llama.cpp's Q4_K_M gives it Q5_K.
            matrix(p + "attn_qkv.weight", e, q_dim + 2 * n_embd_kv, type.k_mixture ? GgmlType::Q5_K : base);
        } else {
            matrix(p + "attn_q.weight", e, q_dim, base);
            matrix(p + "attn_k.weight", e, n_embd_kv, base);
            matrix(p + "attn_v.weight", e, n_embd_kv, more ? GgmlType::Q6_K : base);
        }
        if (s.arch == "qwen2") {
            bias(p + "attn_q.bias", q_dim);
            bias(p + "attn_k.bias", n_embd_kv);
            bias(p + "attn_v.bias", n_embd_kv);
        }
        matrix(p + "attn_output.weight", q_dim, e, base);
        if (is_gemma2) norm(p + "post_attention_norm.weight");
        norm(p + "ffn_norm.weight");
        if (s.arch == "phi3") {  // gate rows then up rows in one matrix
            matrix(p + "ffn_up.weight", e, 2 * int64_t(s.n_ff), base);
            matrix(p + "ffn_down.weight", s.n_ff, e, more ? GgmlType::Q6_K : base);
            continue;
        }
        matrix(p + "ffn_gate.weight", e, s.n_ff, base);
        matrix(p + "ffn_down.weight", s.n_ff, e, more ? GgmlType::Q6_K : base);
        matrix(p + "ffn_up.weight", e, s.n_ff, base);
        if (is_gemma2) norm(p + "post_ffw_norm.weight");
    }
    norm("output_norm.weight");
    if (is_bloom) bias("output_norm.bias", e);
    if (!tied) matrix("output.weight", e, n_vocab, out_type);
    finish_sizes(plan);
    return plan;
}

uint64_t tensor_seed(uint64_t seed, const std::string &name) {
    uint64_t h = 0xCBF29CE484222325ull;  // FNV-1a of the name, mixed with the seed
    for (unsigned char c : name) h = (h ^ c) * 0x100000001B3ull;
    uint64_t st = seed ^ h;
    return splitmix64(st);
}

void fill_row(uint64_t tseed, int64_t row, bool is_norm, float *out, int64_t n) {
    Rng rng(tseed + static_cast<uint64_t>(row) * 0xD1B54A32D192ED03ull);
    // Sum of four 16-bit uniforms (Irwin-Hall, variance 4/12 in units of 2^16): close enough to a normal.
    const float scale = std::sqrt(3.0f) / 65536.0f;
    const float sd = 0.02f;
    const float mean = is_norm ? 1.0f : 0.0f;
    for (int64_t i = 0; i < n; ++i) {
        const uint64_t r = rng.next();
        const float sum =
            static_cast<float>((r & 0xFFFF) + ((r >> 16) & 0xFFFF) + ((r >> 32) & 0xFFFF) + (r >> 48));
        out[i] = mean + sd * (sum - 2.0f * 65535.0f) * scale;
    }
}

Summary write_model(const Shape &s, const TypeChoice &type, const std::string &path, const Options &opts) {
    std::unique_ptr<gguf::File> vocab = gguf::File::open(opts.vocab_path);
    const gguf::Value *tokens = vocab->find("tokenizer.ggml.tokens");
    if (!tokens || tokens->type != gguf::ValueType::ARRAY || tokens->array_size() == 0)
        throw Error(opts.vocab_path + ": no tokenizer.ggml.tokens array (not a vocabulary GGUF?)");
    Summary sum;
    sum.n_vocab = static_cast<uint32_t>(tokens->array_size());
    sum.tensors = plan_tensors(s, sum.n_vocab, type);

    // Metadata through our writer (no tensors: the header ends after the key-values), then the tensor infos
    // and data streamed behind it.
    gguf::Writer w;
    const std::string a = s.arch + ".";
    w.set_string("general.architecture", s.arch);
    w.set_string("general.name", "synthetic " + s.name + " " + type.name);
    w.set_u32(a + "context_length", s.n_ctx_train);
    w.set_u32(a + "embedding_length", s.n_embd);
    w.set_u32(a + "block_count", s.n_layer);
    w.set_u32(a + "feed_forward_length", s.n_ff);
    w.set_u32(a + "attention.head_count", s.n_head);
    if (s.arch == "mamba") {  // no attention: the state-space sizes instead
        w.set_u32(a + "ssm.conv_kernel", s.ssm_d_conv);
        w.set_u32(a + "ssm.inner_size", s.ssm_d_inner);
        w.set_u32(a + "ssm.state_size", s.ssm_d_state);
        w.set_u32(a + "ssm.time_step_rank", s.ssm_dt_rank);
        w.set_f32(a + "attention.layer_norm_rms_epsilon", s.rms_eps);
    } else if (s.arch == "bert" || s.arch == "nomic-bert") {
        w.set_u32(a + "attention.head_count_kv", s.n_head_kv);
        w.set_f32(a + "attention.layer_norm_epsilon", s.rms_eps);
        w.set_bool(a + "attention.causal", false);
        if (s.pooling_type >= 0) w.set_u32(a + "pooling_type", static_cast<uint32_t>(s.pooling_type));
        if (s.arch == "nomic-bert") w.set_f32(a + "rope.freq_base", s.rope_freq_base);
    } else if (s.arch == "t5") {  // the epsilon under both names, as llama.cpp's converter writes it
        w.set_u32(a + "decoder_block_count", s.n_layer);
        w.set_u32(a + "attention.head_count_kv", s.n_head_kv);
        w.set_f32(a + "attention.layer_norm_epsilon", s.rms_eps);
        w.set_f32(a + "attention.layer_norm_rms_epsilon", s.rms_eps);
        w.set_u32(a + "attention.relative_buckets_count", s.n_rel_buckets);
        w.set_u32(a + "decoder_start_token_id", 0);  // T5's pad token
    } else if (s.arch == "bloom") {
        w.set_u32(a + "attention.head_count_kv", s.n_head_kv);
        w.set_f32(a + "attention.layer_norm_epsilon", s.rms_eps);
    } else {
        w.set_u32(a + "attention.head_count_kv", s.n_head_kv);
        w.set_u32(a + "rope.dimension_count", s.head_size());
        w.set_f32(a + "attention.layer_norm_rms_epsilon", s.rms_eps);
        w.set_f32(a + "rope.freq_base", s.rope_freq_base);
    }
    if (s.head_dim) {
        w.set_u32(a + "attention.key_length", s.head_dim);
        w.set_u32(a + "attention.value_length", s.head_dim);
    }
    if (s.arch == "gemma2") {
        w.set_u32(a + "attention.sliding_window", s.sliding_window);
        w.set_f32(a + "attn_logit_softcapping", s.attn_softcap);
        w.set_f32(a + "final_logit_softcapping", s.final_softcap);
    }
    w.set_u32(a + "vocab_size", sum.n_vocab);
    if (s.arch == "phi3") {
        w.set_u32(a + "rope.scaling.original_context_length", s.n_ctx_train);
        w.set_u32(a + "attention.sliding_window", s.sliding_window);
    }
    w.set_u32("general.file_type", type.file_type);
    w.set_u32("general.quantization_version", 2);
    for (const gguf::KeyValue &kv : vocab->metadata())
        if (kv.key.rfind("tokenizer.", 0) == 0) w.set(kv.key, kv.value);
    std::vector<uint8_t> head = w.to_bytes();
    const uint64_t n_tensors = sum.tensors.size();
    std::memcpy(head.data() + 8, &n_tensors, sizeof n_tensors);  // after magic and version

    constexpr size_t kAlign = gguf::kDefaultAlignment;
    auto aligned = [](uint64_t x) { return (x + kAlign - 1) / kAlign * kAlign; };
    uint64_t offset = 0;
    for (const TensorPlan &t : sum.tensors) {
        put<uint64_t>(head, t.name.size());
        put_bytes(head, t.name.data(), t.name.size());
        put<uint32_t>(head, static_cast<uint32_t>(t.ne.size()));
        for (int64_t d : t.ne) put<uint64_t>(head, static_cast<uint64_t>(d));
        put<int32_t>(head, static_cast<int32_t>(t.type));
        put<uint64_t>(head, offset);
        offset += aligned(t.nbytes);
        if (t.type != t.wanted) ++sum.n_fallback;
        int64_t n = 1;
        for (int64_t d : t.ne) n *= d;
        sum.n_params += static_cast<uint64_t>(n);
    }
    head.resize(aligned(head.size()), 0);

    // Written whole or not at all; refuses devices, FIFOs and directories (AtomicFile).
    AtomicFile f(path);
    auto write = [&](const void *p, size_t n) { f.write(p, n); };
    write(head.data(), head.size());

    const int n_threads = opts.n_threads > 0
                              ? opts.n_threads
                              : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    Progress prog;
    prog.total_bytes = offset;
    std::vector<uint8_t> chunk;  // [rows_per_chunk][row bytes]: one chunk of quantized rows
    const uint8_t zeros[kAlign] = {};
    for (const TensorPlan &t : sum.tensors) {
        prog.tensor = &t.name;
        const int64_t ne0 = t.ne[0];
        const int64_t n_rows = t.ne.size() > 1 ? t.ne[1] : 1;
        const size_t rbytes = row_size(t.type, ne0);
        const uint64_t tseed = tensor_seed(opts.seed, t.name);
        // About 8 MiB of output per chunk keeps memory flat and progress smooth.
        const int64_t rows_per_chunk = std::max<int64_t>(1, static_cast<int64_t>((8u << 20) / rbytes));
        for (int64_t r0 = 0; r0 < n_rows; r0 += rows_per_chunk) {
            const int64_t nr = std::min(rows_per_chunk, n_rows - r0);
            chunk.resize(static_cast<size_t>(nr) * rbytes);
            auto work = [&](int ith) {
                std::vector<float> row(static_cast<size_t>(ne0));  // [ne0]
                for (int64_t r = ith; r < nr; r += n_threads) {
                    fill_row(tseed, r0 + r, t.is_norm, row.data(), ne0);
                    if (t.negate)
                        for (float &v : row) v = -v;
                    quantize_row(t.type, row.data(), chunk.data() + static_cast<size_t>(r) * rbytes, ne0);
                }
            };
            if (n_threads == 1 || nr < 2) {
                work(0);
            } else {
                std::vector<std::thread> pool;
                for (int i = 1; i < n_threads; ++i) pool.emplace_back(work, i);
                work(0);
                for (std::thread &th : pool) th.join();
            }
            write(chunk.data(), chunk.size());
            prog.done_bytes += chunk.size();
            if (opts.progress) opts.progress(prog);
        }
        const size_t pad = aligned(t.nbytes) - t.nbytes;
        write(zeros, pad);
        prog.done_bytes += pad;
    }
    f.commit();
    sum.file_bytes = head.size() + offset;
    return sum;
}

}  // namespace lctx::synth
