// lctx tokenize: print the token ids (and pieces) of a text.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "tools/lctx/commands.h"
#include "tools/lctx/common.h"
#include "vocab/vocab.h"

namespace lctx::cli {

int cmd_tokenize(int argc, char **argv) {
    CLI::App app{"Print the token ids of a text", "lctx tokenize"};
    std::string model_path = default_model_path();
    std::string text;
    bool json = false, no_special = false, parse_special = false, ids_only = false;
    app.add_option("-m,--model", model_path, "GGUF model file (default: the model shipped in models/)");
    app.add_option("text", text, "text to tokenize")->required();
    app.add_flag("--json", json, "print a JSON object {ids, pieces}");
    app.add_flag("--no-special", no_special, "do not add BOS/EOS");
    app.add_flag("--parse-special", parse_special, "map special-token text (e.g. <s>) to its token");
    app.add_flag("--ids", ids_only, "print only the ids, space separated");
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError &e) {
        return app.exit(e);
    }
    ModelLoadOptions opts;
    opts.vocab_only = true;
    std::unique_ptr<Model> model;
    try {
        model = Model::load(model_path, opts);
    } catch (const std::exception &e) {
        std::fprintf(stderr, "lctx: cannot load model '%s': %s\n", model_path.c_str(), e.what());
        return 1;
    }
    const Vocab &vocab = model->vocab();
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
