// lctx tokenize: print the token ids (and pieces) of a text. Reads only the vocabulary, so any GGUF with
// a tokenizer works, a vocabulary-only file of any architecture included.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "gguf/gguf.h"
#include "tools/lctx/args.h"
#include "tools/lctx/commands.h"
#include "tools/lctx/common.h"
#include "vocab/vocab.h"

namespace lctx::cli {

int cmd_tokenize(int argc, char **argv) {
    CLI::App app{"Print the token ids of a text", "lctx tokenize"};
    configure_app(app);
    std::string model_path = default_model_path();
    std::string text;
    bool json = false, no_special = false, parse_special = false, ids_only = false, escape = false;
    app.add_option("-m,--model", model_path, "GGUF model or vocabulary file");
    app.add_option("text,--text", text, "text to tokenize (may start with '-')")->required();
    app.add_flag("--json", json, "print a JSON object {ids, pieces}");
    app.add_flag("--no-special", no_special, "do not add BOS/EOS");
    app.add_flag("--parse-special", parse_special, "map special-token text (e.g. <s>) to its token");
    app.add_flag("--ids", ids_only, "print only the ids, space separated");
    app.add_flag("-e,--escape", escape, "process escapes (\\n, \\t, \\\\, \\xHH, ...) in the text");
    // A text that starts with '-' but is no option ("-hello") is the text, as after "--".
    std::vector<std::string> args = normalize_args(argc, argv);
    for (size_t i = 1; i < args.size(); ++i) {
        const std::string &a = args[i];
        if (a == "--") break;
        if (a.size() < 2 || a[0] != '-' || (a == "-m" || a == "--model")) {
            if (a == "-m" || a == "--model") ++i;  // its value may start with '-' too
            continue;
        }
        if (!app.get_option_no_throw(a.substr(0, a.find('=')))) {
            args.insert(args.begin() + static_cast<std::ptrdiff_t>(i), "--text");
            ++i;
        }
    }
    const int st = parse_or_report(app, "tokenize", args);
    if (st >= 0) return st;
    if (escape) text = process_escapes(text);
    std::unique_ptr<gguf::File> file;
    std::unique_ptr<Vocab> vocab_ptr;
    try {
        file = gguf::File::open(model_path);
        vocab_ptr = Vocab::load(*file);
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
        for (size_t i = 0; i < ids.size(); ++i) std::printf(i ? " %d" : "%d", ids[i]);
        std::printf("\n");
    } else {
        for (int32_t id : ids) std::printf("%6d -> '%s'\n", id, vocab.token_to_piece(id, true).c_str());
    }
    return 0;
}

}  // namespace lctx::cli
