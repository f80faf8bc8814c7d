// lctx tokenize: print the token ids (and pieces) of a text. Reads only the vocabulary, so any GGUF with
// a tokenizer works, a vocabulary-only file of any architecture included.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "gguf/gguf.h"
#include "tools/lctx/args.h"
#include "tools/lctx/commands.h"
#include "tools/lctx/common.h"
#include "tools/lctx/read_file.h"
#include "vocab/vocab.h"

namespace lctx::cli {

int cmd_tokenize(int argc, char **argv) {
    CLI::App app{"Print the token ids of a text", "lctx tokenize"};
    configure_app(app);
    std::string model_path = default_model_path();
    std::string text, file;
    bool json = false, no_special = false, parse_special = false, ids_only = false, escape = false;
    bool from_stdin = false, show_count = false, quiet = false;
    app.add_option("-m,--model", model_path, "GGUF model or vocabulary file");
    std::string text_arg;  // -p: the text too (apart from the positional, which CLI11 fills after "--")
    auto *pos_opt = app.add_option("text", text, "text to tokenize (may start with '-')");
    auto *text_opt = app.add_option("-p,--prompt,--text", text_arg, "text to tokenize (llama-tokenize's -p)");
    auto *file_opt = app.add_option("-f,--file", file, "read the text from this file");
    auto *stdin_opt = app.add_flag("--stdin", from_stdin, "read the text from standard input");
    app.add_flag("--json", json, "print a JSON object {ids, pieces}");
    app.add_flag("--no-special,--no-bos", no_special, "do not add BOS/EOS");
    app.add_flag("--parse-special", parse_special, "map special-token text (e.g. <s>) to its token");
    app.add_flag("--ids", ids_only, "print only the ids, as llama-tokenize: [1, 2, 3]");
    app.add_flag("--show-count", show_count, "then print the number of tokens (Total number of tokens: N)");
    app.add_flag("-e,--escape", escape, "process escapes (\\n, \\t, \\\\, \\xHH, ...) in the text");
    app.add_flag("-q,--log-disable", quiet, "accepted: tokenize prints no notes");
    // A text that starts with one '-' but is no option ("-hello") is the text, as after "--"; an unknown word
    // with two ("--jsn") is a mistyped option and refused.
    std::vector<std::string> args = normalize_args(argc, argv);
    for (size_t i = 1; i < args.size(); ++i) {
        const std::string &a = args[i];
        if (a == "--") break;
        const CLI::Option *opt = app.get_option_no_throw(a.substr(0, a.find('=')));
        if (opt && opt->get_items_expected_max() > 0 && a.find('=') == std::string::npos) {
            // Its value may start with '-' too: one word "--name=value", which CLI11 takes whatever it looks
            // like.
            if (i + 1 < args.size() && args[i + 1] != "--" && !opt->get_lnames().empty()) {
                args[i] = "--" + opt->get_lnames()[0] + "=" + args[i + 1];
                args.erase(args.begin() + static_cast<std::ptrdiff_t>(i) + 1);
            }
            continue;
        }
        if (a.size() < 2 || a[0] != '-' || a[1] == '-' || opt) continue;
        args[i] = "--text=" + a;  // one word: CLI11 takes it as the value whatever it looks like
    }
    const int st = parse_or_report(app, "tokenize", args);
    if (st >= 0) return st;
    const int n_sources =
        (pos_opt->count() > 0) + (text_opt->count() > 0) + (file_opt->count() > 0) + (stdin_opt->count() > 0);
    if (n_sources != 1) {
        std::fprintf(stderr, "lctx tokenize: %s (see 'lctx tokenize --help')\n",
                     n_sources == 0 ? "no text: give TEXT, -p TEXT, -f FILE or --stdin"
                                    : "give the text one way: TEXT (or -p), -f FILE or --stdin");
        return 1;
    }
    if (text_opt->count() > 0) {
        text = text_arg;
    } else if (!file.empty()) {
        std::string why;
        if (!read_whole_file(file, &text, &why)) {
            std::fprintf(stderr, "lctx tokenize: -f: %s\n", why.c_str());
            return 1;
        }
    } else if (from_stdin) {
        text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
    }
    if (escape) text = process_escapes(text);
    std::unique_ptr<gguf::File> file_ptr;
    std::unique_ptr<Vocab> vocab_ptr;
    try {
        file_ptr = gguf::File::open(model_path);
        vocab_ptr = Vocab::load(*file_ptr);
    } catch (const std::exception &e) {
        std::fprintf(stderr, "lctx tokenize: cannot load the vocabulary of '%s': %s\n", model_path.c_str(),
                     e.what());
        return 1;
    }
    const Vocab &vocab = *vocab_ptr;
    const std::vector<int32_t> ids = vocab.tokenize(text, !no_special, parse_special);
    if (json) {
        nlohmann::json out;
        out["ids"] = ids;
        nlohmann::json pieces = nlohmann::json::array();
        for (int32_t id : ids) pieces.push_back(vocab.token_to_piece(id, true));
        out["pieces"] = pieces;
        std::printf("%s\n", out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    } else if (ids_only) {
        std::printf("[");
        for (size_t i = 0; i < ids.size(); ++i) std::printf(i ? ", %d" : "%d", ids[i]);
        std::printf("]\n");
    } else {
        for (int32_t id : ids) std::printf("%6d -> '%s'\n", id, vocab.token_to_piece(id, true).c_str());
    }
    if (show_count) std::printf("Total number of tokens: %zu\n", ids.size());
    return 0;
}

}  // namespace lctx::cli
