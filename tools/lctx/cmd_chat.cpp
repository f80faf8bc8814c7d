// lctx chat: a conversation. On a terminal: a prompt marker, line editing and history, multi-line input
// (a trailing backslash), /commands, and Ctrl-C that stops the current reply. Through a pipe: one reply
// per input line (--json: one JSON object per reply). Each user turn is rendered in the model's chat
// format, the new part of the conversation is decoded on top of the cached one, and the reply is
// streamed. When the KV cache is full, the context shifts: the first n_keep tokens (the system prompt)
// stay, half of the rest is dropped, and the conversation goes on. With --prompt-cache the first prompt
// (system prompt and first message) reuses what a saved session file starts with (prompt_cache.h, as run).
// Written over llama.h and the generation layer (src/generate/: the sampler chain, the context shift,
// prompt-cache files); the chat templates are src/chat/'s, above the engine.
#include <sys/mman.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "chat/builtin_templates.h"
#include "chat/chat_format.h"
#include "chat/chat_template.h"
#include "generate/context_shift.h"
#include "generate/sampling_chain.h"
#include "generate/tokens.h"
#include "llama.h"
#include "tools/lctx/capi_handles.h"
#include "tools/lctx/capi_model.h"
#include "tools/lctx/cli_sampling.h"
#include "tools/lctx/commands.h"
#include "tools/lctx/control_vector_options.h"
#include "tools/lctx/gen_options.h"
#include "tools/lctx/interrupt.h"
#include "tools/lctx/line_reader.h"
#include "tools/lctx/prompt_cache.h"
#include "tools/lctx/read_file.h"
#include "tools/lctx/token_probs.h"
#include "tools/lctx/utf8_stream.h"

namespace lctx::cli {

namespace {

// The names --format and --chat-template take: llama.cpp's built-in formats (llama_chat_builtin_templates,
// the C API's list), and raw (no template: one turn after another).
std::string format_names() {
    std::string s;
    for (const char *n : chat::builtin_template_names()) s += std::string(n) + ", ";
    return s + "raw";
}

// The built-in format a name stands for ("" for raw), as llama_chat_apply_template reads it: an exact name,
// else b4748's heuristics (a template's text, "mistral"); false when it stands for none.
bool format_by_name(const std::string &name, std::string *out) {
    if (name == "raw") {
        out->clear();
        return true;
    }
    *out = chat::builtin_template_detect(name);
    return !out->empty();
}

struct ChatSession {
    ChatSession(llama_context *c, int32_t n_ctx_, int32_t n_batch_)
        : ctx(c), n_ctx(n_ctx_), n_batch(n_batch_), batch(llama_batch_init(n_batch_, 0, 1)) {}
    ~ChatSession() { llama_batch_free(batch); }
    ChatSession(const ChatSession &) = delete;
    ChatSession &operator=(const ChatSession &) = delete;
    llama_context *ctx;
    int32_t n_ctx;    // the cells the chat keeps to (-c; llama.h may have rounded the cache up)
    int32_t n_batch;  // most tokens of one decode
    llama_batch batch;
    std::vector<llama_token> tokens;  // what the KV cache holds, position by position
    generate::ContextShift shift;     // n_keep: tokens never dropped (BOS and the system prompt); enabled:
                                      // false with --no-context-shift or -n -2
    int64_t n_decoded = 0;            // tokens decoded so far
    std::vector<std::string> notes;   // context-shift notes, printed after the reply (never inside a word)

    int32_t n_past() const { return static_cast<int32_t>(tokens.size()); }

    // Makes room for n more tokens, shifting as often as needed. False if even a shift cannot help.
    bool make_room(int32_t n) {
        // Positions, not cells: a recurrent model's cache has n_seq_max cells.
        if (n > n_ctx - shift.n_keep - 1) return false;
        while (n_past() + n > n_ctx) {
            const int32_t dropped = generate::shift_context(ctx, 0, shift);
            if (dropped == 0) return false;
            tokens.erase(tokens.begin() + shift.n_keep, tokens.begin() + shift.n_keep + dropped);
            notes.push_back("[context shift: dropped " + std::to_string(dropped) + " tokens, kept " +
                            std::to_string(shift.n_keep) + "]");
        }
        return true;
    }

    bool feed(const std::vector<llama_token> &toks) {
        for (size_t i = 0; i < toks.size(); i += static_cast<size_t>(n_batch)) {
            const int32_t n = std::min<int32_t>(n_batch, static_cast<int32_t>(toks.size() - i));
            if (!make_room(n)) return false;
            batch.n_tokens = n;
            for (int32_t k = 0; k < n; ++k) {
                batch.token[k] = toks[i + static_cast<size_t>(k)];
                batch.pos[k] = n_past() + k;
                batch.n_seq_id[k] = 1;
                batch.seq_id[k][0] = 0;
                batch.logits[k] = k == n - 1;
            }
            if (llama_decode(ctx, batch) != 0) return false;
            n_decoded += n;
            tokens.insert(tokens.end(), toks.begin() + static_cast<std::ptrdiff_t>(i),
                          toks.begin() + static_cast<std::ptrdiff_t>(i) + n);
        }
        return true;
    }

    void clear() {
        llama_kv_cache_clear(ctx);
        tokens.clear();
        shift.n_keep = 0;
    }
};

const char *const kHelp =
    "commands:\n"
    "  /help         this list\n"
    "  /clear        forget the conversation (the system prompt stays)\n"
    "  /save FILE    save the conversation's state (a llama.cpp session file)\n"
    "  /load FILE    load a state saved by /save\n"
    "  /quit         leave (also Ctrl-D, or Ctrl-C at the prompt)\n"
    "a line ending in \\ continues on the next line; Ctrl-C stops a reply; //text sends /text\n";

}  // namespace

int cmd_chat(int argc, char **argv) {
    CLI::App app{
        "Talk with a model: on a terminal with line editing and /commands, else one user turn per "
        "line of standard input",
        "lctx chat"};
    configure_app(app);
    GenOptions o;
    o.n_predict = 256;
    std::string system, format_name, chat_template;
    bool verbose = false, verbose_prompt = false, conversation = false, interactive = false;
    add_gen_options(app, o);
    ControlVectorOptions cvec;
    add_control_vector_options(app, cvec);
    app.add_option("--system,--system-prompt", system, "system prompt (-sys; kept through context shifts)");
    app.add_option("--format", format_name,
                   "chat format: one of llama.cpp's 33 built-in names (chatml, llama3, gemma, ...; a wrong "
                   "one lists them) or raw (default: the model's template)");
    app.add_option("--chat-template", chat_template,
                   "a built-in chat format by name (as --format) or a template's text to recognize");
    app.add_flag("-v,--verbose", verbose, "say which chat format is used, and report context shifts");
    app.add_flag("--verbose-prompt", verbose_prompt, "print each rendered prompt on stderr");
    app.add_flag("--conversation", conversation, "(-cnv) accepted: chat is always a conversation");
    app.add_flag("-i,--interactive,--interactive-first", interactive, "accepted: chat is always interactive");
    app.add_flag("--json", o.json, "print one JSON object {reply, n_tokens, stop} per reply");
    PromptCacheOptions pc_opts;
    add_prompt_cache_options(app, pc_opts);
    int32_t n_probs = 0;
    add_n_probs_option(app, n_probs);
    std::string in_prefix, in_suffix, template_file;
    bool in_prefix_bos = false, jinja = false;
    app.add_option("--in-prefix", in_prefix,
                   "text decoded before each line you type (special tokens parsed)");
    app.add_option("--in-suffix", in_suffix, "text decoded after each line you type (special tokens parsed)");
    app.add_flag("--in-prefix-bos", in_prefix_bos,
                 "a BOS token before each line you type (and its --in-prefix)");
    app.add_option("--chat-template-file", template_file,
                   "a file with a chat template: recognized as a built-in format, or rendered through Jinja "
                   "with --jinja")
        ->check(non_empty_value());
    app.add_flag("--jinja", jinja,
                 "render a template given with --chat-template / --chat-template-file through Jinja (the "
                 "model's own template always is)");
    const int st = parse_or_report(app, "chat", normalize_args(argc, argv));
    if (st >= 0) return st;
    o.prompt_given = app.count("--prompt") > 0;
    if (const std::string e = check_gen_options(o); !e.empty()) {
        std::fprintf(stderr, "lctx chat: %s\n", e.c_str());
        return 1;
    }
    if (const std::string e = check_n_probs(n_probs, o.json); !e.empty()) {
        std::fprintf(stderr, "lctx chat: %s\n", e.c_str());
        return 1;
    }
    PromptCache cache(pc_opts);
    if (const std::string e = cache.check(); !e.empty()) {
        std::fprintf(stderr, "lctx chat: %s\n", e.c_str());
        return 1;
    }
    if (!template_file.empty()) {
        if (!chat_template.empty() || !format_name.empty()) {
            std::fprintf(stderr,
                         "lctx chat: --chat-template-file and --chat-template / --format: give one of "
                         "them\n");
            return 1;
        }
        std::string why;
        if (!read_whole_file(template_file, &chat_template, &why)) {
            std::fprintf(stderr, "lctx chat: --chat-template-file: %s\n", why.c_str());
            return 1;
        }
        if (chat_template.empty()) {
            std::fprintf(stderr, "lctx chat: --chat-template-file: '%s' is empty\n", template_file.c_str());
            return 1;
        }
    }
    // --jinja with a template's text: that text is the template, rendered as the model's own would be.
    const bool cli_is_text =
        chat_template.find("{%") != std::string::npos || chat_template.find("{{") != std::string::npos;
    std::string jinja_template;
    if (jinja && cli_is_text) {
        jinja_template = chat_template;
        chat_template.clear();
    } else if (!template_file.empty() && !cli_is_text) {
        std::fprintf(stderr, "lctx chat: --chat-template-file: '%s' holds no Jinja template ({%% or {{)\n",
                     template_file.c_str());
        return 1;
    }
    std::string builtin;  // the built-in format in use; "" with the model's template, or raw
    std::string format_source;
    if (!format_name.empty() || !chat_template.empty()) {
        const std::string &given = !format_name.empty() ? format_name : chat_template;
        format_source = !format_name.empty()     ? "--format"
                        : !template_file.empty() ? "--chat-template-file"
                                                 : "--chat-template";
        if (!format_by_name(given, &builtin)) {
            const bool is_text =
                given.find("{%") != std::string::npos || given.find("{{") != std::string::npos;
            if (is_text)
                std::fprintf(stderr,
                             "lctx chat: %s: the template is none of the built-in formats; pass --jinja to "
                             "render it as a model's own template, or name a format (%s)\n",
                             format_source.c_str(), format_names().c_str());
            else
                std::fprintf(stderr, "lctx chat: %s: unknown chat format '%s' (known: %s)\n",
                             format_source.c_str(), given.c_str(), format_names().c_str());
            return 1;
        }
    }
    if (!resolve_prompt(o, "chat", /*stdin_allowed=*/false)) return 1;
    note_compat_options(o, "chat");
    const uint32_t seed = resolve_seed(o.sampling);
    interrupt_install();

    capture_capi_errors();  // llama.h's log kept for the one-line reports, not printed
    const ModelPtr model_owner = load_model_capi(o.model_path, o.quiet, o.overrides);
    if (!model_owner) return 1;
    llama_model *model = model_owner.get();
    if (!check_generates_text(model, o.model_path, "chat")) return 1;
    if (llama_model_has_encoder(model)) {
        char arch[128] = {0};
        llama_model_meta_val_str(model, "general.architecture", arch, sizeof arch);
        std::fprintf(stderr,
                     "lctx chat: '%s' is an encoder-decoder model (%s): a chat needs a decoder-only model; "
                     "'lctx run -m %s -p TEXT' generates from one input\n",
                     o.model_path.c_str(), arch, o.model_path.c_str());
        return 1;
    }
    std::vector<LoraPtr> adapters;
    if (!load_loras_capi(model, o.loras, "chat", adapters)) return 1;
    const llama_vocab *vocab = llama_model_get_vocab(model);
    // The model's own template runs through the Jinja engine (chat/chat_template.h), as llama.cpp's chat
    // pipeline renders it; a name given on the command line, or a model without a template, uses the
    // built-in formats.
    std::string model_template;
    std::string format_label;
    if (!jinja_template.empty()) {
        model_template = jinja_template;
        format_source =
            template_file.empty() ? "--chat-template, through Jinja" : template_file + ", through Jinja";
    } else if (format_source.empty()) {
        const char *t = llama_model_chat_template(model, nullptr);
        model_template = t ? t : "";
        format_source =
            model_template.empty() ? "the model has no chat template" : "the model's template, through Jinja";
    }
    chat::ChatRenderOptions render_opts;
    const llama_token bos = llama_vocab_bos(vocab), eos = llama_vocab_eos(vocab);
    render_opts.bos_token = bos >= 0 ? generate::token_piece(vocab, bos, true) : "";
    render_opts.eos_token = eos >= 0 ? generate::token_piece(vocab, eos, true) : "";
    render_opts.fallback = chat_format_name(chat_format_detect(model_template));
    auto render = [&](const std::vector<ChatMessage> &msgs, bool add_assistant) {
        if (model_template.empty()) {
            if (builtin.empty()) return chat_format_apply(ChatFormat::Raw, msgs, add_assistant);
            std::string out;
            chat::builtin_template_apply(builtin, msgs, add_assistant, out);
            return out;
        }
        chat::ChatRenderOptions ro = render_opts;
        ro.add_generation_prompt = add_assistant;
        chat::ChatRenderResult r = chat::chat_render(model_template, msgs, ro);
        if (format_label.empty()) {
            format_label = r.format;
            if (!r.jinja_error.empty() && !o.quiet)
                std::fprintf(stderr, "lctx chat: the model's template failed (%s); using the %s format\n",
                             r.jinja_error.c_str(), r.format.c_str());
        }
        return r.prompt;
    };
    // Text that starts with the BOS the template printed must not get a second one from the tokenizer.
    auto starts_with_bos = [&](const std::string &text) {
        return !render_opts.bos_token.empty() && text.rfind(render_opts.bos_token, 0) == 0;
    };

    note_context_size(model, o.n_ctx, o.type_k, o.type_v, "chat", o.quiet);
    const ContextShape shape = context_shape(model, o, std::min(o.n_batch, 2048));
    const ContextPtr ctx_owner = make_context_capi(model, o, shape);
    if (!ctx_owner) return 1;
    llama_context *ctx = ctx_owner.get();
    if (const std::string e = apply_control_vector_options(cvec, model, ctx, o.quiet, "chat"); !e.empty()) {
        std::fprintf(stderr, "lctx chat: %s\n", e.c_str());
        return 1;
    }
    apply_loras_capi(ctx, o.loras, adapters);
    if (o.mlock && mlockall(MCL_CURRENT) != 0 && !o.quiet)
        std::fprintf(stderr, "lctx chat: note: --mlock failed: %s (see ulimit -l)\n", std::strerror(errno));
    const int32_t n_ctx = shape.n_ctx;
    ChatSession session(ctx, n_ctx, shape.n_batch);
    session.shift.enabled = !o.no_context_shift && o.n_predict != -2;
    std::string chain_error;
    llama_sampler *chain = make_cli_sampler_chain(o.sampling, vocab, n_ctx, &chain_error);
    if (!chain) {
        std::fprintf(stderr, "lctx chat: %s\n", chain_error.c_str());
        return 1;
    }
    struct ChainFree {
        llama_sampler *s;
        ~ChainFree() { llama_sampler_free(s); }
    } chain_free{chain};
    const int32_t n_vocab = llama_vocab_n_tokens(vocab);

    LineReader reader(isatty(STDIN_FILENO) != 0);
    const bool tty_out = isatty(STDOUT_FILENO) != 0;
    const bool color = o.color && tty_out;
    if (verbose || (reader.interactive() && !o.quiet))
        std::fprintf(stderr, "lctx chat: format %s (%s), seed %u, context %d tokens\n",
                     model_template.empty() ? (builtin.empty() ? "raw" : builtin.c_str()) : "jinja",
                     format_source.c_str(), seed, n_ctx);
    if (reader.interactive() && !o.quiet)
        std::fprintf(stderr, "lctx chat: /help lists the commands; Ctrl-C stops a reply, Ctrl-D leaves\n");

    std::vector<ChatMessage> messages;
    std::string rendered;
    std::vector<llama_token> head;  // BOS and the system prompt
    // --prompt-cache: the head waits for the first turn, whose prompt (head and first message) reuses what
    // the file holds; until then the KV cache holds the file's state and nothing else.
    bool cache_pending = cache.enabled();
    // The system prompt (and BOS) is decoded first and kept through every shift.
    auto start = [&]() -> bool {
        if (!cache_pending) session.clear();
        messages.clear();
        if (!system.empty()) messages.push_back({"system", system});
        rendered = render(messages, false);
        if (verbose_prompt) std::fprintf(stderr, "[prompt] %s\n", rendered.c_str());
        head = generate::tokenize(vocab, rendered, !starts_with_bos(rendered), true);
        if (cache_pending) return static_cast<int32_t>(head.size()) < n_ctx;
        if (!session.feed(head)) return false;
        session.shift.n_keep = session.n_past();
        return true;
    };
    if (!start()) {
        std::fprintf(stderr, "lctx chat: the system prompt does not fit the context of %d tokens\n", n_ctx);
        return 1;
    }
    if (const std::string e = cache.load(ctx); !e.empty()) {
        std::fprintf(stderr, "lctx chat: %s\n", e.c_str());
        return 1;
    }
    nlohmann::json cache_json;  // --json: what the first prompt took from the cache, in the first reply
    // The first prompt with --prompt-cache: the head and the first turn's tokens, less the prefix the file
    // held, are decoded and the state is saved (unless read-only). False when the head cannot be decoded;
    // the turn's tokens that do not fit are reported by the turn, as without the cache.
    auto first_prompt = [&](const std::vector<llama_token> &toks, bool *toks_fit) -> bool {
        cache_pending = false;
        std::vector<llama_token> full = head;
        full.insert(full.end(), toks.begin(), toks.end());
        const int64_t before = session.n_decoded;
        const size_t reused = static_cast<size_t>(cache.reuse(ctx, full));
        session.tokens.assign(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(reused));
        if (reused < head.size() && !session.feed(std::vector<llama_token>(
                                        head.begin() + static_cast<std::ptrdiff_t>(reused), head.end())))
            return false;
        session.shift.n_keep = static_cast<int32_t>(head.size());
        *toks_fit = session.feed(std::vector<llama_token>(
            full.begin() + static_cast<std::ptrdiff_t>(std::max(reused, head.size())), full.end()));
        const int32_t decoded = static_cast<int32_t>(session.n_decoded - before);
        if (o.json)
            cache_json = {{"file", cache.path()},
                          {"prompt_tokens", full.size()},
                          {"reused", reused},
                          {"decoded", decoded}};
        else if (!o.quiet)
            std::fprintf(stderr, "lctx chat: %s (%d decoded)\n", cache.report(full.size()).c_str(), decoded);
        if (*toks_fit)
            if (const std::string e = cache.save_prompt(ctx, full); !e.empty())
                std::fprintf(stderr, "lctx chat: %s\n", e.c_str());
        return true;
    };

    auto flush_notes = [&] {
        if (!o.quiet)
            for (const std::string &n : session.notes) std::fprintf(stderr, "%s\n", n.c_str());
        session.notes.clear();
    };

    // One user turn: render, decode, stream the reply.
    // A typed line (typed = true) gets --in-prefix-bos, --in-prefix and --in-suffix around its turn, as
    // llama-cli puts them around each input.
    auto turn = [&](const std::string &user, bool typed) -> bool {
        messages.push_back({"user", user});
        const std::string full = render(messages, true);
        const std::string delta = full.substr(std::min(rendered.size(), full.size()));
        const std::string pre = typed ? in_prefix : "", post = typed ? in_suffix : "";
        if (verbose_prompt)
            std::fprintf(stderr, "[prompt] %s%s%s\n", pre.c_str(), delta.c_str(), post.c_str());
        std::vector<llama_token> toks;
        if (typed && in_prefix_bos && bos >= 0) toks.push_back(bos);
        for (const std::string &text : {pre, delta, post}) {
            const std::vector<llama_token> t = generate::tokenize(vocab, text, false, true);
            toks.insert(toks.end(), t.begin(), t.end());
        }
        bool fits = true;
        if (cache_pending) {
            if (!first_prompt(toks, &fits)) {
                std::fprintf(stderr, "lctx chat: decoding the system prompt failed\n");
                return false;
            }
        } else {
            fits = session.feed(toks);
        }
        if (!fits) {
            flush_notes();
            std::fprintf(stderr, "lctx chat: this message (%zu tokens) does not fit the context\n",
                         toks.size());
            messages.pop_back();
            return true;
        }
        std::string reply;
        nlohmann::json probs = nlohmann::json::array();  // --n-probs: one list per sampled token
        std::string stop = "-n reached";
        int32_t n_tokens = 0;
        Utf8Stream out(stdout);
        generate::reset_grammar(chain);  // each reply is a text of the grammar's own
        interrupt_begin_reply();
        for (int32_t i = 0; o.n_predict < 0 || i < o.n_predict; ++i) {
            if (interrupt_requested()) {
                stop = "interrupted";
                break;
            }
            if (o.sampling.ignore_eos && generate::grammar_exhausted(chain, vocab)) {
                stop = "grammar complete";
                break;
            }
            if (n_probs > 0)
                probs.push_back(top_probs(llama_get_logits_ith(ctx, -1), n_vocab, n_probs, vocab));
            const llama_token id = llama_sampler_sample(chain, ctx, -1);  // accepts it
            if (id == LLAMA_TOKEN_NULL) {
                interrupt_end_reply();
                std::fprintf(stderr, "\nlctx chat: sampling failed: %s\n", capi_last_error().c_str());
                return false;
            }
            if (llama_vocab_is_eog(vocab, id) && !o.sampling.ignore_eos) {
                stop = "end of text";
                break;
            }
            const std::string piece = generate::token_piece(vocab, id, o.special);
            reply += piece;
            ++n_tokens;
            if (!o.json) out.write(piece);
            if (!session.shift.enabled && session.n_past() >= n_ctx) {
                stop = "context full";
                break;
            }
            if (!session.feed({id})) {
                interrupt_end_reply();
                std::fprintf(stderr, "\nlctx chat: decode failed\n");
                return false;
            }
            bool reversed = false;
            for (const std::string &r : o.reverse_prompts)
                reversed = reversed || (reply.size() >= r.size() &&
                                        reply.compare(reply.size() - r.size(), r.size(), r) == 0);
            if (reversed) {
                stop = "reverse prompt";
                break;
            }
        }
        interrupt_end_reply();
        // --prompt-cache-all: the conversation so far, saved before the reply ends (a caller that reads the
        // reply's end finds the file written).
        if (cache.save_all())
            if (const std::string e = cache.save_tokens(ctx, session.tokens); !e.empty())
                std::fprintf(stderr, "lctx chat: %s\n", e.c_str());
        if (o.json) {
            nlohmann::json j;
            j["reply"] = reply;
            j["n_tokens"] = n_tokens;
            j["stop"] = stop;
            if (n_probs > 0) j["probs"] = probs;
            if (!cache_json.is_null()) j["prompt_cache"] = std::move(cache_json);
            cache_json = nullptr;
            std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
        } else {
            out.flush();
            std::printf("\n");
        }
        std::fflush(stdout);
        flush_notes();
        if (stop == "interrupted" && !o.quiet && !o.json) std::fprintf(stderr, "[reply stopped]\n");
        messages.push_back({"assistant", reply});
        rendered = render(messages, false);
        return true;
    };

    if (o.prompt_given && !o.prompt.empty() && !turn(o.prompt, false)) return 1;

    // Colors in a readline prompt sit between \001 and \002 so that it knows the prompt's width.
    const bool rl = std::string(LineReader::backend()) != "none";
    auto paint = [&](const char *text) {
        if (!color) return std::string(text);
        return std::string(rl ? "\001\033[32m\002" : "\033[32m") + text +
               (rl ? "\001\033[0m\002" : "\033[0m");
    };
    const std::string marker = paint("> "), more = paint(". ");
    for (;;) {
        std::optional<std::string> in = reader.read(marker, more);
        if (!in) break;
        std::string line = *in;
        if (line.empty()) continue;
        if (line[0] == '/' && line.rfind("//", 0) != 0) {
            const size_t sp = line.find(' ');
            const std::string cmd = line.substr(0, sp);
            std::string arg = sp == std::string::npos ? "" : line.substr(sp + 1);
            while (!arg.empty() && arg.back() == ' ') arg.pop_back();
            if (cmd == "/quit" || cmd == "/exit") break;
            if (cmd == "/help") {
                std::fputs(kHelp, stderr);
            } else if (cmd == "/clear") {
                if (!start()) return 1;
                llama_sampler_reset(chain);
                std::fprintf(stderr, "[conversation cleared]\n");
            } else if (cmd == "/save" || cmd == "/load") {
                if (arg.empty()) {
                    std::fprintf(stderr, "%s needs a file name\n", cmd.c_str());
                    continue;
                }
                if (cmd == "/save") {
                    // The system prompt still waiting for a first turn is decoded (and cached) now.
                    bool fits = true;
                    if (cache_pending && !first_prompt({}, &fits)) {
                        std::fprintf(stderr, "lctx chat: decoding the system prompt failed\n");
                        return 1;
                    }
                    if (llama_state_save_file(ctx, arg.c_str(), session.tokens.data(), session.tokens.size()))
                        std::fprintf(stderr, "[saved %d tokens to %s]\n", session.n_past(), arg.c_str());
                    else
                        std::fprintf(stderr, "%s: %s\n", cmd.c_str(), capi_last_error().c_str());
                    continue;
                }
                std::vector<llama_token> toks(static_cast<size_t>(n_ctx));
                size_t n_loaded = 0;
                if (!llama_state_load_file(ctx, arg.c_str(), toks.data(), toks.size(), &n_loaded)) {
                    // A file that opens but does not load holds another model's or context's state: the
                    // library's reason is the detail, what to do comes first.
                    std::error_code ec;
                    if (std::filesystem::is_regular_file(arg, ec) && ::access(arg.c_str(), R_OK) == 0)
                        std::fprintf(
                            stderr,
                            "/load: '%s' does not fit this chat (%s); load a file that /save wrote in a "
                            "chat with this model and the same -c, -ctk and -ctv\n",
                            arg.c_str(), capi_last_error().c_str());
                    else
                        std::fprintf(stderr, "%s: %s\n", cmd.c_str(), capi_last_error().c_str());
                    continue;
                }
                toks.resize(n_loaded);
                session.tokens = std::move(toks);
                cache_pending = false;  // the loaded state replaces the --prompt-cache file's
                // The loaded conversation's own head is kept if it starts with this one's.
                const bool same_head = session.tokens.size() >= head.size() &&
                                       std::equal(head.begin(), head.end(), session.tokens.begin());
                session.shift.n_keep = same_head ? static_cast<int32_t>(head.size()) : 0;
                // Later turns are rendered on their own, after the loaded text.
                messages.clear();
                rendered.clear();
                llama_sampler_reset(chain);
                generate::accept_prompt(chain, session.tokens);
                std::fprintf(stderr, "[loaded %d tokens from %s]\n", session.n_past(), arg.c_str());
            } else {
                std::fprintf(stderr, "unknown command '%s' (/help lists them; //text sends /text)\n",
                             cmd.c_str());
            }
            continue;
        }
        if (line.rfind("//", 0) == 0) line.erase(0, 1);
        if (!turn(line, true)) return 1;
    }
    if (reader.interactive()) std::printf("\n");
    return 0;
}

}  // namespace lctx::cli
