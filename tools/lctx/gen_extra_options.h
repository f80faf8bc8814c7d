// llama.cpp options of run and chat beyond sampling values: the sampler order (--samplers, --sampling-seq),
// metadata overrides (--override-kv), the context's RoPE settings (--rope-*, --yarn-*).
#pragma once
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "model/forward.h"

namespace lctx::cli {

// Refuses an empty value (`--samplers ''` must not quietly mean the default).
CLI::Validator non_empty_value();

// The samplers llama.cpp's --samplers orders (common_sampler_type at b4748).
enum class SamplerKind { Penalties, Dry, TopK, TypicalP, TopP, MinP, Xtc, Temperature, Infill };

// llama.cpp's default order: penalties;dry;top_k;typ_p;top_p;min_p;xtc;temperature (letters edkypmxt).
std::vector<SamplerKind> default_sampler_order();
// --samplers: names separated by ';' (penalties, dry, top_k, typ_p, top_p, min_p, xtc, temperature, infill,
// and llama.cpp's other spellings: top-k, top-p, nucleus, typical-p, typical, typ-p, typ, min-p, temp).
bool parse_sampler_names(const std::string &s, std::vector<SamplerKind> *out, std::string *why);
// --sampling-seq: one letter each (e penalties, d dry, k top_k, y typ_p, p top_p, m min_p, x xtc,
// t temperature, i infill).
bool parse_sampler_letters(const std::string &s, std::vector<SamplerKind> *out, std::string *why);

// --override-kv KEY=TYPE:VALUE (TYPE int, float, bool or str; written as int32, float32, bool or string,
// as b4748 reads them). False with *why set when the text is malformed.
bool parse_override_kv(const std::string &arg, gguf::KeyValue *out, std::string *why);

// llama.cpp's RoPE options of a context.
struct RopeArgs {
    std::string scaling;  // none, linear, yarn ("" : the model's)
    float scale = 0.0f;   // --rope-scale N: freq_scale = 1/N
    float freq_base = 0.0f, freq_scale = 0.0f;
    float yarn_ext_factor = -1.0f, yarn_attn_factor = 1.0f, yarn_beta_slow = 1.0f, yarn_beta_fast = 32.0f;
    int32_t yarn_orig_ctx = 0;
};
void add_rope_options(CLI::App &app, RopeArgs &r);
// The overrides a context takes from them; the first problem as one line, or "".
std::string rope_overrides(const RopeArgs &r, RopeOverrides *out);

}  // namespace lctx::cli
