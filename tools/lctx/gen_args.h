// llama.cpp options of run and chat beyond sampling values, parsed without the engine: metadata overrides
// (--override-kv) and the context's RoPE settings (--rope-*, --yarn-*) as llama.h's context parameters.
#pragma once
#include <CLI/CLI.hpp>
#include <string>

#include "llama.h"

namespace lctx::cli {

// Refuses an empty value (`--samplers ''` must not quietly mean the default).
CLI::Validator non_empty_value();

// --override-kv KEY=TYPE:VALUE (TYPE int, float, bool or str) as llama.h's override; a float is rounded to
// float32 and an int must fit int32, as b4748 writes them. False with *why set when the text is malformed.
bool parse_override_kv(const std::string &arg, llama_model_kv_override *out, std::string *why);

// llama.cpp's RoPE options of a context.
struct RopeArgs {
    std::string scaling;  // none, linear, yarn ("" : the model's)
    float scale = 0.0f;   // --rope-scale N: freq_scale = 1/N
    float freq_base = 0.0f, freq_scale = 0.0f;
    float yarn_ext_factor = -1.0f, yarn_attn_factor = 1.0f, yarn_beta_slow = 1.0f, yarn_beta_fast = 32.0f;
    int32_t yarn_orig_ctx = 0;
};
void add_rope_options(CLI::App &app, RopeArgs &r);
// The ranges and agreement of the values; the first problem as one line, or "".
std::string check_rope_args(const RopeArgs &r);
// Sets the RoPE fields of llama.h's context parameters from them; "" or the problem (as check_rope_args).
std::string apply_rope_args(const RopeArgs &r, llama_context_params *p);

}  // namespace lctx::cli
