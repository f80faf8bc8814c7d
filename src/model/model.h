// A loaded model: the mapped GGUF file, its hyper-parameters, its vocabulary, and views of its
// weights in their stored types (never converted to f32 copies; only 1-D norm vectors are kept as
// f32). The forward pass of each family lives in its own file (llama.cpp, ...).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "kernels/matmul.h"
#include "model/hparams.h"
#include "util/page_buffer.h"

namespace lctx {

class Vocab;

// A 1-D parameter vector (norm weight, bias) in f32.
using ParamVector = std::vector<float>;

struct LayerWeights {
    ParamVector attn_norm;         // [n_embd]
    kernels::WeightView wq;        // [n_head * head_dim_k, n_embd]
    kernels::WeightView wk;        // [n_head_kv * head_dim_k, n_embd]
    kernels::WeightView wv;        // [n_head_kv * head_dim_v, n_embd]
    kernels::WeightView wo;        // [n_embd, n_head * head_dim_v]
    ParamVector ffn_norm;          // [n_embd]
    kernels::WeightView ffn_gate;  // [n_ff, n_embd]
    kernels::WeightView ffn_up;    // [n_ff, n_embd]
    kernels::WeightView ffn_down;  // [n_embd, n_ff]
};

struct ModelWeights {
    kernels::WeightView token_embd;  // [n_vocab, n_embd]
    ParamVector output_norm;         // [n_embd]
    kernels::WeightView output;      // [n_vocab, n_embd] (token_embd when tied)
    ParamVector rope_freqs;          // optional per-pair frequency divisors
    std::vector<LayerWeights> layers;
};

struct ModelLoadOptions {
    bool vocab_only = false;
    // Called with progress in [0, 1] during loading; return false to cancel.
    bool (*progress)(float progress, void *user_data) = nullptr;
    void *progress_user_data = nullptr;
    // Keep matrices of types with an interleaved layout (kernels/interleave.h) in that layout: a copy
    // made once at load, the file's pages of those tensors released. The environment variable
    // LCTX_REPACK=0 turns it off (to compare, or to keep every weight in the shared mapping).
    bool repack = true;
};

class Model {
  public:
    // Opens, validates and binds a GGUF model; throws lctx::Error naming what is wrong.
    static std::unique_ptr<Model> load(const std::string &path, const ModelLoadOptions &opts = {});
    ~Model();

    const HParams &hparams() const { return hparams_; }
    const ModelWeights &weights() const { return weights_; }
    const Vocab &vocab() const { return *vocab_; }
    const gguf::File &file() const { return *file_; }
    // Bytes and parameter count of the weight tensors.
    uint64_t size_bytes() const { return size_bytes_; }
    uint64_t n_params() const { return n_params_; }
    std::string description() const;  // e.g. "llama 260K F32"
    const std::string &path() const { return path_; }

  private:
    Model() = default;
    void bind_weights();
    // Moves eligible matrices into interleaved copies; progress goes from `p0` to 1.
    void repack_weights(const ModelLoadOptions &opts, float p0);

    std::string path_;
    std::unique_ptr<gguf::File> file_;
    HParams hparams_;
    std::unique_ptr<Vocab> vocab_;
    ModelWeights weights_;
    PageBuffer repacked_;  // the interleaved copies the views point into, in the order they are read
    uint64_t size_bytes_ = 0;
    uint64_t n_params_ = 0;
};

}  // namespace lctx
