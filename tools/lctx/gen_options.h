// The options of the generating commands (run, chat) and their checks, without the engine: model, context,
// threads, prompt sources, sampling values with llama.cpp's names and defaults, llama.cpp compatibility
// options. Each command turns them into what it drives (llama.h's parameters, the generation layer's
// sampler chain: cli_sampling.h).
#pragma once
#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "generate/sampling_chain.h"
#include "tools/lctx/args.h"
#include "tools/lctx/gen_args.h"
#include "tools/lctx/lora_args.h"

namespace lctx::cli {

// A KV cache type by llama.cpp's name (-ctk / -ctv: f32, f16, bf16, q8_0, q4_0, q4_1, iq4_nl, q5_0, q5_1);
// "" when it is one, else the reason, for `option` ("--cache-type-k").
std::string kv_cache_type_from_name(const std::string &name, const char *option, ggml_type *out);
// The -ctk / -ctv name of a KV cache type ("q8_0").
const char *kv_cache_type_name(ggml_type t);
// Both cache types by name (-ctk, -ctv), a quantized V needing flash attention (-fa), as b4748's
// llama_init_from_model: "" or the first problem as one line.
std::string kv_cache_types_from_names(const std::string &k, const std::string &v, bool flash_attn,
                                      ggml_type *type_k, ggml_type *type_v);

// The generation layer's sampler parameters at llama.cpp's defaults (common_params_sampling at b4748) and
// with its CLI chain's shape (top_k and the others added even when neutral).
generate::SamplingConfig cli_sampling_defaults();

// The sampling options: llama.cpp's values written straight into the layer's parameters, and what only the
// command line has, turned into parameters by cli_sampling_config (cli_sampling.h).
struct SamplingOptions {
    generate::SamplingConfig config = cli_sampling_defaults();  // its seed, logit_bias and order: below
    int64_t seed = -1;                                          // -1: random (resolve_seed picks one)
    std::vector<std::string> logit_bias;                        // TOKEN+BIAS
    std::string grammar_file, json_schema;
    std::string samplers,
        sampling_seq;  // --samplers (names) / --sampling-seq (letters): the order; "" default
};

// Registers the sampling options with llama.cpp's names.
void add_sampling_options(CLI::App &app, SamplingOptions &o);
// Range and finiteness of every value; the first problem as one line ("--temp: ..."), or "".
std::string check_sampling_options(const SamplingOptions &o);
// A seed of -1 becomes a random one; returns the seed in use.
uint32_t resolve_seed(SamplingOptions &o);

// What run and chat share: model, context, threads, prompt sources, llama.cpp compatibility options.
struct GenOptions {
    std::string model_path = default_model_path();
    int32_t n_predict = 128;  // -1: until end of text (shifting the context), -2: until the context is full
    int32_t n_ctx = 0;
    int32_t n_batch = 2048;
    int32_t n_ubatch = 512;
    int32_t n_threads = 0;        // 0: every core
    int32_t n_threads_batch = 0;  // 0: as n_threads
    std::string cache_type_k = "f16", cache_type_v = "f16";
    int32_t n_keep = 0;  // -1: the whole prompt
    bool no_context_shift = false;
    std::string prompt;
    bool prompt_given = false;
    std::string prompt_file;
    bool escape = false;     // -e: escapes in a prompt from standard input too
    bool no_escape = false;  // --no-escape: none anywhere (llama-cli processes them in -p, -f and -r)
    bool no_display_prompt = false;
    std::vector<std::string> reverse_prompts;
    bool flash_attn = false, no_mmap = false, mlock = false, color = false, quiet = false;
    int32_t n_gpu_layers = -1;
    bool json = false;
    SamplingOptions sampling;
    LoraArgs lora_args;
    std::vector<LoraOption> loras;  // from lora_args by check()

    ggml_type type_k = GGML_TYPE_F16, type_v = GGML_TYPE_F16;  // from cache_type_k / _v by check()

    // llama.cpp's model and context options (gen_extra_options.h).
    std::vector<std::string> override_kv_args;       // --override-kv KEY=TYPE:VALUE
    std::vector<llama_model_kv_override> overrides;  // from override_kv_args by check(); no end marker
    RopeArgs rope_args;                              // checked by check()
    bool special = false;                            // -sp: print special tokens
};

void add_gen_options(CLI::App &app, GenOptions &o);
// Checks every value (and resolves the cache types); the first problem as one line, or "".
std::string check_gen_options(GenOptions &o);
// Prints the one-line notes of options lctx accepts but does not need (-ngl, --no-mmap, -fa), unless
// quiet; applies --mlock after loading.
void note_compat_options(const GenOptions &o, const char *cmd);
// The prompt from -f, -p (- reads stdin), or stdin when it is not a terminal and no -p was given. Escapes
// are processed in a prompt from -p or -f and in the reverse prompts, as llama-cli does, unless --no-escape;
// in a prompt from standard input only with -e. False with the error printed.
bool resolve_prompt(GenOptions &o, const char *cmd, bool stdin_allowed);

// A JSON schema's GBNF grammar (lctx_ext.h's conversion); false with *why set to the reason.
bool json_schema_grammar(const std::string &schema, std::string *gbnf, std::string *why);

}  // namespace lctx::cli
