// lctx template: render a conversation with a chat template (a .jinja file or a model's own
// tokenizer.chat_template) the way llama.cpp's chat pipeline does, and print the prompt exactly.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "chat/chat_template.h"
#include "gguf/gguf.h"
#include "tools/lctx/args.h"
#include "tools/lctx/commands.h"
#include "tools/lctx/read_file.h"
#include "vocab/vocab.h"

namespace lctx::cli {

int cmd_template(int argc, char **argv) {
    CLI::App app{"Render a conversation with a chat template (Jinja) and print the prompt", "lctx template"};
    configure_app(app);
    std::string file, model_path, messages_path, bos, eos;
    bool add_generation_prompt = false;
    auto *file_opt = app.add_option("--file", file, "template file (.jinja)");
    auto *model_opt =
        app.add_option("-m,--model", model_path, "GGUF model whose tokenizer.chat_template to use");
    file_opt->excludes(model_opt);
    app.add_option("--messages", messages_path, "JSON file with an OpenAI-style messages array")->required();
    app.add_flag("--add-generation-prompt", add_generation_prompt,
                 "end with the opening of the assistant's turn");
    auto *bos_opt = app.add_option("--bos", bos, "bos_token text (default: the model's, else empty)");
    auto *eos_opt = app.add_option("--eos", eos, "eos_token text (default: the model's, else empty)");
    const int st = parse_or_report(app, "template", normalize_args(argc, argv));
    if (st >= 0) return st;
    if (file.empty() && model_path.empty()) {
        std::fprintf(stderr, "lctx template: give --file T.jinja or -m MODEL\n");
        return 1;
    }
    try {
        std::string source;
        if (!file.empty()) {
            std::string why;
            if (!read_whole_file(file, &source, &why)) throw std::runtime_error("--file: " + why);
        } else {
            const auto gguf = gguf::File::open(model_path);
            const auto tmpl = gguf->get_string("tokenizer.chat_template");
            if (!tmpl) throw std::runtime_error("'" + model_path + "' has no tokenizer.chat_template");
            source = *tmpl;
            const auto vocab = Vocab::load(*gguf);
            if (!bos_opt->count() && vocab->bos() >= 0) bos = vocab->token_to_piece(vocab->bos(), true);
            if (!eos_opt->count() && vocab->eos() >= 0) eos = vocab->token_to_piece(vocab->eos(), true);
        }
        std::string messages_text, why;
        if (!read_whole_file(messages_path, &messages_text, &why))
            throw std::runtime_error("--messages: " + why);
        const auto messages = nlohmann::ordered_json::parse(messages_text);
        if (!messages.is_array())
            throw std::runtime_error("'" + messages_path + "' must hold a JSON array of messages");
        chat::JinjaChatOptions opts;
        opts.add_generation_prompt = add_generation_prompt;
        opts.bos_token = bos;
        opts.eos_token = eos;
        const std::string prompt = chat::jinja_chat_render(source, messages, opts);
        std::fwrite(prompt.data(), 1, prompt.size(), stdout);
        return 0;
    } catch (const std::exception &e) {
        std::fprintf(stderr, "lctx template: %s\n", e.what());
        return 1;
    }
}

}  // namespace lctx::cli
