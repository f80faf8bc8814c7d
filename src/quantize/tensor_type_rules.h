// Which type each tensor of a model gets when it is quantized to a file type: llama-quantize's per-tensor
// rules (b4748's llama_tensor_get_type), so that lctx and llama.cpp write the same mixture.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tensor/types.h"

namespace lctx::quantize {

// What the rules need to know about the model (from its metadata and tensor names).
struct ModelFacts {
    std::string arch;         // general.architecture
    int n_layer = 0;          // {arch}.block_count
    int n_head = 0;           // of layer 0
    int n_head_kv = 0;        // of layer 0
    int n_expert = 0;         // {arch}.expert_count (0: dense)
    bool is_70b = false;      // llama.cpp's LLM_TYPE_70B (80 layers, grouped-query attention)
    bool has_output = false;  // an output.weight of its own (else token_embd is the output matrix too)
    int n_attention_wv = 0;   // tensors named *attn_v.weight, *attn_qkv.weight or *attn_kv_b.weight

    int n_gqa() const { return n_head_kv > 0 ? n_head / n_head_kv : 0; }
};

struct RuleOptions {
    int32_t ftype = 0;  // llama_ftype
    GgmlType base = GgmlType::F32;
    std::optional<GgmlType> output_type;      // forced type of output.weight
    std::optional<GgmlType> token_embd_type;  // forced type of token_embd.weight
    bool pure = false;                        // base type everywhere (no mixture, no fallback)
    bool has_imatrix = false;
};

// Whether llama-quantize quantizes a tensor at all: 2-D or larger weights, not norms, gates of experts,
// positional or token-type embeddings, small recurrent / relative-bias matrices.
bool is_quantizable(const std::string &name, int n_dims, bool quantize_output_tensor);

struct TypeChoice {
    GgmlType type;    // what the tensor is written as
    GgmlType wanted;  // before the fallback for rows that are not whole blocks
    bool fallback = false;
};

// The rules keep counters over the tensors they have seen (attn_v and ffn_* by layer), so choose() must be
// called once per quantizable tensor, in file order.
class TensorTypeRules {
  public:
    TensorTypeRules(ModelFacts facts, RuleOptions opts);
    // ne: dimensions, innermost first. Throws lctx::Error when the row cannot be quantized to the chosen type
    // and that type has no fallback.
    TypeChoice choose(const std::string &name, const std::vector<int64_t> &ne);

    int n_fallback() const { return n_fallback_; }
    int n_block_fit() const { return n_block_fit_; }  // tensors whose rows fitted the chosen type

  private:
    GgmlType mixture_type(const std::string &name, int64_t row);
    std::pair<int, int> layer_of(int counter, const std::string &name) const;
    bool use_more_bits(int i_layer, int n_layer) const;

    ModelFacts facts_;
    RuleOptions opts_;
    int i_attention_wv_ = 0;
    int i_ffn_down_ = 0, i_ffn_gate_ = 0, i_ffn_up_ = 0;
    int n_fallback_ = 0;
    int n_block_fit_ = 0;
};

}  // namespace lctx::quantize
