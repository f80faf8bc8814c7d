// lctx split: llama.cpp's gguf-split. Splits a GGUF model into parts PREFIX-NNNNN-of-MMMMM.gguf by tensor
// count (--split-max-tensors, 128 by default) or by size (--split-max-size), or merges a split model's
// parts back into one file (--merge). Every file is written whole or not at all.
#include <CLI/CLI.hpp>
#include <cinttypes>
#include <cstdio>
#include <string>

#include "gguf/gguf_split.h"
#include "tools/lctx/args.h"
#include "tools/lctx/commands.h"

namespace lctx::cli {

namespace {

// "500M", "2G" (decimal units, as gguf-split), also "K" and plain bytes; 0 when malformed.
uint64_t parse_size(const std::string &s) {
    if (s.empty()) return 0;
    uint64_t unit = 1;
    std::string digits = s;
    switch (s.back()) {
        case 'K':
        case 'k':
            unit = 1000;
            break;
        case 'M':
        case 'm':
            unit = 1000 * 1000;
            break;
        case 'G':
        case 'g':
            unit = 1000 * 1000 * 1000;
            break;
        default:
            break;
    }
    if (unit != 1) digits.pop_back();
    if (digits.empty() || digits.size() > 12 || digits.find_first_not_of("0123456789") != std::string::npos)
        return 0;
    uint64_t n = 0;
    if (__builtin_mul_overflow(std::stoull(digits), unit, &n)) return 0;
    return n;
}

}  // namespace

int cmd_split(int argc, char **argv) {
    CLI::App app{"Split a GGUF model into parts, or merge the parts back (llama.cpp's gguf-split)",
                 "lctx split"};
    configure_app(app);
    bool split = false, merge = false, dry_run = false;
    int max_tensors = 128;
    std::string max_size;
    std::string in, out;
    app.add_flag("--split", split, "split IN into OUT-00001-of-0000N.gguf, ... (the default)");
    app.add_flag("--merge", merge, "merge the split model whose first part is IN into the file OUT");
    app.add_option("--split-max-tensors", max_tensors, "tensors per part")->capture_default_str();
    app.add_option("--split-max-size", max_size,
                   "bytes of tensors per part, N followed by M or G (decimal units, also K); a soft limit");
    app.add_flag("--dry-run", dry_run, "print the parts without writing them");
    app.add_option("in", in, "the model (for --merge: the first part of the split model)")->required();
    app.add_option("out", out, "the output prefix (for --merge: the output file)")->required();
    const int st = parse_or_report(app, "split", normalize_args(argc, argv));
    if (st >= 0) return st;
    if (split && merge) {
        std::fprintf(stderr, "lctx split: --split and --merge cannot be combined\n");
        return 1;
    }
    const bool by_tensors = app.count("--split-max-tensors") > 0;
    if (merge && (by_tensors || !max_size.empty())) {
        std::fprintf(stderr,
                     "lctx split: --split-max-tensors and --split-max-size are for splitting, not --merge\n");
        return 1;
    }
    if (by_tensors && !max_size.empty()) {
        std::fprintf(stderr, "lctx split: give either --split-max-tensors or --split-max-size, not both\n");
        return 1;
    }
    gguf::SplitLimits limits;
    limits.max_tensors = max_tensors;
    if (!max_size.empty()) {
        limits.max_bytes = parse_size(max_size);
        if (limits.max_bytes == 0) {
            std::fprintf(stderr,
                         "lctx split: --split-max-size: '%s' is not a positive size such as 500M or 2G\n",
                         max_size.c_str());
            return 1;
        }
    }
    if (!merge && max_tensors < 1) {
        std::fprintf(stderr, "lctx split: --split-max-tensors: must be at least 1, not %d\n", max_tensors);
        return 1;
    }
    try {
        const std::unique_ptr<gguf::File> model = gguf::open_model(in);
        if (merge) {
            if (dry_run) {
                std::printf("%s: %zu parts, %zu tensors -> %s\n", in.c_str(), model->n_parts(),
                            model->tensors().size(), out.c_str());
                return 0;
            }
            gguf::write_merged(*model, out);
            std::printf("merged %zu parts (%zu tensors) into %s\n", model->n_parts(), model->tensors().size(),
                        out.c_str());
            return 0;
        }
        const std::vector<gguf::SplitPart> parts = gguf::plan_split(*model, out, limits);
        std::printf("n_split: %zu\n", parts.size());
        for (size_t i = 0; i < parts.size(); ++i)
            std::printf("split %05zu: n_tensors = %zu, total_size = %" PRIu64 " bytes  %s\n", i + 1,
                        parts[i].tensors.size(), parts[i].file_bytes, parts[i].path.c_str());
        if (dry_run) return 0;
        gguf::write_split(*model, parts);
        std::printf("%zu parts written with a total of %zu tensors\n", parts.size(), model->tensors().size());
    } catch (const std::exception &e) {
        std::fprintf(stderr, "lctx split: %s\n", e.what());
        return 1;
    }
    return 0;
}

}  // namespace lctx::cli
