#include "tools/lctx/gen_options.h"

#include <strings.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <iterator>
#include <random>
#include <sstream>
#include <thread>
#include <type_traits>
#include <variant>

#include "generate/capi_log.h"
#include "generate/sampling_chain.h"
#include "lctx/lctx_ext.h"
#include "tools/lctx/option_rows.h"
#include "tools/lctx/read_file.h"

namespace lctx::cli {

namespace {

// llama.cpp's -ctk / -ctv types (common's kv_cache_types); the block types are quantized.
struct KvCacheType {
    ggml_type type;
    const char *name;
    bool quantized;
};
constexpr KvCacheType kKvCacheTypes[] = {
    {GGML_TYPE_F32, "f32", false},      {GGML_TYPE_F16, "f16", false},  {GGML_TYPE_BF16, "bf16", false},
    {GGML_TYPE_Q8_0, "q8_0", true},     {GGML_TYPE_Q4_0, "q4_0", true}, {GGML_TYPE_Q4_1, "q4_1", true},
    {GGML_TYPE_IQ4_NL, "iq4_nl", true}, {GGML_TYPE_Q5_0, "q5_0", true}, {GGML_TYPE_Q5_1, "q5_1", true}};
constexpr const char *kKvCacheTypeNames = "f32, f16, bf16, q8_0, q4_0, q4_1, iq4_nl, q5_0, q5_1";

}  // namespace

std::string default_model_path() {
    namespace fs = std::filesystem;
    const char *name = "stories260K.gguf";
    std::vector<fs::path> candidates = {LCTX_DEFAULT_MODEL, fs::path("models") / name};
    std::error_code ec;
    const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    if (!ec) candidates.push_back(exe.parent_path() / ".." / ".." / "models" / name);
    for (const fs::path &p : candidates)
        if (fs::exists(p, ec)) return p.string();
    return LCTX_DEFAULT_MODEL;
}

std::string kv_cache_type_from_name(const std::string &name, const char *option, ggml_type *out) {
    // Any ggml type's name (case aside) is known; only the cache's types are taken.
    bool known = false;
    for (int id = 0; id < GGML_TYPE_COUNT && !known; ++id) {
        const char *n = ggml_type_name(static_cast<ggml_type>(id));  // "unknown" for the unused ids
        known = std::strcmp(n, "unknown") != 0 && strcasecmp(n, name.c_str()) == 0;
    }
    if (!known) return std::string(option) + ": unknown type '" + name + "'";
    for (const KvCacheType &t : kKvCacheTypes)
        if (strcasecmp(t.name, name.c_str()) == 0) {
            *out = t.type;
            return "";
        }
    return std::string(option) + ": " + name + " is not a KV cache type (" + kKvCacheTypeNames + ")";
}

const char *kv_cache_type_name(ggml_type t) {
    for (const KvCacheType &k : kKvCacheTypes)
        if (k.type == t) return k.name;
    return "unknown";
}

std::string kv_cache_types_from_names(const std::string &k, const std::string &v, bool flash_attn,
                                      ggml_type *type_k, ggml_type *type_v) {
    for (const std::string &e : {kv_cache_type_from_name(k, "--cache-type-k", type_k),
                                 kv_cache_type_from_name(v, "--cache-type-v", type_v)})
        if (!e.empty()) return e;
    for (const KvCacheType &t : kKvCacheTypes)
        if (t.type == *type_v && t.quantized && !flash_attn)
            return "--cache-type-v " + v + ": V cache quantization requires flash_attn (add -fa)";
    return "";
}

generate::SamplingConfig cli_sampling_defaults() {
    generate::SamplingConfig c = generate::llama_cpp_sampling_defaults();
    c.keep_neutral_samplers = true;  // llama.cpp's CLI chain: top_k 0 still sorts
    return c;
}

namespace {

using Config = generate::SamplingConfig;
using SamplingFields =
    std::variant<float Config::*, int32_t Config::*, bool Config::*, std::string Config::*,
                 std::vector<std::string> Config::*, int64_t SamplingOptions::*,
                 std::string SamplingOptions::*, std::vector<std::string> SamplingOptions::*>;

constexpr double kBig = 1e6;
const OptionRow<SamplingFields> kSamplingOptions[] = {
    {"--temp", &Config::temperature, "temperature (0: greedy)", -kBig, kBig,
     "a finite number; <= 0 is greedy"},
    {"--top-k", &Config::top_k, "keep the k most likely tokens (<= 0: all)"},
    {"--top-p", &Config::top_p, "keep the most likely tokens up to this probability mass (1: off)", 0, 1,
     "0 to 1"},
    {"--min-p", &Config::min_p, "drop tokens below this fraction of the top probability (0: off)", 0, 1,
     "0 to 1"},
    {"--typical", &Config::typical_p, "locally typical sampling mass (1: off)", 0, 1, "0 to 1"},
    {"--repeat-penalty", &Config::repeat_penalty, "penalty for repeated tokens (1: off)", 0, kBig,
     "0 or more; 1 is off"},
    {"--repeat-last-n", &Config::repeat_last_n, "window of the penalties (0: off, -1: the whole context)", -1,
     INT32_MAX, "-1 or more"},
    {"--frequency-penalty", &Config::frequency_penalty, "frequency penalty (0: off)", -kBig, kBig,
     "a finite number"},
    {"--presence-penalty", &Config::presence_penalty, "presence penalty (0: off)", -kBig, kBig,
     "a finite number"},
    {"-s,--seed", &SamplingOptions::seed, "random seed (-1: a random one, printed)", -1, 0xFFFFFFFEll,
     "-1 for a random seed, or 0 to 4294967294"},
    {"--dynatemp-range", &Config::dynatemp_range, "dynamic temperature range (0: off)", 0, kBig, "0 or more"},
    {"--dynatemp-exp", &Config::dynatemp_exponent, "dynamic temperature exponent", 0, kBig, "0 or more"},
    {"--mirostat", &Config::mirostat, "Mirostat sampling (0: off, 1: Mirostat, 2: Mirostat 2.0)", 0, 2,
     "0, 1 or 2"},
    {"--mirostat-lr", &Config::mirostat_eta, "Mirostat learning rate, eta", 0, kBig, "0 or more"},
    {"--mirostat-ent", &Config::mirostat_tau, "Mirostat target entropy, tau", 0, kBig, "0 or more"},
    {"--xtc-probability", &Config::xtc_probability, "XTC probability (0: off)", 0, 1, "0 to 1"},
    {"--xtc-threshold", &Config::xtc_threshold, "XTC threshold (> 0.5: off)", 0, 1, "0 to 1"},
    {"--dry-multiplier", &Config::dry_multiplier, "DRY multiplier (0: off)", 0, kBig, "0 or more"},
    {"--dry-base", &Config::dry_base, "DRY base", 1, kBig, "1 or more"},
    {"--dry-allowed-length", &Config::dry_allowed_length, "DRY allowed length", 0, INT32_MAX, "0 or more"},
    {"--dry-penalty-last-n", &Config::dry_penalty_last_n, "DRY window (0: off, -1: the whole context)", -1,
     INT32_MAX, "-1 or more"},
    {"--dry-sequence-breaker", &Config::dry_sequence_breakers, "DRY sequence breaker (repeatable)"},
    {"-l,--logit-bias", &SamplingOptions::logit_bias,
     "TOKEN+BIAS or TOKEN-BIAS, e.g. 15043+1 or 2-inf (repeatable)"},
    {"--ignore-eos", &Config::ignore_eos, "never stop at an end-of-generation token"},
    {"--grammar", &Config::grammar, "GBNF grammar the output must follow (start rule: root)"},
    {"--grammar-file", &SamplingOptions::grammar_file, "file with a GBNF grammar the output must follow"},
};

// The sampler parameters a Config member of a row names (taking the member keeps the call dependent, so a
// table without Config rows never names it: clang checks the discarded branch's non-dependent expressions).
template <typename Options, typename Member>
auto &config_of(Options &o, Member) {
    return o.config;
}

// A row's value: a member of the options, or of their sampler parameters (SamplingOptions::config).
template <typename Options>
auto option_value(Options &o) {
    return [&o](auto member) -> auto & {
        if constexpr (std::is_same_v<typename MemberOf<decltype(member)>::type, Config>)
            return config_of(o, member).*member;
        else
            return o.*member;
    };
}

}  // namespace

void add_sampling_options(CLI::App &app, SamplingOptions &o) {
    add_option_rows(app, kSamplingOptions, option_value(o));
    app.add_option("--samplers", o.samplers,
                   "the samplers in their order, separated by ';' (llama.cpp's names; default: "
                   "penalties;dry;top_k;typ_p;top_p;min_p;xtc;temperature)")
        ->check(non_empty_value());
    app.add_option("--sampling-seq,--sampler-seq", o.sampling_seq,
                   "the samplers in their order, one letter each (default: edkypmxt; i: infill)")
        ->check(non_empty_value());
    app.add_option("-j,--json-schema", o.json_schema,
                   "JSON schema (the text itself) the output must follow, e.g. '{}' for any JSON object; "
                   "`lctx grammar from-schema` prints its grammar");
}

std::string check_sampling_options(const SamplingOptions &o) {
    if (std::string e = check_option_rows(kSamplingOptions, option_value(o)); !e.empty()) return e;
    TokenBias tb;
    std::string why;
    for (const std::string &b : o.logit_bias)
        if (!parse_logit_bias(b, &tb, &why)) return "--logit-bias: " + why;
    if (!o.config.grammar.empty() && !o.grammar_file.empty())
        return "--grammar and --grammar-file: give one of them";
    std::vector<generate::SamplerStage> order;
    if (!o.samplers.empty() && !o.sampling_seq.empty())
        return "--samplers and --sampling-seq: give one of them";
    if (!o.samplers.empty() && !generate::parse_sampler_names(o.samplers, &order, &why))
        return "--samplers: " + why;
    if (!o.sampling_seq.empty() && !generate::parse_sampler_letters(o.sampling_seq, &order, &why))
        return "--sampling-seq: " + why;
    if (!o.grammar_file.empty()) {  // read here too, to fail before the model loads
        std::string text;
        if (!read_whole_file(o.grammar_file, &text, &why)) return "--grammar-file: " + why;
    }
    if (!o.json_schema.empty()) {
        if (!o.config.grammar.empty() || !o.grammar_file.empty())
            return "--json-schema and --grammar / --grammar-file: give one of them";
        // Converted here too, so that a schema that cannot be used is reported before the model loads.
        std::string gbnf;
        if (!json_schema_grammar(o.json_schema, &gbnf, &why)) return "--json-schema: " + why;
    }
    return "";
}

uint32_t resolve_seed(SamplingOptions &o) {
    if (o.seed < 0) {
        std::random_device rd;
        o.seed = static_cast<int64_t>(rd() % 0xFFFFFFFFu);  // never 0xFFFFFFFF, which means "random"
    }
    return static_cast<uint32_t>(o.seed);
}

int resolved_threads(int32_t n) {
    return n > 0 ? n : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

namespace {

using GenFields = std::variant<std::string GenOptions::*, int32_t GenOptions::*, bool GenOptions::*,
                               std::vector<std::string> GenOptions::*>;
const OptionRow<GenFields> kGenOptions[] = {
    {"-m,--model", &GenOptions::model_path, "GGUF model file"},
    {"-p,--prompt", &GenOptions::prompt, "prompt text ('-': read it from standard input)"},
    {"-f,--file", &GenOptions::prompt_file, "read the prompt from this file"},
    {"-e,--escape", &GenOptions::escape,
     "process escapes (\\n, \\t, \\\\, \\xHH, ...) in a prompt from standard input too (-p, -f and -r "
     "always, "
     "as llama-cli)"},
    {"--no-escape", &GenOptions::no_escape, "do not process escapes in -p, -f or -r"},
    {"--no-display-prompt", &GenOptions::no_display_prompt, "do not print the prompt before the output"},
    {"-n,--n-predict", &GenOptions::n_predict,
     "tokens to generate (-1: until end of text, shifting the context when full; -2: until the context is "
     "full)"},
    {"-c,--ctx-size", &GenOptions::n_ctx, "context size in tokens (0: the model's training context)", 0,
     1 << 24, "0 for the model's, or up to 16777216"},
    {"-b,--batch-size", &GenOptions::n_batch, "logical batch size (most tokens per decode call)", 1,
     INT32_MAX, "1 or more"},
    {"--ubatch-size", &GenOptions::n_ubatch, "physical batch size (-ub)", 1, INT32_MAX, "1 or more"},
    {"-t,--threads", &GenOptions::n_threads, "threads for generation (0: every core)", 0, 1024,
     "0 for every core, or up to 1024"},
    {"--threads-batch", &GenOptions::n_threads_batch, "threads for the prompt (-tb; 0: as --threads)", 0,
     1024, "0 for --threads, or up to 1024"},
    {"--cache-type-k", &GenOptions::cache_type_k,
     "KV cache type of K (-ctk): f32, f16, bf16, q8_0, q4_0, q4_1, iq4_nl, q5_0, q5_1"},
    {"--cache-type-v", &GenOptions::cache_type_v,
     "KV cache type of V (-ctv), as -ctk; the block types (q8_0 ... q5_1) need -fa"},
    {"--keep", &GenOptions::n_keep, "prompt tokens kept when the context shifts (-1: the whole prompt)", -1,
     INT32_MAX, "-1 or more"},
    {"--no-context-shift", &GenOptions::no_context_shift,
     "stop when the context is full instead of shifting"},
    {"-r,--reverse-prompt", &GenOptions::reverse_prompts,
     "stop when the output ends with this text (repeatable)"},
    {"--flash-attn", &GenOptions::flash_attn,
     "(-fa) llama.cpp's flash-attention cache: V stored by rows (a quantized -ctv needs it)"},
    {"--no-mmap", &GenOptions::no_mmap, "accepted: lctx maps the file and copies the weights it repacks"},
    {"--mlock", &GenOptions::mlock, "lock the model and buffers in memory"},
    {"--n-gpu-layers", &GenOptions::n_gpu_layers, "(-ngl) accepted: lctx runs on the CPU"},
    {"--color", &GenOptions::color, "color the prompt and the user input on a terminal"},
    {"-q,--log-disable", &GenOptions::quiet, "no notes, progress or timings on stderr"},
};

}  // namespace

void add_gen_options(CLI::App &app, GenOptions &o) {
    add_option_rows(app, kGenOptions, option_value(o));
    add_lora_options(app, o.lora_args);
    add_sampling_options(app, o.sampling);
    app.add_option("--override-kv", o.override_kv_args,
                   "replace a metadata value of the model: KEY=TYPE:VALUE, TYPE int, float, bool or str "
                   "(repeatable)")
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    add_rope_options(app, o.rope_args);
    app.add_flag("--special", o.special, "(-sp) print special tokens (their text) in the output");
}

std::string check_gen_options(GenOptions &o) {
    if (o.n_predict < -2)
        return "--n-predict: " + std::to_string(o.n_predict) +
               " is out of range (a count, -1: until end of text, -2: until the context is full)";
    if (std::string e = check_option_rows(kGenOptions, option_value(o)); !e.empty()) return e;
    // before anything loads
    if (const std::string e =
            kv_cache_types_from_names(o.cache_type_k, o.cache_type_v, o.flash_attn, &o.type_k, &o.type_v);
        !e.empty())
        return e;
    for (const std::string &r : o.reverse_prompts)
        if (r.empty()) return "--reverse-prompt: the text is empty";
    o.overrides.clear();
    for (const std::string &a : o.override_kv_args) {
        llama_model_kv_override kv;
        std::string why;
        if (!parse_override_kv(a, &kv, &why)) return "--override-kv '" + a + "': " + why;
        o.overrides.push_back(kv);
    }
    if (const std::string e = check_rope_args(o.rope_args); !e.empty()) return e;
    std::string lora_error;
    o.loras = parse_lora_options(o.lora_args, lora_error);
    if (!lora_error.empty()) return lora_error;
    return check_sampling_options(o.sampling);
}

void note_compat_options(const GenOptions &o, const char *cmd) {
    if (o.quiet) return;
    if (o.n_gpu_layers >= 0) std::fprintf(stderr, "lctx %s: note: -ngl ignored, lctx runs on the CPU\n", cmd);
    if (o.no_mmap)
        std::fprintf(stderr,
                     "lctx %s: note: --no-mmap ignored, lctx maps the file (weights it repacks are copied)\n",
                     cmd);
}

bool resolve_prompt(GenOptions &o, const char *cmd, bool stdin_allowed) {
    bool from_stdin = false;
    if (!o.prompt_file.empty()) {
        if (o.prompt_given) {
            std::fprintf(stderr, "lctx %s: -f and -p both give the prompt; pass only one\n", cmd);
            return false;
        }
        std::string why;
        if (!read_whole_file(o.prompt_file, &o.prompt, &why)) {
            std::fprintf(stderr, "lctx %s: -f: %s\n", cmd, why.c_str());
            return false;
        }
        o.prompt_given = true;
    } else if (o.prompt_given && o.prompt == "-") {
        if (!stdin_allowed) {
            std::fprintf(stderr, "lctx %s: -p -: standard input carries the conversation here\n", cmd);
            return false;
        }
        o.prompt.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
        from_stdin = true;
    } else if (!o.prompt_given && stdin_allowed && !isatty(STDIN_FILENO)) {
        std::string in((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
        if (!in.empty()) {
            o.prompt = std::move(in);
            o.prompt_given = true;
            from_stdin = true;
        }
    }
    if (!o.no_escape && (o.escape || !from_stdin)) o.prompt = process_escapes(o.prompt);
    if (!o.no_escape)
        for (std::string &r : o.reverse_prompts) r = process_escapes(r);
    return true;
}

bool json_schema_grammar(const std::string &schema, std::string *gbnf, std::string *why) {
    std::string out;
    // The reason goes into the one-line report, not onto stderr.
    return generate::capi_call(
        [&] {
            const int32_t n = lctx_json_schema_to_grammar(schema.c_str(), nullptr, 0);
            if (n < 0) return false;
            out.assign(static_cast<size_t>(n), '\0');
            if (n > 0) lctx_json_schema_to_grammar(schema.c_str(), out.data(), out.size() + 1);
            *gbnf = std::move(out);
            return true;
        },
        why);
}

}  // namespace lctx::cli
