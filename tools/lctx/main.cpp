// lctx: the command-line front end. Each subcommand lives in its own file (cmd_*.cpp).
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "kernels/dot.h"
#include "tools/lctx/args.h"
#include "tools/lctx/commands.h"

namespace {
// On stdout when asked for (--help), on stderr after a mistake.
void usage(std::FILE *to) {
    std::fprintf(
        to,
        "usage: lctx <command> [options]\n"
        "commands:\n"
        "  run        generate text from a prompt (-cnv or -i: chat instead)\n"
        "  chat       talk with a model (context shift keeps long chats going)\n"
        "  infill     fill in the middle between --in-prefix and --in-suffix (a FIM model, as llama-infill)\n"
        "  tokenize   print the token ids of a text\n"
        "  embed      print the embedding of each text (or its relevance score with a reranker)\n"
        "  perplexity the perplexity of a model on a text (as llama-perplexity)\n"
        "  bench      measure prompt and generation speed (optionally against llama.cpp)\n"
        "  synth      write a GGUF with random weights in a real model's shape\n"
        "  quantize   rewrite a GGUF model at another quantization (llama-quantize's types and mixtures)\n"
        "  template   render a conversation with a chat template (Jinja) and print the prompt\n"
        "  grammar    check a text against a GBNF grammar (grammar check GRAMMAR INPUT)\n"
        "  serve      an OpenAI-compatible HTTP server with continuous batching\n"
        "  split      split a GGUF model into parts, or merge the parts (llama.cpp's gguf-split)\n"
        "  info       describe a GGUF file: architecture, parameters, types, vocabulary, metadata, tensors\n"
        "run 'lctx <command> --help' for the options of a command; 'lctx --version' for the build\n");
}

int dispatch(int argc, char **argv) {
    const std::string cmd = argv[1];
    if (cmd == "--version") {
        std::printf("%s\n", lctx::cli::version_string().c_str());
        // The kernel level this CPU runs (LCTX_ISA caps it): what a bug report needs, and what the test
        // script reads to leave out the level copy that repeats the unprefixed tests.
        std::printf("kernels: %s (this CPU: %s)\n", lctx::kernels::isa_name(lctx::kernels::isa_active()),
                    lctx::kernels::isa_name(lctx::kernels::isa_detected()));
        return 0;
    }
    if (cmd == "run") {
        // llama-cli habits: `run -cnv` / `run -i` is a conversation.
        for (int i = 2; i < argc && std::strcmp(argv[i], "--") != 0; ++i)
            for (const char *flag : {"-cnv", "--conversation", "-i", "--interactive", "--interactive-first"})
                if (!std::strcmp(argv[i], flag)) return lctx::cli::cmd_chat(argc - 1, argv + 1);
        return lctx::cli::cmd_run(argc - 1, argv + 1);
    }
    if (cmd == "chat") return lctx::cli::cmd_chat(argc - 1, argv + 1);
    if (cmd == "infill") return lctx::cli::cmd_infill(argc - 1, argv + 1);
    if (cmd == "tokenize") return lctx::cli::cmd_tokenize(argc - 1, argv + 1);
    if (cmd == "embed") return lctx::cli::cmd_embed(argc - 1, argv + 1);
    if (cmd == "perplexity") return lctx::cli::cmd_perplexity(argc - 1, argv + 1);
    if (cmd == "synth") return lctx::cli::cmd_synth(argc - 1, argv + 1);
    if (cmd == "quantize") return lctx::cli::cmd_quantize(argc - 1, argv + 1);
    if (cmd == "bench") return lctx::cli::cmd_bench(argc - 1, argv + 1);
    if (cmd == "template") return lctx::cli::cmd_template(argc - 1, argv + 1);
    if (cmd == "grammar") return lctx::cli::cmd_grammar(argc - 1, argv + 1);
    if (cmd == "serve") return lctx::cli::cmd_serve(argc - 1, argv + 1);
    if (cmd == "split") return lctx::cli::cmd_split(argc - 1, argv + 1);
    if (cmd == "info") return lctx::cli::cmd_info(argc - 1, argv + 1);
    std::fprintf(stderr, "lctx: unknown command '%s'\n", cmd.c_str());
    usage(stderr);
    return 1;
}
}  // namespace

int main(int argc, char **argv) {
    if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 1 : 0;
    }
    // Every error that escapes a command (a model producing NaN, a failed allocation, ...) is reported
    // here in one line: the CLI never ends in an abort or a core dump.
    try {
        const int status = dispatch(argc, argv);
        // Output that never arrived (a full disk, a closed pipe) is a failure, not success: stdio only
        // reports it through the stream's error flag and the final flush.
        const int flushed = std::fflush(stdout);
        if (flushed != 0 || std::ferror(stdout)) {
            const int err = errno;
            std::fprintf(stderr, "lctx%s%s: error: writing the standard output failed: %s\n",
                         argv[1][0] == '-' ? "" : " ", argv[1][0] == '-' ? "" : argv[1],
                         flushed != 0 ? std::strerror(err) : "an earlier write failed");
            return 1;
        }
        return status;
    } catch (const std::exception &e) {
        std::fflush(stdout);
        std::fprintf(stderr, "\nlctx %s: error: %s\n", argv[1], e.what());
    } catch (...) {
        std::fflush(stdout);
        std::fprintf(stderr, "\nlctx %s: error: unknown exception\n", argv[1]);
    }
    return 1;
}
