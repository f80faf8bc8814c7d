#include "tools/lctx/gen_options.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <iterator>
#include <random>
#include <sstream>
#include <thread>

#include "generate/sampling_chain.h"
#include "lctx/lctx_ext.h"
#include "tools/lctx/read_file.h"

namespace lctx::cli {

namespace {

// llama.cpp's -ctk / -ctv types (common's kv_cache_types).
constexpr GgmlType kKvCacheTypes[] = {GgmlType::F32,    GgmlType::F16,  GgmlType::BF16,
                                      GgmlType::Q8_0,   GgmlType::Q4_0, GgmlType::Q4_1,
                                      GgmlType::IQ4_NL, GgmlType::Q5_0, GgmlType::Q5_1};
constexpr const char *kKvCacheTypeNames = "f32, f16, bf16, q8_0, q4_0, q4_1, iq4_nl, q5_0, q5_1";

std::string g_log_error;  // the last error line llama.h logged while a conversion ran

void keep_error(enum ggml_log_level level, const char *text, void *) {
    if (level == GGML_LOG_LEVEL_ERROR && text) g_log_error = text;
}

// "--name: value V is not finite" and the like, or "".
std::string check_float(const char *name, float v, float lo, float hi, const char *range) {
    if (!std::isfinite(v)) return std::string(name) + ": " + std::to_string(v) + " is not a finite number";
    if (v < lo || v > hi) {
        std::ostringstream s;
        s << name << ": " << v << " is out of range (" << range << ")";
        return s.str();
    }
    return "";
}

std::string check_int(const char *name, int64_t v, int64_t lo, int64_t hi, const char *range) {
    if (v < lo || v > hi)
        return std::string(name) + ": " + std::to_string(v) + " is out of range (" + range + ")";
    return "";
}

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

std::string kv_cache_type_from_name(const std::string &name, const char *option, GgmlType *out) {
    GgmlType t;
    if (!type_from_name(name.c_str(), &t)) return std::string(option) + ": unknown type '" + name + "'";
    if (std::find(std::begin(kKvCacheTypes), std::end(kKvCacheTypes), t) == std::end(kKvCacheTypes))
        return std::string(option) + ": " + name + " is not a KV cache type (" + kKvCacheTypeNames + ")";
    *out = t;
    return "";
}

void add_sampling_options(CLI::App &app, SamplingOptions &o) {
    app.add_option("--temp", o.temp, "temperature (0: greedy)");
    app.add_option("--top-k", o.top_k, "keep the k most likely tokens (<= 0: all)");
    app.add_option("--top-p", o.top_p, "keep the most likely tokens up to this probability mass (1: off)");
    app.add_option("--min-p", o.min_p, "drop tokens below this fraction of the top probability (0: off)");
    app.add_option("--typical", o.typical_p, "locally typical sampling mass (1: off)");
    app.add_option("--repeat-penalty", o.repeat_penalty, "penalty for repeated tokens (1: off)");
    app.add_option("--repeat-last-n", o.repeat_last_n,
                   "window of the penalties (0: off, -1: the whole context)");
    app.add_option("--frequency-penalty", o.frequency_penalty, "frequency penalty (0: off)");
    app.add_option("--presence-penalty", o.presence_penalty, "presence penalty (0: off)");
    app.add_option("-s,--seed", o.seed, "random seed (-1: a random one, printed)");
    app.add_option("--dynatemp-range", o.dynatemp_range, "dynamic temperature range (0: off)");
    app.add_option("--dynatemp-exp", o.dynatemp_exp, "dynamic temperature exponent");
    app.add_option("--mirostat", o.mirostat, "Mirostat sampling (0: off, 1: Mirostat, 2: Mirostat 2.0)");
    app.add_option("--mirostat-lr", o.mirostat_lr, "Mirostat learning rate, eta");
    app.add_option("--mirostat-ent", o.mirostat_ent, "Mirostat target entropy, tau");
    app.add_option("--xtc-probability", o.xtc_probability, "XTC probability (0: off)");
    app.add_option("--xtc-threshold", o.xtc_threshold, "XTC threshold (> 0.5: off)");
    app.add_option("--dry-multiplier", o.dry_multiplier, "DRY multiplier (0: off)");
    app.add_option("--dry-base", o.dry_base, "DRY base");
    app.add_option("--dry-allowed-length", o.dry_allowed_length, "DRY allowed length");
    app.add_option("--dry-penalty-last-n", o.dry_penalty_last_n,
                   "DRY window (0: off, -1: the whole context)");
    app.add_option("--dry-sequence-breaker", o.dry_sequence_breakers, "DRY sequence breaker (repeatable)")
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    app.add_option("-l,--logit-bias", o.logit_bias,
                   "TOKEN+BIAS or TOKEN-BIAS, e.g. 15043+1 or 2-inf (repeatable)")
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    app.add_flag("--ignore-eos", o.ignore_eos, "never stop at an end-of-generation token");
    app.add_option("--grammar", o.grammar, "GBNF grammar the output must follow (start rule: root)");
    app.add_option("--grammar-file", o.grammar_file, "file with a GBNF grammar the output must follow");
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
    const float big = 1e6f;
    for (const std::string &e : {
             check_float("--temp", o.temp, -big, big, "a finite number; <= 0 is greedy"),
             check_float("--top-p", o.top_p, 0.0f, 1.0f, "0 to 1"),
             check_float("--min-p", o.min_p, 0.0f, 1.0f, "0 to 1"),
             check_float("--typical", o.typical_p, 0.0f, 1.0f, "0 to 1"),
             check_float("--repeat-penalty", o.repeat_penalty, 0.0f, big, "0 or more; 1 is off"),
             check_int("--repeat-last-n", o.repeat_last_n, -1, INT32_MAX, "-1 or more"),
             check_float("--frequency-penalty", o.frequency_penalty, -big, big, "a finite number"),
             check_float("--presence-penalty", o.presence_penalty, -big, big, "a finite number"),
             check_int("--seed", o.seed, -1, 0xFFFFFFFEll, "-1 for a random seed, or 0 to 4294967294"),
             check_float("--dynatemp-range", o.dynatemp_range, 0.0f, big, "0 or more"),
             check_float("--dynatemp-exp", o.dynatemp_exp, 0.0f, big, "0 or more"),
             check_int("--mirostat", o.mirostat, 0, 2, "0, 1 or 2"),
             check_float("--mirostat-lr", o.mirostat_lr, 0.0f, big, "0 or more"),
             check_float("--mirostat-ent", o.mirostat_ent, 0.0f, big, "0 or more"),
             check_float("--xtc-probability", o.xtc_probability, 0.0f, 1.0f, "0 to 1"),
             check_float("--xtc-threshold", o.xtc_threshold, 0.0f, 1.0f, "0 to 1"),
             check_float("--dry-multiplier", o.dry_multiplier, 0.0f, big, "0 or more"),
             check_float("--dry-base", o.dry_base, 1.0f, big, "1 or more"),
             check_int("--dry-allowed-length", o.dry_allowed_length, 0, INT32_MAX, "0 or more"),
             check_int("--dry-penalty-last-n", o.dry_penalty_last_n, -1, INT32_MAX, "-1 or more"),
         })
        if (!e.empty()) return e;
    TokenBias tb;
    std::string why;
    for (const std::string &b : o.logit_bias)
        if (!parse_logit_bias(b, &tb, &why)) return "--logit-bias: " + why;
    if (!o.grammar.empty() && !o.grammar_file.empty())
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
        if (!o.grammar.empty() || !o.grammar_file.empty())
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

void add_gen_options(CLI::App &app, GenOptions &o) {
    app.add_option("-m,--model", o.model_path, "GGUF model file");
    app.add_option("-p,--prompt", o.prompt, "prompt text ('-': read it from standard input)");
    app.add_option("-f,--file", o.prompt_file, "read the prompt from this file");
    app.add_flag(
        "-e,--escape", o.escape,
        "process escapes (\\n, \\t, \\\\, \\xHH, ...) in a prompt from standard input too (-p, -f and "
        "-r always, as llama-cli)");
    app.add_flag("--no-escape", o.no_escape, "do not process escapes in -p, -f or -r");
    app.add_flag("--no-display-prompt", o.no_display_prompt, "do not print the prompt before the output");
    app.add_option("-n,--n-predict", o.n_predict,
                   "tokens to generate (-1: until end of text, shifting the context when full; -2: until the "
                   "context is full)");
    app.add_option("-c,--ctx-size", o.n_ctx, "context size in tokens (0: the model's training context)");
    app.add_option("-b,--batch-size", o.n_batch, "logical batch size (most tokens per decode call)");
    app.add_option("--ubatch-size", o.n_ubatch, "physical batch size (-ub)");
    app.add_option("-t,--threads", o.n_threads, "threads for generation (0: every core)");
    app.add_option("--threads-batch", o.n_threads_batch, "threads for the prompt (-tb; 0: as --threads)");
    app.add_option("--cache-type-k", o.cache_type_k,
                   "KV cache type of K (-ctk): f32, f16, bf16, q8_0, q4_0, q4_1, iq4_nl, q5_0, q5_1");
    app.add_option("--cache-type-v", o.cache_type_v,
                   "KV cache type of V (-ctv), as -ctk; the block types (q8_0 ... q5_1) need -fa");
    app.add_option("--keep", o.n_keep, "prompt tokens kept when the context shifts (-1: the whole prompt)");
    app.add_flag("--no-context-shift", o.no_context_shift,
                 "stop when the context is full instead of shifting");
    app.add_option("-r,--reverse-prompt", o.reverse_prompts,
                   "stop when the output ends with this text (repeatable)")
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    app.add_flag("--flash-attn", o.flash_attn,
                 "(-fa) llama.cpp's flash-attention cache: V stored by rows (a quantized -ctv needs it)");
    app.add_flag("--no-mmap", o.no_mmap, "accepted: lctx maps the file and copies the weights it repacks");
    app.add_flag("--mlock", o.mlock, "lock the model and buffers in memory");
    app.add_option("--n-gpu-layers", o.n_gpu_layers, "(-ngl) accepted: lctx runs on the CPU");
    app.add_flag("--color", o.color, "color the prompt and the user input on a terminal");
    app.add_flag("-q,--log-disable", o.quiet, "no notes, progress or timings on stderr");
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
    for (const std::string &e : {
             check_int("--ctx-size", o.n_ctx, 0, 1 << 24, "0 for the model's, or up to 16777216"),
             check_int("--batch-size", o.n_batch, 1, INT32_MAX, "1 or more"),
             check_int("--ubatch-size", o.n_ubatch, 1, INT32_MAX, "1 or more"),
             check_int("--threads", o.n_threads, 0, 1024, "0 for every core, or up to 1024"),
             check_int("--threads-batch", o.n_threads_batch, 0, 1024, "0 for --threads, or up to 1024"),
             check_int("--keep", o.n_keep, -1, INT32_MAX, "-1 or more"),
         })
        if (!e.empty()) return e;
    for (const std::string &e : {kv_cache_type_from_name(o.cache_type_k, "--cache-type-k", &o.type_k),
                                 kv_cache_type_from_name(o.cache_type_v, "--cache-type-v", &o.type_v)})
        if (!e.empty()) return e;
    // as b4748's llama_init_from_model, before anything loads
    if (type_traits(o.type_v).is_quantized && !o.flash_attn)
        return "--cache-type-v " + o.cache_type_v + ": V cache quantization requires flash_attn (add -fa)";
    for (const std::string &r : o.reverse_prompts)
        if (r.empty()) return "--reverse-prompt: the text is empty";
    o.overrides.clear();
    for (const std::string &a : o.override_kv_args) {
        gguf::KeyValue kv;
        std::string why;
        if (!parse_override_kv(a, &kv, &why)) return "--override-kv '" + a + "': " + why;
        o.overrides.push_back(std::move(kv));
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
    g_log_error.clear();
    llama_log_set(keep_error, nullptr);  // the reason goes into the one-line report, not onto stderr
    const int32_t n = lctx_json_schema_to_grammar(schema.c_str(), nullptr, 0);
    std::string out(n > 0 ? static_cast<size_t>(n) : 0, '\0');
    if (n > 0) lctx_json_schema_to_grammar(schema.c_str(), out.data(), out.size() + 1);
    llama_log_set(nullptr, nullptr);
    if (n < 0) {
        // "lctx_json_schema_to_grammar: REASON\n": the reason alone.
        std::string e = g_log_error;
        if (const size_t at = e.find(": "); at != std::string::npos) e.erase(0, at + 2);
        while (!e.empty() && (e.back() == '\n' || e.back() == ' ')) e.pop_back();
        *why = e.empty() ? "the schema cannot be converted" : e;
        return false;
    }
    *gbnf = std::move(out);
    return true;
}

}  // namespace lctx::cli
