// lctx: the command-line front end. Each subcommand lives in its own file (cmd_*.cpp).
#include <cstdio>
#include <cstring>
#include <string>

#include "tools/lctx/commands.h"

namespace {
void usage() {
    std::fprintf(stderr,
                 "usage: lctx <command> [options]\n"
                 "commands:\n"
                 "  run        generate text from a prompt\n"
                 "  chat       talk with a model (context shift keeps long chats going)\n"
                 "  tokenize   print the token ids of a text\n"
                 "  bench      measure prompt and generation speed (optionally against llama.cpp)\n"
                 "  synth      write a GGUF with random weights in a real model's shape\n"
                 "  template   render a conversation with a chat template (Jinja) and print the prompt\n"
                 "run 'lctx <command> --help' for the options of a command\n");
}
}  // namespace

int main(int argc, char **argv) {
    if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
        usage();
        return argc < 2 ? 1 : 0;
    }
    const std::string cmd = argv[1];
    if (cmd == "run") return lctx::cli::cmd_run(argc - 1, argv + 1);
    if (cmd == "chat") return lctx::cli::cmd_chat(argc - 1, argv + 1);
    if (cmd == "tokenize") return lctx::cli::cmd_tokenize(argc - 1, argv + 1);
    if (cmd == "synth") return lctx::cli::cmd_synth(argc - 1, argv + 1);
    if (cmd == "bench") return lctx::cli::cmd_bench(argc - 1, argv + 1);
    if (cmd == "template") return lctx::cli::cmd_template(argc - 1, argv + 1);
    std::fprintf(stderr, "lctx: unknown command '%s'\n", cmd.c_str());
    usage();
    return 1;
}
