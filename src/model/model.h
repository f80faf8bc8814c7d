// A loaded model: the mapped GGUF file, its hyper-parameters, its vocabulary, and views of its
// weights in their stored types (never converted to f32 copies; only 1-D norm vectors are kept as
// f32). The forward pass of each family lives in its own file (llama.cpp, qwen2.cpp, ...; families.h).
#pragma once
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "gguf/gguf.h"
#include "kernels/matmul.h"
#include "model/hparams.h"
#include "model/weight_binder.h"
#include "util/page_buffer.h"

namespace lctx {

class Vocab;

// The weights of every family in one layout; each family's bind_<family> (model/families.h) fills the fields
// its forward pass reads. Optional tensors (biases, extra norms) are empty when the file has none: applying
// them then costs nothing. A fused tensor is bound as row ranges of the one matrix: attn_qkv (rows q | k | v)
// as wq, wk, wv, and phi3's ffn_up (rows gate | up) as ffn_gate, ffn_up; the forward passes then read them
// like separate matrices (no copy of the fused product's parts), and repack_weights interleaves each range.
struct LayerWeights {
    ParamVector attn_norm;                         // [n_embd]
    ParamVector attn_norm_b;                       // optional LayerNorm bias (bloom)
    kernels::WeightView wq;                        // [n_head * head_dim_k, n_embd]
    kernels::WeightView wk;                        // [n_head_kv * head_dim_k, n_embd]
    kernels::WeightView wv;                        // [n_head_kv * head_dim_v, n_embd]
    kernels::WeightView wo;                        // [n_embd, n_head * head_dim_v]
    ParamVector bq, bk, bv, bo;                    // optional biases of the four projections (a fused
                                                   // attn_qkv.bias is split into bq, bk, bv)
    ParamVector attn_post_norm;                    // optional norm of the attention output (gemma2)
    ParamVector ffn_norm;                          // [n_embd]
    ParamVector ffn_norm_b;                        // optional LayerNorm bias (bloom)
    kernels::WeightView ffn_gate;                  // [n_ff, n_embd]; empty for a plain (ungated) FFN
    kernels::WeightView ffn_up;                    // [n_ff, n_embd]
    kernels::WeightView ffn_down;                  // [n_embd, n_ff]
    ParamVector ffn_gate_b, ffn_up_b, ffn_down_b;  // optional biases
    ParamVector ffn_post_norm;                     // optional norm of the feed-forward output (gemma2)
    // Post-norm encoders (bert): LayerNorms of the residual sums, after attention and after the layer.
    ParamVector attn_out_norm, attn_out_norm_b;    // [n_embd]
    ParamVector layer_out_norm, layer_out_norm_b;  // [n_embd]
    // t5: the relative-position attention bias [n_rel_buckets][n_head] (only the first layer has one; every
    // layer of that stack uses it), and the decoder's cross-attention over the encoder output.
    ParamVector attn_rel_b;
    ParamVector cross_attn_norm;                       // [n_embd]
    kernels::WeightView cross_wq, cross_wk, cross_wv;  // as wq, wk, wv (k, v read the encoder output)
    kernels::WeightView cross_wo;                      // as wo

    // Selective state-space layer (mamba); shapes in HParams' ssm sizes.
    // The file's ssm_in (rows x | z) and ssm_x (rows dt | B | C) are bound as row ranges, like a fused q/k/v.
    kernels::WeightView ssm_in_x;  // [d_inner, n_embd]
    kernels::WeightView ssm_in_z;  // [d_inner, n_embd]
    ParamVector ssm_conv1d;        // [d_inner][d_conv] depthwise convolution, oldest input first
    ParamVector ssm_conv1d_b;      // [d_inner]
    kernels::WeightView ssm_x_dt;  // [dt_rank, d_inner]
    kernels::WeightView ssm_x_bc;  // [2 * d_state, d_inner]: rows B | C
    kernels::WeightView ssm_dt;    // [d_inner, dt_rank]
    ParamVector ssm_dt_b;          // [d_inner]
    ParamVector ssm_a;             // [d_inner][d_state], already -exp(A_log)
    ParamVector ssm_d;             // [d_inner] skip connection
    kernels::WeightView ssm_out;   // [n_embd, d_inner]
};

struct ModelWeights {
    kernels::WeightView token_embd;  // [n_vocab, n_embd]
    ParamVector token_embd_norm;     // optional norm right after the lookup (bloom), [n_embd]
    ParamVector token_embd_norm_b;   // its bias
    ParamVector output_norm;         // [n_embd]
    ParamVector output_norm_b;       // optional LayerNorm bias (bloom)
    kernels::WeightView output;      // [n_vocab, n_embd] (token_embd when tied)
    ParamVector rope_freqs;          // optional per-pair frequency divisors, [n_rot / 2]
    // LongRoPE (phi3): per-pair divisors for contexts beyond rope.n_ctx_orig per sequence (long) and within
    // it (short), [head_dim / 2] each (b4748's size; the rotation reads n_rot / 2), optional; layer_rope
    // picks one.
    ParamVector rope_long, rope_short;
    // Encoders (bert): learned absolute positions and token types (every token is type 0, as b4748).
    kernels::WeightView pos_embd;     // [n_ctx_train, n_embd]
    kernels::WeightView token_types;  // [n_token_types, n_embd]
    // Classification head of rerankers (rank pooling): score = cls_out . tanh(cls h_cls + cls_b) + cls_out_b
    // over a sequence's CLS hidden state. cls / cls_b empty when the model has no head; cls_out optional.
    kernels::WeightView cls;           // [n_cls, n_embd]
    ParamVector cls_b;                 // [n_cls]
    kernels::WeightView cls_out;       // [1, n_cls]
    ParamVector cls_out_b;             // [1]
    std::vector<LayerWeights> layers;  // the decoder's, for an encoder-decoder model
    // An encoder-decoder model's encoder (t5): its layers and final norm.
    std::vector<LayerWeights> enc_layers;
    ParamVector enc_output_norm;
};

struct ModelLoadOptions {
    bool vocab_only = false;
    // Called with progress in [0, 1] during loading; return false to cancel.
    bool (*progress)(float progress, void *user_data) = nullptr;
    void *progress_user_data = nullptr;
    // Copy every matrix once at load into one huge-page buffer, in the interleaved layout
    // (kernels/interleave.h) where its type has one and as it is otherwise, the file's pages of those
    // tensors released. The environment variable
    // LCTX_REPACK=0 turns it off (to compare, or to keep every weight in the shared mapping).
    bool repack = true;
    // Metadata values that replace the file's for this load (llama_model_params.kv_overrides,
    // `--override-kv`): scalars only; the file's own keys still show in metadata queries.
    std::vector<gguf::KeyValue> overrides;
};

class Model {
  public:
    // Opens, validates and binds a GGUF model; throws lctx::Error naming what is wrong.
    // The first part of a split model brings its other parts, found by name (gguf/gguf_split.h).
    static std::unique_ptr<Model> load(const std::string &path, const ModelLoadOptions &opts = {});
    // A model from explicit files in part order (a split model's parts; or one plain file).
    static std::unique_ptr<Model> load_parts(const std::vector<std::string> &paths,
                                             const ModelLoadOptions &opts = {});
    ~Model();

    const HParams &hparams() const { return hparams_; }
    const ModelWeights &weights() const { return weights_; }
    const Vocab &vocab() const { return *vocab_; }
    // The model's file: for a split model, the parts joined as one tensor directory (gguf::File::join).
    const gguf::File &file() const { return *file_; }
    // Bytes and element count of all the file's tensors (as b4748 counts them, also for vocab-only loads).
    uint64_t size_bytes() const { return size_bytes_; }
    uint64_t n_params() const { return n_params_; }
    // b4748's llama_model_desc: "<arch> <size class> <file type>", e.g. "llama 7B Q4_0" or
    // "llama ?B all F32 (guessed)"; empty for a vocab-only load (b4748 never sets it there).
    std::string description() const;
    // The file's llama_ftype: general.file_type, else guessed from its most common tensor type, with
    // LLAMA_FTYPE_GUESSED (1024) set.
    int64_t file_type() const { return ftype_; }
    bool vocab_only() const { return vocab_only_; }
    const std::string &path() const { return path_; }

    // A matrix of the file as the forward passes read it (LoRA adapters find their base matrices here): the
    // views in weights() that hold its rows, each with the first row of the file's tensor it holds (the q, k
    // and v ranges of a fused attn_qkv). Empty for a tensor that is no matrix of a product or lookup.
    struct MatrixPart {
        const kernels::WeightView *view;
        int64_t first_row;
    };
    std::span<const MatrixPart> matrix_parts(const std::string &name) const;

  private:
    Model() = default;
    static std::unique_ptr<Model> load_file(std::unique_ptr<gguf::File> file, const std::string &path,
                                            const ModelLoadOptions &opts);
    // The family's bind_<family> (model/families.h) declares the tensors; unbound ones are refused.
    void bind_weights();
    void count_tensors();
    // Fills matrix_parts_ from the views bind_weights made (before repack_weights moves them).
    void index_matrices();
    // Moves the matrices into copies in huge pages, interleaved where the type has that layout; progress goes
    // from `p0` to 1.
    void repack_weights(const ModelLoadOptions &opts, float p0);

    std::string path_;
    std::unique_ptr<gguf::File> file_;
    HParams hparams_;
    std::unique_ptr<Vocab> vocab_;
    ModelWeights weights_;
    std::unordered_map<std::string, std::vector<MatrixPart>> matrix_parts_;
    PageBuffer repacked_;  // the copies the views point into, in the order they are read
    uint64_t size_bytes_ = 0;
    uint64_t n_params_ = 0;
    int64_t ftype_ = 0;
    bool vocab_only_ = false;
};

}  // namespace lctx
