#include "model/hparams.h"

#include <cmath>

#include "gguf/gguf.h"
#include "model/architectures.h"
#include "model/families.h"
#include "util/error.h"

namespace lctx {

const char *arch_name(Arch arch) {
    const Family *f = find_family(arch);
    return f ? f->name.data() : "other";
}

Arch arch_from_name(const std::string &name) {
    const Family *f = find_family(name);
    if (f && f->runs()) return f->arch;
    if (f || find_architecture(name))
        throw Error("lctx has no forward pass for the '" + name + "' architecture yet (it runs: " +
                    running_family_names() + "); its vocabulary loads with vocab_only");
    throw Error("unknown model architecture '" + name + "'");
}

namespace {

uint32_t get_u32(const gguf::File &f, const std::string &key, bool required, uint32_t def = 0) {
    std::optional<int64_t> v = f.get_int(key);
    if (!v) {
        if (required) throw Error("model metadata is missing '" + key + "'");
        return def;
    }
    if (*v < 0 || *v > static_cast<int64_t>(UINT32_MAX))
        throw Error("model metadata '" + key + "' = " + std::to_string(*v) + " is out of range");
    return static_cast<uint32_t>(*v);
}

float get_f32(const gguf::File &f, const std::string &key, float def) {
    std::optional<double> v = f.get_float(key);
    return v ? static_cast<float>(*v) : def;
}

}  // namespace

namespace {

// The vocabulary size: <arch>.vocab_size, else the token list's length (the output matrix is checked against
// it).
uint32_t vocab_size(const gguf::File &f, const std::string &p) {
    uint32_t n = 0;
    if (const gguf::Value *toks = f.find("tokenizer.ggml.tokens"))
        n = static_cast<uint32_t>(toks->array_size());
    return get_u32(f, p + "vocab_size", false, n);
}

// <arch>.decoder_start_token_id (read for vocabulary-only loads too, as b4748 does); -1 when absent or not a
// token of the vocabulary.
int32_t decoder_start_token(const gguf::File &f, const std::string &p, uint32_t n_vocab) {
    const std::optional<int64_t> v = f.get_int(p + "decoder_start_token_id");
    return v && *v >= 0 && *v < static_cast<int64_t>(n_vocab) ? static_cast<int32_t>(*v) : -1;
}

HParams load_arch(const gguf::File &f) {
    HParams hp;
    std::optional<std::string> arch = f.get_string("general.architecture");
    if (!arch) throw Error("model metadata is missing 'general.architecture'");
    hp.arch_name = *arch;
    hp.arch = arch_from_name(*arch);
    return hp;
}

}  // namespace

HParams HParams::load_vocab_only(const gguf::File &f) {
    HParams hp;
    std::optional<std::string> arch = f.get_string("general.architecture");
    if (!arch) throw Error("model metadata is missing 'general.architecture'");
    if (!find_architecture(*arch)) throw Error("unknown model architecture '" + *arch + "'");
    hp.arch_name = *arch;
    const Family *fam = find_family(*arch);
    hp.arch = fam ? fam->arch : Arch::Other;
    hp.n_vocab = vocab_size(f, hp.arch_name + ".");
    hp.dec_start_token = decoder_start_token(f, hp.arch_name + ".", hp.n_vocab);
    return hp;
}

const char *model_size_name(const HParams &hp) {
    switch (hp.arch) {
        case Arch::Llama:  // b4748's rules for llama without experts (lctx loads none)
            switch (hp.n_layer) {
                case 16:
                case 22:
                    return "1B";
                case 26:
                case 28:
                    return "3B";
                case 32:  // granite's vocabulary has 49152 tokens
                    return hp.n_vocab == 49152 ? "3B" : hp.n_vocab < 40000 ? "7B" : "8B";
                case 36:
                    return "8B";
                case 40:
                    return "13B";
                case 48:
                    return "34B";
                case 60:
                    return "30B";
                case 80:
                    return hp.n_head == hp.n_head_kv ? "65B" : "70B";
                default:
                    return "?B";
            }
        case Arch::Qwen2:  // b4748's rules (Qwen2-0.5B, n_embd 896, is "1B" by them; 1024 was Qwen1.5's)
            switch (hp.n_layer) {
                case 24:
                    return hp.n_embd == 1024 ? "0.5B" : "1B";
                case 28:
                    return hp.n_embd == 1536 ? "1.5B" : "7B";
                case 32:
                    return "7B";
                case 36:
                    return "3B";
                case 40:
                    return hp.n_head == 20 ? "4B" : "13B";
                case 48:
                    return "14B";
                case 64:
                    return "32B";
                case 80:
                    return "70B";
                default:
                    return "?B";
            }
        case Arch::Phi3:
            switch (hp.n_layer) {
                case 24:
                    return "1B";
                case 32:
                    return "3B";
                case 40:
                    return "14B";
                default:
                    return "?B";
            }
        case Arch::Gemma2:
            switch (hp.n_layer) {
                case 26:
                    return "2B";
                case 42:
                    return "9B";
                case 46:
                    return "27B";
                default:
                    return "?B";
            }
        case Arch::Bloom:
            switch (hp.n_layer) {
                case 24:
                    return "1B";
                case 30:
                    return hp.n_embd == 2560 ? "3B" : hp.n_embd == 4096 ? "7B" : "?B";
                default:
                    return "?B";
            }
        case Arch::Bert:  // b4748's rules (bge-small and all-MiniLM are 33M / 22M)
            switch (hp.n_layer) {
                case 3:
                    return "17M";
                case 6:
                    return "22M";
                case 12:
                    return hp.n_embd == 384 ? "33M" : hp.n_embd == 768 ? "109M" : "?B";
                case 24:
                    return "335M";
                default:
                    return "?B";
            }
        case Arch::NomicBert:
            return hp.n_layer == 12 && hp.n_embd == 768 ? "137M" : "?B";
        case Arch::T5:  // b4748's rules: the encoder's block count, then the feed-forward size
            switch (hp.n_layer) {
                case 6:
                    return "60M";  // t5-small
                case 8:
                    return "80M";  // flan-t5-small
                case 12:
                    return hp.n_ff == 3072 ? "220M" : hp.n_ff == 2048 ? "250M" : "?B";
                case 24:
                    switch (hp.n_ff) {
                        case 4096:
                            return "770M";
                        case 2816:
                            return "780M";
                        case 16384:
                        case 5120:
                            return "3B";
                        case 65536:
                        case 10240:
                            return "11B";
                        default:
                            return "?B";
                    }
                default:
                    return "?B";
            }
        case Arch::Mamba:  // b4748's rules: Mamba 130M, 370M, 790M, 1.4B, 2.8B
            if (hp.n_layer == 24 && hp.n_embd == 768) return "0.1B";
            if (hp.n_layer == 48 && hp.n_embd == 1024) return "0.4B";
            if (hp.n_layer == 48 && hp.n_embd == 1536) return "0.8B";
            if (hp.n_layer == 48 && hp.n_embd == 2048) return "1.5B";
            if (hp.n_layer == 64 && hp.n_embd == 2560) return "3B";
            return "?B";
        case Arch::Other:
            break;
    }
    return "?B";
}

namespace {

// phi3's sliding window as b4748 reads it: attention.sliding_window, else the window of the Phi-3 releases
// whose files predate the key (b4748 refuses other files without it; newer llama.cpp reads a missing key as
// no window, as the golden fixture needs). Every layer uses the window.
void load_phi3_window(const gguf::File &f, const std::string &p, HParams &hp) {
    uint32_t n_swa = 0;
    if ((hp.n_layer == 32 || hp.n_layer == 40) && hp.n_ctx_train == 4096)
        n_swa = 2047;  // Phi-3-mini-4k-instruct, Phi-3-medium-4k-instruct
    else if (hp.n_layer == 32 && hp.n_head_kv == 32 && hp.n_ctx_train == 131072)
        n_swa = 262144;  // Phi-3-mini-128k-instruct
    else if (hp.n_layer == 40 && hp.n_ctx_train == 131072)
        n_swa = 131072;  // Phi-3-medium-128k-instruct
    hp.n_swa = get_u32(f, p + "attention.sliding_window", false, n_swa);
    if (hp.n_swa > 0) hp.swa_layers.assign(hp.n_layer, true);
}

// rope.scaling.type: "linear" when absent (b4748's default); a name b4748 does not know is refused (b4748
// aborts on it).
RopeScaling rope_scaling_type(const gguf::File &f, const std::string &p) {
    const std::string st = f.get_string(p + "rope.scaling.type").value_or("linear");
    if (st == "none") return RopeScaling::None;
    if (st == "linear") return RopeScaling::Linear;
    if (st == "yarn") return RopeScaling::Yarn;
    if (st == "longrope") return RopeScaling::LongRope;
    throw Error("model metadata '" + p + "rope.scaling.type' = '" + st +
                "' is not a RoPE scaling type (none, linear, yarn, longrope)");
}

float get_required_f32(const gguf::File &f, const std::string &key) {
    std::optional<double> v = f.get_float(key);
    if (!v) throw Error("model metadata is missing '" + key + "'");
    return static_cast<float>(*v);
}

// A soft-capping value: 0 turns the capping off; a negative or non-finite one is refused.
float get_softcap(const gguf::File &f, const std::string &key, float def) {
    const float cap = get_f32(f, key, def);
    if (!(cap >= 0.0f) || !std::isfinite(cap))
        throw Error("model metadata '" + key + "' = " + std::to_string(cap) + " is not a soft-capping value");
    return cap;
}

// gemma2 as b4748 reads it: the RMS epsilon is required; the window (default 4096, Gemma 2's) applies to the
// even layers (b4748's rule, which newer llama.cpp keeps as a pattern of 2; the golden fixture's window is
// 8); the two soft-capping values default to Gemma 2's 50 (attention) and 30 (logits).
void load_gemma2(const gguf::File &f, const std::string &p, HParams &hp) {
    hp.norm_rms_eps = get_required_f32(f, p + "attention.layer_norm_rms_epsilon");
    hp.n_swa = get_u32(f, p + "attention.sliding_window", false, 4096);
    hp.swa_layers.assign(hp.n_layer, false);
    for (uint32_t il = 0; il < hp.n_layer; il += 2) hp.swa_layers[il] = true;
    hp.attn_softcap = get_softcap(f, p + "attn_logit_softcapping", 50.0f);
    hp.final_softcap = get_softcap(f, p + "final_logit_softcapping", 30.0f);
}

// bloom: LayerNorm epsilon required; ALiBi with a maximum bias of 8, whatever the file's
// attention.max_alibi_bias says (b4748 sets 8 for bloom and does not read the key).
void load_bloom(const gguf::File &f, const std::string &p, HParams &hp) {
    hp.norm_eps = get_required_f32(f, p + "attention.layer_norm_epsilon");
    hp.use_alibi = true;
    hp.max_alibi_bias = 8.0f;
}

// bert and nomic-bert: LayerNorm epsilon required; non-causal unless the file says otherwise; the pooling the
// model was trained with (optional); the token-type count (b4748 reads it from the vocabulary; BERT's two
// types when absent). bert has position embeddings for n_ctx_train positions, nomic-bert rotates instead.
void load_bert(const gguf::File &f, const std::string &p, HParams &hp) {
    hp.norm_eps = get_required_f32(f, p + "attention.layer_norm_epsilon");
    hp.causal_attn = f.get_bool(p + "attention.causal").value_or(false);
    if (std::optional<int64_t> pt = f.get_int(p + "pooling_type")) {
        if (*pt < 0 || *pt > 4)
            throw Error("model metadata '" + p + "pooling_type' = " + std::to_string(*pt) +
                        " is not a pooling type (0 none, 1 mean, 2 cls, 3 last, 4 rank)");
        hp.pooling_type = static_cast<int32_t>(*pt);
    }
    hp.abs_pos_embd = hp.arch == Arch::Bert;
    hp.n_token_types = get_u32(f, "tokenizer.ggml.token_type_count", false, 2);
    if (hp.n_token_types == 0) throw Error("tokenizer.ggml.token_type_count is 0; BERT needs a token type");
    if (hp.n_embd_head_k * hp.n_head != hp.n_embd || hp.n_embd_head_v != hp.n_embd_head_k)
        throw Error(
            "bert: the attention heads must split embedding_length evenly (key_length and "
            "value_length n_embd / head_count)");
}

// t5: the decoder's block count (default: the encoder's) and the relative-position buckets (b4748 reads 32
// when the key is absent; the bucket formula needs at least 4, and an even count, to split them by
// direction).
void load_t5(const gguf::File &f, const std::string &p, HParams &hp) {
    hp.n_layer_dec = get_u32(f, p + "decoder_block_count", false, hp.n_layer);
    if (hp.n_layer_dec == 0) throw Error("model metadata '" + p + "decoder_block_count' is zero");
    hp.n_rel_buckets = get_u32(f, p + "attention.relative_buckets_count", false, 32);
    if (hp.n_rel_buckets < 4 || hp.n_rel_buckets % 2 != 0 || hp.n_rel_buckets > 4096)
        throw Error("model metadata '" + p +
                    "attention.relative_buckets_count' = " + std::to_string(hp.n_rel_buckets) +
                    " is not an even count of at least 4 (and at most 4096)");
    hp.dec_start_token = decoder_start_token(f, p, hp.n_vocab);
}

// mamba as b4748 reads it: the four state-space sizes and the RMS epsilon are required, dt_b_c_rms (Falcon
// Mamba's norms of dt, B and C) is optional. The sizes bound the per-sequence state, so each is checked.
void load_mamba(const gguf::File &f, const std::string &p, HParams &hp) {
    if (hp.n_embd == 0 || hp.n_layer == 0)
        throw Error("model metadata has a zero size (embedding or layers)");
    hp.recurrent = true;
    hp.ssm_d_conv = get_u32(f, p + "ssm.conv_kernel", true);
    hp.ssm_d_inner = get_u32(f, p + "ssm.inner_size", true);
    hp.ssm_d_state = get_u32(f, p + "ssm.state_size", true);
    hp.ssm_dt_rank = get_u32(f, p + "ssm.time_step_rank", true);
    if (std::optional<bool> rms = f.get_bool(p + "ssm.dt_b_c_rms")) hp.ssm_dt_b_c_rms = *rms;
    hp.norm_rms_eps = get_required_f32(f, p + "attention.layer_norm_rms_epsilon");
    constexpr uint32_t kMaxSize = 1u << 20;  // far above any released model; keeps products in range
    for (const auto &[key, v] :
         {std::pair{"conv_kernel", hp.ssm_d_conv}, std::pair{"inner_size", hp.ssm_d_inner},
          std::pair{"state_size", hp.ssm_d_state}, std::pair{"time_step_rank", hp.ssm_dt_rank}})
        if (v == 0 || v > kMaxSize)
            throw Error("model metadata '" + p + "ssm." + key + "' = " + std::to_string(v) +
                        " is out of range");
    // The per-sequence state sizes (n_embd_k_s, n_embd_v_s) must fit in 32 bits of bytes.
    if (static_cast<uint64_t>(hp.ssm_d_state) * hp.ssm_d_inner > (1ull << 28))
        throw Error("model metadata '" + p + "ssm.state_size' x '" + p + "ssm.inner_size' = " +
                    std::to_string(static_cast<uint64_t>(hp.ssm_d_state) * hp.ssm_d_inner) +
                    " is out of range (a state of more than 2^28 values per layer)");
    if (hp.ssm_d_conv > 64)
        throw Error("model metadata '" + p + "ssm.conv_kernel' = " + std::to_string(hp.ssm_d_conv) +
                    " is out of range (at most 64)");
    hp.n_ff = get_u32(f, p + "feed_forward_length", false);
    hp.n_head = get_u32(f, p + "attention.head_count", false);
    hp.n_head_kv = 0;
}

// What each family reads beyond the keys every family shares.
void load_family(const gguf::File &f, const std::string &p, HParams &hp) {
    switch (hp.arch) {
        case Arch::Llama:
        case Arch::Qwen2:  // llama's keys (its q/k/v biases are tensors)
            break;
        case Arch::Phi3:
            load_phi3_window(f, p, hp);
            break;
        case Arch::Gemma2:
            load_gemma2(f, p, hp);
            break;
        case Arch::Bloom:
            load_bloom(f, p, hp);
            break;
        case Arch::Bert:
        case Arch::NomicBert:
            load_bert(f, p, hp);
            break;
        case Arch::T5:
            load_t5(f, p, hp);
            break;
        case Arch::Mamba:  // read by load_mamba
        case Arch::Other:
            throw Error("no hyper-parameters for architecture " + hp.arch_name);
    }
}

}  // namespace

HParams HParams::load(const gguf::File &f) {
    HParams hp = load_arch(f);
    const std::string p = hp.arch_name + ".";

    hp.n_ctx_train = get_u32(f, p + "context_length", true);
    hp.n_embd = get_u32(f, p + "embedding_length", true);
    hp.n_layer = get_u32(f, p + "block_count", true);
    if (hp.arch == Arch::Mamba) {  // no attention: no heads, no feed-forward, no rotation
        load_mamba(f, p, hp);
        hp.n_vocab = vocab_size(f, p);
        return hp;
    }
    hp.n_ff = get_u32(f, p + "feed_forward_length", true);
    hp.n_head = get_u32(f, p + "attention.head_count", true);
    hp.n_head_kv = get_u32(f, p + "attention.head_count_kv", false, hp.n_head);
    if (hp.n_embd == 0 || hp.n_layer == 0 || hp.n_head == 0 || hp.n_head_kv == 0 || hp.n_ff == 0)
        throw Error("model metadata has a zero size (embedding, layers, heads or feed-forward)");
    if (hp.n_embd % hp.n_head != 0)
        throw Error("embedding_length " + std::to_string(hp.n_embd) + " is not divisible by head_count " +
                    std::to_string(hp.n_head));
    if (hp.n_head % hp.n_head_kv != 0)
        throw Error("head_count " + std::to_string(hp.n_head) + " is not a multiple of head_count_kv " +
                    std::to_string(hp.n_head_kv));
    hp.n_embd_head_k = get_u32(f, p + "attention.key_length", false, hp.n_embd / hp.n_head);
    hp.n_embd_head_v = get_u32(f, p + "attention.value_length", false, hp.n_embd / hp.n_head);
    hp.norm_rms_eps = get_f32(f, p + "attention.layer_norm_rms_epsilon", 1e-5f);
    hp.norm_eps = get_f32(f, p + "attention.layer_norm_epsilon", 1e-5f);

    hp.rope.n_rot = static_cast<int>(get_u32(f, p + "rope.dimension_count", false, hp.n_embd_head_k));
    if (hp.rope.n_rot <= 0 || hp.rope.n_rot > static_cast<int>(hp.n_embd_head_k) || hp.rope.n_rot % 2 != 0 ||
        hp.rope.n_rot > 1024)
        throw Error("rope.dimension_count " + std::to_string(hp.rope.n_rot) + " does not fit head size " +
                    std::to_string(hp.n_embd_head_k));
    // b4748 requires llama to rotate the whole head ("invalid n_rot"); other families may rotate a part.
    if (hp.arch == Arch::Llama && hp.rope.n_rot != static_cast<int>(hp.n_embd_head_k))
        throw Error("rope.dimension_count " + std::to_string(hp.rope.n_rot) +
                    ": llama rotates the whole head (head size " + std::to_string(hp.n_embd_head_k) + ")");
    hp.rope.freq_base = get_f32(f, p + "rope.freq_base", 10000.0f);
    if (!(hp.rope.freq_base > 0.0f) || !std::isfinite(hp.rope.freq_base))
        throw Error("model metadata '" + p + "rope.freq_base' = " + std::to_string(hp.rope.freq_base) +
                    " is not a positive number");
    hp.rope_scaling = rope_scaling_type(f, p);
    // b4748: the factor of any type (rope.scaling.factor, else the older rope.scale_linear), 0 meaning none;
    // a context with scaling type none does not scale (context_rope).
    std::optional<double> factor = f.get_float(p + "rope.scaling.factor");
    if (!factor) factor = f.get_float(p + "rope.scale_linear");
    if (factor && !(*factor >= 0.0 && std::isfinite(*factor)))
        throw Error("model metadata '" + p + "rope.scaling.factor' (or 'rope.scale_linear') = " +
                    std::to_string(*factor) + " is not a scaling factor (0 or a positive number)");
    hp.rope.freq_scale = factor && *factor != 0.0 ? static_cast<float>(1.0 / *factor) : 1.0f;
    hp.rope.ext_factor = hp.rope_scaling == RopeScaling::Yarn ? 1.0f : 0.0f;
    hp.rope.n_ctx_orig =
        static_cast<int>(get_u32(f, p + "rope.scaling.original_context_length", false, hp.n_ctx_train));
    // Which dimensions pair up, as llama_model_rope_type says for the architecture (model/architectures.h).
    const ArchitectureInfo *info = find_architecture(hp.arch_name);
    hp.rope.mode = info && info->rope == RopeKind::Neox ? kernels::RopeMode::Neox : kernels::RopeMode::Normal;
    hp.rope.attn_factor = get_f32(f, p + "rope.scaling.attn_factor", 1.0f);
    if (!(hp.rope.attn_factor > 0.0f) || !std::isfinite(hp.rope.attn_factor))
        throw Error("rope.scaling.attn_factor " + std::to_string(hp.rope.attn_factor) +
                    " is not a positive number");

    hp.n_vocab = vocab_size(f, p);
    load_family(f, p, hp);
    return hp;
}

}  // namespace lctx
