// Synthetic models for benchmarks: a GGUF with random weights in the shape of a real model (llama, qwen2,
// phi3, gemma2, bloom, mamba, bert or t5 family), with the metadata and tokenizer llama.cpp needs, so both
// engines can load the same file.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tensor/types.h"

namespace lctx::synth {

struct Shape {
    std::string name;
    std::string arch = "llama";  // general.architecture: llama, qwen2 (q/k/v biases), phi3 (fused tensors),
                                 // gemma2 (post norms, soft-caps, window), bloom (LayerNorms, ALiBi) or bert
                                 // (an encoder: position and token-type embeddings, post-norm layers) or t5
                                 // (an encoder and a decoder)
    uint32_t n_embd = 0;
    uint32_t n_layer = 0;
    uint32_t n_head = 0;
    uint32_t n_head_kv = 0;
    uint32_t n_ff = 0;
    uint32_t n_ctx_train = 2048;
    float rope_freq_base = 10000.0f;
    float rms_eps = 1e-5f;
    bool tied_output = false;  // no output.weight: the output matrix is token_embd (always for gemma2)
    std::string
        vocab_file;         // file name under fixtures/vocab with the tokenizer.* keys (or a path from there)
    uint32_t head_dim = 0;  // 0: n_embd / n_head
    // gemma2: the sliding window of its even layers and the soft-capping values; phi3: the window of every
    // layer
    uint32_t sliding_window = 0;
    float attn_softcap = 0.0f, final_softcap = 0.0f;
    // mamba (no attention: n_head, n_ff 0): the state-space sizes
    uint32_t ssm_d_conv = 0, ssm_d_inner = 0, ssm_d_state = 0, ssm_dt_rank = 0;
    // bert: the pooling written as bert.pooling_type (llama_pooling_type), and a reranker's classification
    // head (cls, cls.output with their biases)
    int pooling_type = -1;
    bool cls_head = false;
    // t5: n_layer encoder and as many decoder layers, relative-position buckets, and a GELU-gated
    // feed-forward (T5 v1.1, Flan-T5) or a ReLU one without a gate (the original T5)
    uint32_t n_rel_buckets = 0;
    bool ffn_gated = true;

    uint32_t head_size() const { return head_dim ? head_dim : n_head ? n_embd / n_head : 0; }
};

// The known shapes: "tiny", "smollm-135m", "tinyllama-1.1b", "qwen2-tiny", "qwen2-0.5b", "phi3-tiny",
// "phi3-mini", "gemma2-tiny", "gemma2-2b", "bloom-tiny", "mamba-tiny", "mamba-130m", "bge-small",
// "bert-tiny", "bert-rerank-tiny", "nomic-embed-text", "nomic-bert-tiny", "t5-small", "t5-tiny". Null when
// the name is unknown.
const Shape *find_shape(const std::string &name);
std::vector<std::string> shape_names();

// A weight type as asked on the command line: a plain type for every matrix, or a mixture.
struct TypeChoice {
    std::string name;        // "Q4_0", "Q4_K_M", ...
    GgmlType base;           // the type of most matrices
    bool k_mixture = false;  // Q4_K_M: Q6_K for output and some attn_v / ffn_down
    uint32_t file_type = 0;  // general.file_type (llama_ftype)
};
// F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q6_K, Q4_K_M, Q3_K, Q5_K (case-insensitive); false when unknown.
bool parse_type(const std::string &name, TypeChoice *out);
std::vector<std::string> type_names();

struct TensorPlan {
    std::string name;
    std::vector<int64_t> ne;  // innermost first
    GgmlType type;
    GgmlType wanted;       // before the fallback for rows that are not whole blocks
    bool is_norm = false;  // 1-D: filled with values near 1 (a 1-D bias is not a norm: values near 0)
    bool negate = false;   // filled like a norm and written negated (mamba's A = -exp(A_log), near -1)
    size_t nbytes = 0;
};

// The tensors of a model, in file order, with their types. A matrix whose row length is not a multiple
// of the wanted type's block gets llama.cpp's fallback (Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0, then
// F16 when even that does not fit).
std::vector<TensorPlan> plan_tensors(const Shape &shape, uint32_t n_vocab, const TypeChoice &type);

struct Progress {
    uint64_t done_bytes = 0;
    uint64_t total_bytes = 0;
    const std::string *tensor = nullptr;
};

struct Options {
    std::string vocab_path;  // GGUF with the tokenizer.* keys (fixtures/vocab/...)
    uint64_t seed = 42;
    int n_threads = 0;  // 0: hardware concurrency
    std::function<void(const Progress &)> progress;
};

struct Summary {
    std::vector<TensorPlan> tensors;
    uint64_t n_params = 0;
    uint64_t file_bytes = 0;
    int n_fallback = 0;
    uint32_t n_vocab = 0;
};

// Writes the model to `path` tensor by tensor (never the whole model in memory): random N(0, 0.02)
// weights from a seeded generator, quantized with the reference quantizers. Throws lctx::Error.
Summary write_model(const Shape &shape, const TypeChoice &type, const std::string &path, const Options &opts);

// The generator, exposed for tests: fills `n` values of row `row` of the tensor seeded by `tensor_seed`.
uint64_t tensor_seed(uint64_t seed, const std::string &name);
void fill_row(uint64_t tensor_seed, int64_t row, bool is_norm, float *out, int64_t n);

}  // namespace lctx::synth
