// lctx quantize: rewrite a GGUF model at another quantization, with llama-quantize's type names, per-tensor
// mixtures and options, so the same command gives the same file in both tools.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <thread>
#include <tuple>

#include "capi/quantize_overrides.h"
#include "quantize/file_types.h"
#include "quantize/imatrix.h"
#include "quantize/model_quantizer.h"
#include "tensor/types.h"
#include "tools/lctx/args.h"
#include "tools/lctx/commands.h"
#include "tools/lctx/gen_extra_options.h"

namespace lctx::cli {

namespace {

std::string type_list() {
    std::string s;
    for (const quantize::FileType &t : quantize::file_types())
        s += "  " + std::string(t.name) +
             std::string(8 - std::min<size_t>(7, std::string(t.name).size()), ' ') + "(" +
             std::to_string(t.id) + ") " + t.what + "\n";
    return s + "  COPY    copy every tensor as it is (only the metadata changes)\n";
}

double mib(uint64_t b) {
    return static_cast<double>(b) / (1024.0 * 1024.0);
}

}  // namespace

int cmd_quantize(int argc, char **argv) {
    CLI::App app{
        "Quantize a GGUF model: lctx quantize [options] IN OUT TYPE [THREADS]\n\nTYPE (case-insensitive, "
        "or its number; Q3_K, Q4_K, Q5_K mean the _M mixtures):\n" +
            type_list(),
        "lctx quantize"};
    configure_app(app);
    std::string in_path, out_path, type_arg, imatrix_path, output_type_arg, token_type_arg;
    int threads = 0, threads_pos = 0;
    bool pure = false, allow_requantize = false, leave_output = false;
    app.add_option("input", in_path, "GGUF model to read")->required();
    app.add_option("output", out_path, "GGUF file to write (replaced only when complete)")->required();
    app.add_option("type", type_arg, "file type, e.g. Q4_K_M")->required();
    app.add_option("threads", threads_pos, "threads (as llama-quantize's last argument)");
    app.add_option("-t,--threads", threads, "threads (default: all cores)");
    app.add_flag("--pure", pure, "the type's base type for every matrix: no mixture, no fallback");
    app.add_option("--imatrix", imatrix_path, "importance matrix from llama-imatrix (.dat or GGUF)");
    app.add_option("--output-tensor-type", output_type_arg, "type of output.weight (e.g. q8_0)");
    app.add_option("--token-embedding-type", token_type_arg, "type of token_embd.weight (e.g. q4_0)");
    app.add_flag("--allow-requantize", allow_requantize,
                 "allow quantizing tensors that are already quantized");
    app.add_flag("--leave-output-tensor", leave_output, "leave output.weight as it is");
    std::vector<std::string> overrides;
    app.add_option("--override-kv", overrides,
                   "set a metadata key: KEY=TYPE:VALUE (int, float, bool, str); repeatable");
    const int st = parse_or_report(app, "quantize", normalize_args(argc, argv));
    if (st >= 0) return st;

    quantize::Options opts;
    std::string upper;
    for (char c : type_arg) upper += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    const quantize::FileType *ft = nullptr;
    if (upper == "COPY") {
        opts.only_copy = true;
    } else if (!(ft = quantize::parse_file_type(type_arg))) {
        std::fprintf(stderr, "lctx quantize: unknown type '%s'; one of:\n%s", type_arg.c_str(),
                     type_list().c_str());
        return 1;
    } else {
        opts.ftype = ft->id;
    }
    for (auto [arg, dst, opt] :
         {std::tuple{&output_type_arg, &opts.output_type, "--output-tensor-type"},
          std::tuple{&token_type_arg, &opts.token_embd_type, "--token-embedding-type"}}) {
        if (arg->empty()) continue;
        GgmlType t;
        if (!type_from_name(arg->c_str(), &t) || !quantize::is_storage_type(t)) {
            std::fprintf(stderr, "lctx quantize: %s: '%s' is not a tensor type lctx writes\n", opt,
                         arg->c_str());
            return 1;
        }
        *dst = t;
    }
    opts.n_threads = threads > 0 ? threads : threads_pos;
    opts.pure = pure;
    opts.allow_requantize = allow_requantize;
    opts.quantize_output_tensor = !leave_output;

    std::vector<llama_model_kv_override> kvo;
    for (const std::string &o : overrides) {
        std::string why;
        if (!parse_override_kv(o, &kvo.emplace_back(), &why)) {
            std::fprintf(stderr, "lctx quantize: --override-kv '%s': %s\n", o.c_str(), why.c_str());
            return 1;
        }
    }
    opts.kv_overrides = capi::quantize_overrides(kvo);

    quantize::ImportanceMatrix imatrix;
    if (!imatrix_path.empty()) {
        try {
            imatrix = quantize::load_imatrix(imatrix_path);
        } catch (const std::exception &e) {
            std::fprintf(stderr, "lctx quantize: %s\n", e.what());
            return 1;
        }
        opts.imatrix = &imatrix.values;
        // Recorded in the output as llama-quantize does.
        using gguf::Value, gguf::ValueType;
        opts.kv_overrides.push_back({"quantize.imatrix.file", Value::from_string(imatrix_path)});
        if (!imatrix.dataset.empty())
            opts.kv_overrides.push_back({"quantize.imatrix.dataset", Value::from_string(imatrix.dataset)});
        opts.kv_overrides.push_back(
            {"quantize.imatrix.entries_count",
             Value::from_int(ValueType::INT32, static_cast<int64_t>(imatrix.values.size()))});
        if (imatrix.chunks > 0)
            opts.kv_overrides.push_back(
                {"quantize.imatrix.chunks_count", Value::from_int(ValueType::INT32, imatrix.chunks)});
    }

    // On a terminal one line, rewritten per tensor; otherwise a line per tensor (a log).
    const bool tty = ::isatty(STDERR_FILENO) != 0;
    opts.on_tensor = [tty](const quantize::TensorReport &r, bool done) {
        if (!done && !tty) return;
        std::string what = r.converted ? std::string(type_name(r.from)) + " -> " + type_name(r.to)
                                       : std::string(type_name(r.from)) + " (kept)";
        if (r.to != r.wanted) what += std::string(" (fallback from ") + type_name(r.wanted) + ")";
        if (r.weighted) what += " (imatrix)";
        char line[512];
        if (done)
            std::snprintf(line, sizeof line, "[%4d/%4d] %-32s %-36s %8.2f MiB -> %8.2f MiB", r.index, r.count,
                          r.name.c_str(), what.c_str(), mib(r.bytes_in), mib(r.bytes_out));
        else
            std::snprintf(line, sizeof line, "[%4d/%4d] %-32s %-36s %8.2f MiB ...", r.index, r.count,
                          r.name.c_str(), what.c_str(), mib(r.bytes_in));
        std::fprintf(stderr, tty ? "\r\033[K%s" : "%s\n", line);
        std::fflush(stderr);
    };
    const auto t0 = std::chrono::steady_clock::now();
    quantize::Summary sum;
    try {
        sum = quantize::quantize_model(in_path, out_path, opts);
    } catch (const std::exception &e) {
        if (tty) std::fprintf(stderr, "\r\033[K");
        std::fprintf(stderr, "lctx quantize: %s\n", e.what());
        return 1;
    }
    if (tty) std::fprintf(stderr, "\r\033[K");
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const int n_threads = opts.n_threads > 0
                              ? opts.n_threads
                              : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    std::printf(
        "lctx quantize: %s -> %s as %s: %d tensors, %.2f MiB -> %.2f MiB (file %.2f MiB), %.2f s, %d "
        "threads\n",
        in_path.c_str(), out_path.c_str(), opts.only_copy ? "COPY" : ft->name, sum.n_tensors,
        mib(sum.bytes_in), mib(sum.bytes_out), mib(sum.file_bytes), secs, n_threads);
    if (sum.n_fallback > 0)
        std::printf(
            "lctx quantize: %d of %d tensors needed a fallback type (rows not a multiple of the block)\n",
            sum.n_fallback, sum.n_fallback + sum.n_block_fit);
    return 0;
}

}  // namespace lctx::cli
