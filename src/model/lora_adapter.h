// LoRA adapters applied at run time (llama_adapter_lora_*): a GGUF file (general.type = adapter,
// adapter.type = lora) holding, for some matrices W of a base model, a low-rank pair A [rank][n_in] and
// B [n_out][rank]. While an adapter is active with scale `scale`, every product with W becomes
//     y = W x + s B (A x),   s = scale * alpha / rank   (alpha == 0: s = scale)
// added beside the base product (the base weights are never rewritten) and before any bias. The adapter
// keeps its file mapped and views its tensors in their stored types (F32, F16, quantized), so the products
// run through the same kernels as the base model's.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "gguf/gguf.h"
#include "kernels/matmul.h"
#include "kernels/threadpool.h"

namespace lctx {

class Model;
struct ForwardBatch;
struct Projection;
struct ProjectionScratch;

class LoraAdapter {
  public:
    // The low-rank pair of one base matrix as the kernels read it: a [rank rows][n_in], b the B rows of this
    // matrix [n_out rows][rank] (for a row range of a fused tensor, the matching rows of B).
    struct Target {
        kernels::WeightView a;
        kernels::WeightView b;
    };

    // Opens the adapter at `path` and validates it against `base` (architecture, every tensor paired with
    // its base matrix, shapes); throws lctx::Error naming what is wrong. Nothing of `base` changes.
    static std::unique_ptr<LoraAdapter> load(const Model &base, const std::string &path);
    ~LoraAdapter();

    const Model &base() const { return base_; }
    float alpha() const { return alpha_; }
    // s for a user scale: scale * alpha / rank of the pair (alpha == 0: scale).
    float effective_scale(float scale, int64_t rank) const;
    // The pair of base matrix view w (an address inside base().weights()), or null when not adapted.
    const Target *find(const kernels::WeightView *w) const {
        auto it = targets_.find(w);
        return it == targets_.end() ? nullptr : &it->second;
    }
    // The scalar metadata of the file in file order, values as text (llama_model_meta_val_str's rendering).
    const std::vector<std::pair<std::string, std::string>> &meta() const { return meta_; }
    size_t n_pairs() const { return n_pairs_; }

  private:
    explicit LoraAdapter(const Model &base) : base_(base) {}

    const Model &base_;
    std::unique_ptr<gguf::File> file_;
    float alpha_ = 0.0f;
    size_t n_pairs_ = 0;
    std::unordered_map<const kernels::WeightView *, Target> targets_;
    std::vector<std::pair<std::string, std::string>> meta_;
};

// One adapter active on a context, with its user scale (never 0: a zero scale is not applied at all).
struct LoraActive {
    const LoraAdapter *adapter;
    float scale;
};

// y_i += s B (A x) for every projection of `outs` an active adapter has a pair for (project() calls this
// between the base product and the bias). x [n_rows][ldx].
void add_lora_products(std::span<const LoraActive> lora, std::initializer_list<Projection> outs,
                       const float *x, int64_t ldx, int64_t n_rows, kernels::ThreadPool &pool,
                       ProjectionScratch &scratch);

// The embedding lookup's part: x[t] += s B A[token_t] for the batch's tokens (token_embd's A is stored
// transposed, one row of `rank` values per token). x [n_tokens][n_embd].
void add_lora_embeddings(std::span<const LoraActive> lora, const kernels::WeightView *token_embd,
                         const ForwardBatch &b, int64_t n_embd, float *x);

}  // namespace lctx
