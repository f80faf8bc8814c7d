// lctx synth: write a GGUF with random weights in the shape of a real model, for benchmarks that must not
// depend on downloading weights. Both lctx and llama.cpp load the result.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>

#include "tools/lctx/args.h"
#include "tools/lctx/commands.h"
#include "tools/lctx/synth_model.h"

namespace lctx::cli {

namespace {

std::string join(const std::vector<std::string> &v) {
    std::string s;
    for (const std::string &x : v) s += (s.empty() ? "" : ", ") + x;
    return s;
}

// fixtures/vocab of the source tree (beside models/ of the default model), ./fixtures/vocab, or next to
// the binary (build/bin/../../fixtures/vocab).
std::string find_vocab(const std::string &file) {
    namespace fs = std::filesystem;
    std::vector<fs::path> dirs = {
        fs::path(LCTX_DEFAULT_MODEL).parent_path().parent_path() / "fixtures" / "vocab",
        fs::path("fixtures") / "vocab"};
    std::error_code ec;
    const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    if (!ec) dirs.push_back(exe.parent_path() / ".." / ".." / "fixtures" / "vocab");
    for (const fs::path &d : dirs)
        if (fs::exists(d / file, ec)) return (d / file).string();
    return "";
}

}  // namespace

int cmd_synth(int argc, char **argv) {
    CLI::App app{"Write a GGUF with random weights in the shape of a real model", "lctx synth"};
    configure_app(app);
    std::string shape_name, type_arg = "Q4_0", out, vocab_path;
    uint64_t seed = 42;
    int n_threads = 0;
    app.add_option("--shape", shape_name, "model shape: " + join(synth::shape_names()))->required();
    app.add_option("--type", type_arg, "weight type: " + join(synth::type_names()));
    app.add_option("-o,--output", out, "output GGUF file")->required();
    app.add_option("--seed", seed, "random seed");
    app.add_option("--vocab", vocab_path, "vocabulary GGUF to copy tokenizer.* from (default: the shape's)");
    app.add_option("-t,--threads", n_threads, "threads (0: all)");
    const int st = parse_or_report(app, "synth", normalize_args(argc, argv));
    if (st >= 0) return st;
    {
        std::error_code ec;
        if (std::filesystem::is_directory(out, ec)) {
            std::fprintf(stderr, "lctx synth: -o: '%s' is a directory; give a file name\n", out.c_str());
            return 1;
        }
    }
    const synth::Shape *shape = synth::find_shape(shape_name);
    if (!shape) {
        std::fprintf(stderr, "lctx synth: unknown shape '%s' (known: %s)\n", shape_name.c_str(),
                     join(synth::shape_names()).c_str());
        return 1;
    }
    synth::TypeChoice type;
    if (!synth::parse_type(type_arg, &type)) {
        std::fprintf(stderr, "lctx synth: unknown type '%s' (known: %s)\n", type_arg.c_str(),
                     join(synth::type_names()).c_str());
        return 1;
    }
    synth::Options opts;
    opts.seed = seed;
    opts.n_threads = n_threads;
    opts.vocab_path = vocab_path.empty() ? find_vocab(shape->vocab_file) : vocab_path;
    if (opts.vocab_path.empty()) {
        std::fprintf(stderr, "lctx synth: cannot find fixtures/vocab/%s; pass it with --vocab\n",
                     shape->vocab_file.c_str());
        return 1;
    }
    if (isatty(STDERR_FILENO)) {
        opts.progress = [](const synth::Progress &p) {
            std::fprintf(stderr, "\r\033[Ksynth: %3d%% %s",
                         static_cast<int>(100.0 * p.done_bytes / p.total_bytes),
                         p.tensor ? p.tensor->c_str() : "");
        };
    }
    const auto t0 = std::chrono::steady_clock::now();
    synth::Summary sum;
    try {
        sum = synth::write_model(*shape, type, out, opts);
    } catch (const std::exception &e) {
        if (opts.progress) std::fprintf(stderr, "\n");
        std::fprintf(stderr, "lctx synth: %s\n", e.what());
        return 1;
    }
    if (opts.progress) std::fprintf(stderr, "\r\033[K");
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

    std::map<std::string, int> by_type;  // matrix type -> count
    for (const synth::TensorPlan &t : sum.tensors)
        if (t.ne.size() > 1) ++by_type[type_name(t.type)];
    std::string mix;
    for (const auto &[name, n] : by_type) mix += (mix.empty() ? "" : ", ") + std::to_string(n) + " " + name;
    std::printf("wrote %s: %s %s, %.2fM params, %.1f MiB, vocab %u, %zu tensors (matrices: %s) in %.1f s\n",
                out.c_str(), shape->name.c_str(), type.name.c_str(), sum.n_params / 1e6,
                sum.file_bytes / 1048576.0, sum.n_vocab, sum.tensors.size(), mix.c_str(), secs);
    if (sum.n_fallback > 0) {
        // Same rule as llama-quantize for rows that are not whole blocks of the wanted type.
        std::map<std::string, int> falls;
        for (const synth::TensorPlan &t : sum.tensors)
            if (t.type != t.wanted) ++falls[std::string(type_name(t.wanted)) + " -> " + type_name(t.type)];
        std::string s;
        for (const auto &[k, n] : falls) s += (s.empty() ? "" : ", ") + std::to_string(n) + "x " + k;
        std::printf(
            "note: %d tensors have rows of %u that are not whole blocks of their type; "
            "fell back like llama.cpp: %s\n",
            sum.n_fallback, shape->n_embd, s.c_str());
    }
    return 0;
}

}  // namespace lctx::cli
