// llama-quantize's per-tensor type rules (b4748). A K-quant mixture keeps its base type for most matrices
// and spends more bits where the error costs most: the output matrix (Q6_K), attn_v (few, small, shared by
// several query heads), ffn_down of the first, last and every third layer. A row that is not a whole
// number of the chosen type's blocks falls back to a 32-element type, then to F16; a base type with no
// fallback refuses the model.
#include "quantize/tensor_type_rules.h"

#include <cstdio>
#include <string>

#include "quantize/file_types.h"
#include "util/error.h"

namespace lctx::quantize {

namespace {

bool contains(const std::string &s, const char *part) {
    return s.find(part) != std::string::npos;
}

bool ends_with(const std::string &s, const std::string &tail) {
    return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// The type a row that does not fit `wanted` falls back to; nullopt when there is none.
std::optional<GgmlType> fallback_for(GgmlType wanted) {
    switch (wanted) {
        case GgmlType::Q2_K:
        case GgmlType::Q3_K:
        case GgmlType::IQ4_XS:
            return GgmlType::IQ4_NL;
        case GgmlType::Q4_K:
            return GgmlType::Q5_0;
        case GgmlType::Q5_K:
            return GgmlType::Q5_1;
        case GgmlType::Q6_K:
            return GgmlType::Q8_0;
        default:
            return std::nullopt;
    }
}

int64_t block_of(GgmlType t) {
    return type_traits(t).block_size;
}

}  // namespace

bool is_quantizable(const std::string &name, int n_dims, bool quantize_output_tensor) {
    if (!ends_with(name, "weight") || n_dims < 2) return false;
    if (contains(name, "_norm.weight")) return false;
    if (!quantize_output_tensor && name == "output.weight") return false;
    for (const char *kept : {"ffn_gate_inp.weight", "ssm_conv1d.weight", "time_mix_first.weight",
                             "time_mix_w1.weight", "time_mix_w2.weight", "time_mix_decay_w1.weight",
                             "time_mix_decay_w2.weight", "time_mix_lerp_fused.weight", "attn_rel_b.weight"})
        if (contains(name, kept)) return false;
    return name != "position_embd.weight" && name != "token_types.weight";
}

TensorTypeRules::TensorTypeRules(ModelFacts facts, RuleOptions opts)
    : facts_(std::move(facts)), opts_(std::move(opts)) {}

bool TensorTypeRules::use_more_bits(int i_layer, int n_layer) const {
    return i_layer < n_layer / 8 || i_layer >= 7 * n_layer / 8 || (i_layer - n_layer / 8) % 3 == 2;
}

// The layer a tensor belongs to: its position among the tensors of its kind (they come in layer order),
// or, in a mixture of experts whose expert tensors may be interleaved, the number in its name.
std::pair<int, int> TensorTypeRules::layer_of(int counter, const std::string &name) const {
    if (facts_.n_expert <= 1) return {counter, facts_.n_layer};
    int il = -1;
    if (std::sscanf(name.c_str(), "blk.%d.", &il) != 1)
        throw Error("quantize: cannot tell the layer of tensor '" + name + "'");
    if (il < 0 || il >= facts_.n_layer)
        throw Error("quantize: tensor '" + name + "' names layer " + std::to_string(il) + " of " +
                    std::to_string(facts_.n_layer));
    return {il, facts_.n_layer};
}

GgmlType TensorTypeRules::mixture_type(const std::string &name, int64_t row) {
    using T = GgmlType;
    const int32_t ft = opts_.ftype;
    const bool falcon = facts_.arch == "falcon";
    const int n_gqa = facts_.n_gqa();
    T type = opts_.base;

    // Models without an output matrix of their own use token_embd for it: it gets the output's type.
    if (name == "output.weight" || (!facts_.has_output && name == "token_embd.weight")) {
        if (opts_.output_type) {
            type = *opts_.output_type;
        } else if (falcon || row % block_of(type) != 0) {
            type = T::Q8_0;
        } else if (type != T::Q8_0) {
            type = T::Q6_K;
        }
    } else if (name == "token_embd.weight") {
        if (opts_.token_embd_type) type = *opts_.token_embd_type;
    } else if (contains(name, "attn_v.weight")) {
        if (ft == kFtypeQ2_K) {
            type = n_gqa >= 4 ? T::Q4_K : T::Q3_K;
        } else if (ft == kFtypeQ2_K_S && n_gqa >= 4) {
            type = T::Q4_K;
        } else if (ft == kFtypeQ3_K_M) {
            type = i_attention_wv_ < 2 ? T::Q5_K : T::Q4_K;
        } else if (ft == kFtypeQ3_K_L) {
            type = T::Q5_K;
        } else if ((ft == kFtypeIQ4_NL || ft == kFtypeIQ4_XS) && n_gqa >= 4) {
            type = T::Q5_K;
        } else if ((ft == kFtypeQ4_K_M || ft == kFtypeQ5_K_M) &&
                   use_more_bits(i_attention_wv_, facts_.n_attention_wv)) {
            type = T::Q6_K;
        } else if (ft == kFtypeQ4_K_S && i_attention_wv_ < 4) {
            type = T::Q5_K;
        }
        // 70B models share each attn_v among 8 query heads: a few more bits there cost almost nothing.
        if (facts_.is_70b && (type == T::Q3_K || type == T::Q4_K)) type = T::Q5_K;
        if (facts_.n_expert == 8) type = T::Q8_0;
        ++i_attention_wv_;
    } else if (contains(name, "attn_k.weight")) {
        if (facts_.n_expert == 8) type = T::Q8_0;
    } else if (contains(name, "ffn_down")) {
        const auto [il, nl] = layer_of(i_ffn_down_, name);
        if (ft == kFtypeQ2_K) {
            type = T::Q3_K;
        } else if (ft == kFtypeQ2_K_S) {
            if (il < nl / 8) type = T::Q4_K;
        } else if (ft == kFtypeQ3_K_M) {
            type = il < nl / 16 ? T::Q5_K : !falcon || use_more_bits(il, nl) ? T::Q4_K : T::Q3_K;
        } else if (ft == kFtypeQ3_K_L) {
            type = falcon ? T::Q4_K : T::Q5_K;
        } else if (ft == kFtypeQ4_K_M) {
            if (falcon) {
                type = il < nl / 16 ? T::Q6_K : use_more_bits(il, nl) ? T::Q5_K : T::Q4_K;
            } else if (use_more_bits(il, nl)) {
                type = T::Q6_K;
            }
        } else if (il < nl / 8 && (ft == kFtypeIQ4_NL || ft == kFtypeIQ4_XS) && !opts_.has_imatrix) {
            type = T::Q5_K;
        } else if (ft == kFtypeQ5_K_M && use_more_bits(il, nl)) {
            type = T::Q6_K;
        } else if (ft == kFtypeQ4_K_S && !falcon && il < nl / 8) {
            type = T::Q5_K;
        } else if ((ft == kFtypeQ4_0 || ft == kFtypeQ5_0) && opts_.has_imatrix && il < nl / 8) {
            // The first ffn_down layers go wrong even with an importance matrix at Q4_0/Q5_0.
            type = ft == kFtypeQ4_0 ? T::Q4_1 : T::Q5_1;
        }
        ++i_ffn_down_;
    } else if (contains(name, "attn_output.weight")) {
        if (!falcon) {
            if (facts_.n_expert == 8) {
                if (ft == kFtypeQ2_K || ft == kFtypeQ3_K_S || ft == kFtypeQ3_K_M || ft == kFtypeIQ4_NL ||
                    ft == kFtypeQ4_K_S || ft == kFtypeQ4_K_M || ft == kFtypeIQ4_XS)
                    type = T::Q5_K;
            } else {
                if (ft == kFtypeQ2_K)
                    type = T::Q3_K;
                else if (ft == kFtypeQ3_K_M)
                    type = T::Q4_K;
                else if (ft == kFtypeQ3_K_L)
                    type = T::Q5_K;
            }
        } else if (ft == kFtypeQ3_K_L) {
            type = T::Q4_K;
        }
    } else if (contains(name, "attn_qkv.weight")) {
        if (ft == kFtypeQ3_K_M || ft == kFtypeQ3_K_L)
            type = T::Q4_K;
        else if (ft == kFtypeQ4_K_M)
            type = T::Q5_K;
        else if (ft == kFtypeQ5_K_M)
            type = T::Q6_K;
    } else if (contains(name, "ffn_gate")) {
        layer_of(i_ffn_gate_, name);  // validates an expert tensor's layer number
        ++i_ffn_gate_;
    } else if (contains(name, "ffn_up")) {
        layer_of(i_ffn_up_, name);
        ++i_ffn_up_;
    }
    return type;
}

TypeChoice TensorTypeRules::choose(const std::string &name, const std::vector<int64_t> &ne) {
    const int64_t row = ne.empty() ? 0 : ne[0];
    const int64_t rows = ne.size() > 1 ? ne[1] : 1;
    TypeChoice c{opts_.base, opts_.base, false};
    const bool mixture = !opts_.pure && type_traits(opts_.base).is_quantized;
    if (mixture) {
        c.wanted = mixture_type(name, row);
        c.type = c.wanted;
        if (row % block_of(c.wanted) != 0) {
            const std::optional<GgmlType> fb = fallback_for(c.wanted);
            if (!fb)
                throw Error("quantize: tensor '" + name + "' has rows of " + std::to_string(row) + " x " +
                            std::to_string(rows) + " values, not a multiple of " +
                            std::to_string(block_of(c.wanted)) + " as " + type_name(c.wanted) +
                            " needs (unsupported tensor size; no fallback type)");
            c.type = row % block_of(*fb) == 0 ? *fb : GgmlType::F16;
            c.fallback = true;
            ++n_fallback_;
        } else {
            ++n_block_fit_;
        }
    }
    // Forced types win over the mixture (also for a float base type and --pure).
    if (opts_.token_embd_type && name == "token_embd.weight") c.type = c.wanted = *opts_.token_embd_type;
    if (opts_.output_type && name == "output.weight") c.type = c.wanted = *opts_.output_type;
    if (row % block_of(c.type) != 0)
        throw Error("quantize: tensor '" + name + "' has rows of " + std::to_string(row) +
                    " values, not a multiple of " + std::to_string(block_of(c.type)) + " as " +
                    type_name(c.type) + " needs");
    return c;
}

}  // namespace lctx::quantize
