// Hyper-parameters of a model, read from GGUF metadata under the architecture's prefix
// ("llama.block_count", ...). One struct serves every family; fields a family does not use keep
// their defaults.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/ops.h"

namespace lctx {

namespace gguf {
class File;
}

// Families lctx knows by name (model/families.h says which of them run). Other: an architecture b4748 knows
// (model/architectures.h) that lctx has no family for; only its vocabulary can be loaded.
enum class Arch { Llama, Qwen2, Phi3, Gemma2, Bloom, Bert, NomicBert, T5, Mamba, Other };

// rope.scaling.type as b4748 reads it (llama_rope_scaling_type's values; "linear" when the key is absent).
enum class RopeScaling { None = 0, Linear = 1, Yarn = 2, LongRope = 3 };

const char *arch_name(Arch arch);
// Maps general.architecture to a family that runs; throws lctx::Error naming an architecture without a
// forward pass (listing those that have one) or an unknown one.
Arch arch_from_name(const std::string &name);

struct HParams {
    std::string arch_name;  // general.architecture as written in the file
    Arch arch = Arch::Llama;
    uint32_t n_ctx_train = 0;  // context the model was trained with
    uint32_t n_embd = 0;       // hidden size
    uint32_t n_layer = 0;
    uint32_t n_ff = 0;  // feed-forward hidden size
    uint32_t n_head = 0;
    uint32_t n_head_kv = 0;
    uint32_t n_embd_head_k = 0;  // per-head key size
    uint32_t n_embd_head_v = 0;  // per-head value size
    uint32_t n_vocab = 0;
    float norm_rms_eps = 1e-5f;
    float norm_eps = 1e-5f;
    // The file's RoPE settings (b4748's *_train values): n_rot, base, freq_scale = 1 / (rope.scaling.factor,
    // else rope.scale_linear; 1 when absent or 0), n_ctx_orig = rope.scaling.original_context_length (else
    // n_ctx_train; it also picks LongRoPE's table), mode (per family), attn_factor = rope.scaling.attn_factor
    // (b4748 multiplies the context's yarn_attn_factor by it for every family: phi3 LongRoPE files set it),
    // ext_factor 1 for YaRN. A context resolves what it rotates with from these and its own parameters
    // (context_rope in model/forward.h).
    kernels::RopeParams rope;
    RopeScaling rope_scaling = RopeScaling::Linear;
    bool causal_attn = true;

    // Sliding-window attention: a query at position p sees the keys at positions q with p - q < n_swa
    // (b4748's rule) in the layers whose swa_layers entry is set; 0: no window in any layer. swa_layers is
    // [n_layer] when n_swa > 0, empty otherwise. The context builds a second mask for those layers
    // (ForwardBatch::mask_swa); the cache keeps every position.
    uint32_t n_swa = 0;
    std::vector<bool> swa_layers;
    bool layer_is_swa(uint32_t il) const { return n_swa > 0 && il < swa_layers.size() && swa_layers[il]; }
    float attn_softcap = 0.0f;   // > 0: attention scores = cap * tanh(scores / cap) (gemma2)
    float final_softcap = 0.0f;  // > 0: logits = cap * tanh(logits / cap) (gemma2)
    // ALiBi (bloom): no rotation; the mask holds -|pos_q - pos_k| and head h adds slope_h times it, the
    // slopes from max_alibi_bias (kernels::alibi_slopes).
    bool use_alibi = false;
    float max_alibi_bias = 0.0f;
    // Encoders (bert): <arch>.pooling_type as written (llama_pooling_type: 0 none, 1 mean, 2 cls, 3 last,
    // 4 rank), -1 when the file has none; learned absolute position embeddings, so positions must stay
    // below n_ctx_train (the table's rows); the token-type table's rows (tokenizer.ggml.token_type_count).
    int32_t pooling_type = -1;
    bool abs_pos_embd = false;
    uint32_t n_token_types = 0;
    // Encoder-decoder (t5): n_layer counts the encoder's blocks and n_layer_dec the decoder's (whose
    // self-attention is what the KV cache holds); the attention bias comes from n_rel_buckets
    // relative-position buckets; generation starts from dec_start_token (-1: none in the file; b4748 then
    // uses BOS).
    uint32_t n_layer_dec = 0;
    uint32_t n_rel_buckets = 0;
    int32_t dec_start_token = -1;
    // The layers of the KV cache: the decoder's for an encoder-decoder model, else every layer.
    uint32_t n_layer_cache() const { return n_layer_dec > 0 ? n_layer_dec : n_layer; }

    // Selective state-space layers (mamba): no attention; each sequence carries a recurrent state instead of
    // cached keys and values. Per layer: x, z = in(h) of d_inner each; a causal depthwise convolution of
    // width d_conv over x; dt, B, C = x_proj(x) of dt_rank, d_state, d_state (RMS-normalized when
    // dt_b_c_rms).
    bool recurrent = false;
    uint32_t ssm_d_conv = 0;
    uint32_t ssm_d_inner = 0;
    uint32_t ssm_d_state = 0;
    uint32_t ssm_dt_rank = 0;
    bool ssm_dt_b_c_rms = false;
    // A sequence's recurrent state per layer: the convolution's last d_conv - 1 inputs ([d_inner][d_conv -
    // 1]) and the SSM state ([d_inner][d_state]); b4748 stores them in the K and V rows of the sequence's
    // cell.
    uint32_t n_embd_k_s() const { return ssm_d_conv > 0 ? (ssm_d_conv - 1) * ssm_d_inner : 0; }
    uint32_t n_embd_v_s() const { return ssm_d_state * ssm_d_inner; }

    uint32_t n_embd_k_gqa() const { return n_embd_head_k * n_head_kv; }
    uint32_t n_embd_v_gqa() const { return n_embd_head_v * n_head_kv; }
    uint32_t n_gqa() const { return n_head / n_head_kv; }

    // Reads the hyper-parameters of `arch` from the file and validates them (non-zero sizes,
    // heads dividing evenly, rotary dims within the head); throws lctx::Error.
    static HParams load(const gguf::File &file);
    // What a vocab-only load reads, as b4748: the architecture (any b4748 knows) and the vocabulary size;
    // every other field keeps its default (zero sizes).
    static HParams load_vocab_only(const gguf::File &file);
};

// b4748's size class of a model ("1B", "7B", "70B", ...) from its family's rules on the hyper-parameters;
// "?B" when no rule matches (also for a vocab-only load).
const char *model_size_name(const HParams &hp);

}  // namespace lctx
