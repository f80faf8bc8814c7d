// lctx embed: one embedding vector per text (or, with rank pooling, one relevance score per text), as
// llama.cpp's llama-embedding, written over llama.h and the generation layer (generate/embed_batch.h): the
// texts go in as separate sequences, as many per pass as fit n_batch tokens and n_seq_max sequences.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "generate/embd_normalize.h"
#include "generate/embed_batch.h"
#include "generate/tokens.h"
#include "llama.h"
#include "tools/lctx/args.h"
#include "tools/lctx/capi_handles.h"
#include "tools/lctx/commands.h"

namespace lctx::cli {

namespace {

const char *pooling_name(enum llama_pooling_type p) {
    switch (p) {
        case LLAMA_POOLING_TYPE_NONE:
            return "none";
        case LLAMA_POOLING_TYPE_MEAN:
            return "mean";
        case LLAMA_POOLING_TYPE_CLS:
            return "cls";
        case LLAMA_POOLING_TYPE_LAST:
            return "last";
        case LLAMA_POOLING_TYPE_RANK:
            return "rank";
        default:
            return "unspecified";
    }
}

enum llama_pooling_type pooling_from_name(const std::string &name) {
    for (enum llama_pooling_type p :
         {LLAMA_POOLING_TYPE_NONE, LLAMA_POOLING_TYPE_MEAN, LLAMA_POOLING_TYPE_CLS, LLAMA_POOLING_TYPE_LAST,
          LLAMA_POOLING_TYPE_RANK})
        if (name == pooling_name(p)) return p;
    return LLAMA_POOLING_TYPE_UNSPECIFIED;
}

// A metadata value of the model as text; "" when it has none.
std::string meta_value(const llama_model *model, const std::string &key) {
    char buf[256] = {0};
    return llama_model_meta_val_str(model, key.c_str(), buf, sizeof buf) < 0 ? std::string() : buf;
}

// The model's own pooling (<arch>.pooling_type), else none, as llama.cpp resolves an unspecified one.
enum llama_pooling_type model_pooling(const llama_model *model) {
    const std::string v = meta_value(model, meta_value(model, "general.architecture") + ".pooling_type");
    if (v.empty()) return LLAMA_POOLING_TYPE_NONE;
    char *end = nullptr;
    const long p = std::strtol(v.c_str(), &end, 10);
    return *end == '\0' && p >= 0 && p <= 4 ? static_cast<enum llama_pooling_type>(p)
                                            : LLAMA_POOLING_TYPE_NONE;
}

// llama-embedding's --embd-output-format shapes: `array` is [[x,...],...]; `json` is
// {"object": "list", "data": [{"object": "embedding", "index": i, "embedding": [...]}, ...]}, and `json+`
// adds "cosineSimilarity" (the matrix of every pair of rows) when there is more than one row. A value prints
// as %1.7f, or %1.0f after max-abs normalization (the int16 range).
void print_llama_format(const std::vector<std::vector<float>> &rows, const std::string &format,
                        int32_t norm) {
    const bool object = format != "array";
    const char *num = norm == 0 ? "%1.0f" : "%1.7f";
    std::string out = object ? "{\n  \"object\": \"list\",\n  \"data\": [\n" : "[";
    char buf[64];
    for (size_t j = 0; j < rows.size(); ++j) {
        if (object)
            out += "    {\n      \"object\": \"embedding\",\n      \"index\": " + std::to_string(j) +
                   ",\n      \"embedding\": ";
        out += "[";
        for (size_t i = 0; i < rows[j].size(); ++i) {
            std::snprintf(buf, sizeof buf, num, static_cast<double>(rows[j][i]));
            out += (i ? "," : "") + std::string(buf);
        }
        out += object ? "]\n    }" : "]";
        if (j + 1 < rows.size()) out += object ? ",\n" : ",";
    }
    out += object ? "\n  ]" : "]\n";
    if (format == "json+" && rows.size() > 1) {
        out += ",\n  \"cosineSimilarity\": [\n";
        for (size_t i = 0; i < rows.size(); ++i) {
            out += "    [";
            for (size_t j = 0; j < rows.size(); ++j) {
                std::snprintf(buf, sizeof buf, "%6.2f",
                              generate::embd_cosine(rows[i].data(), rows[j].data(), rows[i].size()));
                out += (j ? ", " : "") + std::string(buf);
            }
            out += i + 1 < rows.size() ? " ],\n" : " ]";
        }
        out += "\n  ]";
    }
    if (object) out += "\n}\n";
    std::fputs(out.c_str(), stdout);
}

// llama-embedding's split of -p: every piece between separators, empty ones included.
std::vector<std::string> split_prompt(const std::string &s, const std::string &sep) {
    std::vector<std::string> out;
    size_t start = 0;
    for (size_t at; (at = s.find(sep, start)) != std::string::npos; start = at + sep.size())
        out.push_back(s.substr(start, at - start));
    out.push_back(s.substr(start));
    return out;
}

struct Output {
    std::vector<std::vector<float>> rows;  // one per input: pooled vector or score; none: one per token
};

}  // namespace

int cmd_embed(int argc, char **argv) {
    CLI::App app{"Print the embedding of each text (or its relevance score with --pooling rank)",
                 "lctx embed"};
    configure_app(app);
    std::string model_path = default_model_path(), pooling_arg, query;
    std::vector<std::string> texts;
    bool json = false, norm = false, quiet = false;
    int32_t n_threads = 0, n_batch = 2048, n_seq_max = 0;
    std::string prompt, separator = "\n", out_format;
    int32_t embd_normalize = -1;
    app.add_option("-m,--model", model_path, "GGUF model file (an embedding model such as bert)");
    app.add_option("texts", texts, "the texts to embed, one sequence each");
    app.add_option(
        "-p,--prompt", prompt,
        "llama-embedding's input: texts separated by --embd-separator (after the positional ones)");
    app.add_option("--embd-separator", separator, "what separates the texts of -p (default: a newline)")
        ->default_str("\\n");
    app.add_option(
        "--embd-normalize", embd_normalize,
        "-1 none, 0 max absolute (int16 range), 1 taxicab, 2 Euclidean, >2 p-norm (--normalize: 2)");
    app.add_option("--embd-output-format", out_format,
                   "llama-embedding's output: array ([[...],...]), json (OpenAI style) or json+ (with the "
                   "cosine similarity matrix)")
        ->check(CLI::IsMember({"array", "json", "json+"}));
    app.add_option("--pooling", pooling_arg,
                   "mean, cls, last, none (every token) or rank (default: the model's)")
        ->check(CLI::IsMember({"mean", "cls", "last", "none", "rank"}));
    app.add_flag("--normalize", norm, "scale each vector to unit length (Euclidean)");
    app.add_option("--query", query,
                   "rank: score each text as a document for this query (llama-server's "
                   "rerank input) instead of as it is");
    app.add_flag("--json", json, "print {\"data\": [{\"index\", \"embedding\" | \"score\"}, ...]}");
    app.add_option("-t,--threads", n_threads, "threads (0: every core)");
    app.add_option("-b,--batch-size", n_batch, "most tokens of one pass (capped by the model's context)")
        ->check(CLI::Range(1, 1 << 20));
    app.add_option("--n-seq-max", n_seq_max, "most texts of one pass (0: every text, up to 256)")
        ->check(CLI::Range(0, LCTX_MAX_SEQ));
    app.add_flag("-q,--log-disable", quiet, "no notes on stderr");
    const int st = parse_or_report(app, "embed", normalize_args(argc, argv));
    if (st >= 0) return st;
    if (app.count("--prompt")) {
        if (separator.empty()) {
            std::fprintf(stderr, "lctx embed: --embd-separator: the separator is empty\n");
            return 1;
        }
        for (std::string &t : split_prompt(prompt, separator)) texts.push_back(std::move(t));
    }
    if (texts.empty()) {
        std::fprintf(stderr,
                     "lctx embed: no text to embed: give texts as arguments or with -p (see 'lctx "
                     "embed --help')\n");
        return 1;
    }
    if (app.count("--embd-normalize")) {
        if (embd_normalize < -1) {
            std::fprintf(stderr,
                         "lctx embed: --embd-normalize: %d is out of range (-1, 0, 1, 2 or a p-norm "
                         "order above 2)\n",
                         embd_normalize);
            return 1;
        }
        if (norm && embd_normalize != 2) {
            std::fprintf(stderr, "lctx embed: --normalize is --embd-normalize 2; give one of them\n");
            return 1;
        }
    } else if (norm) {
        embd_normalize = 2;
    }
    norm = embd_normalize >= 0;
    if (json && !out_format.empty()) {
        std::fprintf(stderr, "lctx embed: --json and --embd-output-format: give one of them\n");
        return 1;
    }

    capture_capi_errors();
    const ModelPtr model(llama_model_load_from_file(model_path.c_str(), llama_model_default_params()));
    if (!model) {
        std::fprintf(stderr, "lctx embed: cannot load model '%s'%s\n", model_path.c_str(),
                     capi_error_suffix().c_str());
        return 1;
    }
    const enum llama_pooling_type pooling =
        pooling_arg.empty() ? model_pooling(model.get()) : pooling_from_name(pooling_arg);
    // (A reranker's classification head is checked when the context is made: llama.h refuses rank pooling
    // without one.) As in llama.cpp, an encoder-decoder model's encoder states come per token: nothing pools
    // them.
    if (pooling != LLAMA_POOLING_TYPE_NONE && llama_model_has_encoder(model.get()) &&
        llama_model_has_decoder(model.get())) {
        std::fprintf(
            stderr,
            "lctx embed: '%s' is an encoder-decoder model (%s): its encoder gives one vector per token "
            "(--pooling none), not --pooling %s; one vector per text needs an embedding model (bert) or "
            "a decoder-only one\n",
            model_path.c_str(), meta_value(model.get(), "general.architecture").c_str(),
            pooling_name(pooling));
        return 1;
    }
    if (pooling == LLAMA_POOLING_TYPE_RANK && norm) {
        std::fprintf(stderr,
                     "lctx embed: --normalize / --embd-normalize: rank pooling gives scores, not "
                     "vectors\n");
        return 1;
    }
    if (!query.empty() && pooling != LLAMA_POOLING_TYPE_RANK) {
        std::fprintf(stderr, "lctx embed: --query: only rank pooling scores texts against a query\n");
        return 1;
    }

    // Every text whole in one pass: n_batch tokens, as many micro-batch tokens (a non-causal model must
    // see a sequence whole), at most n_ctx_train positions.
    const uint32_t n_ctx = static_cast<uint32_t>(std::max(llama_model_n_ctx_train(model.get()), 1));
    const uint32_t batch = std::min<uint32_t>(static_cast<uint32_t>(n_batch), n_ctx);
    const llama_vocab *vocab = llama_model_get_vocab(model.get());
    std::vector<std::vector<llama_token>> tokens;
    for (size_t i = 0; i < texts.size(); ++i) {
        tokens.push_back(query.empty() ? generate::tokenize(vocab, texts[i], true, false)
                                       : generate::rerank_tokens(vocab, query, texts[i]));
        if (tokens.back().empty()) {
            std::fprintf(stderr, "lctx embed: text %zu gives no tokens\n", i + 1);
            return 1;
        }
        if (tokens.back().size() > batch) {
            std::fprintf(
                stderr, "lctx embed: text %zu is %zu tokens long; the model takes at most %u in one pass%s\n",
                i + 1, tokens.back().size(), batch,
                batch < n_ctx ? " (raise -b)" : " (its training context)");
            return 1;
        }
    }
    const uint32_t seqs = n_seq_max > 0 ? static_cast<uint32_t>(n_seq_max)
                                        : static_cast<uint32_t>(std::min<size_t>(texts.size(), LCTX_MAX_SEQ));

    llama_context_params cp = llama_context_default_params();
    cp.n_ctx =
        batch;  // one pass at a time: an encoder keeps nothing, a decoder clears its cache between passes
    cp.n_batch = cp.n_ubatch = batch;
    cp.n_seq_max = seqs;
    cp.n_threads = cp.n_threads_batch = resolved_threads(n_threads);
    cp.embeddings = true;
    cp.pooling_type = pooling;
    cp.type_k = cp.type_v = GGML_TYPE_F32;  // a decoder's pass: no cache rounding (an encoder's has none)
    cp.no_perf = true;
    const ContextPtr ctx(llama_init_from_model(model.get(), cp));
    if (!ctx) {
        // llama.h says why (a reranker's missing head included); its log line is the reason given.
        const std::string why = capi_error_suffix();
        std::fprintf(stderr, "lctx embed: cannot create the context%s\n",
                     !why.empty() ? why.c_str()
                     : pooling == LLAMA_POOLING_TYPE_RANK
                         ? " (--pooling rank needs a reranker's classification head: cls, cls.output)"
                         : "");
        return 1;
    }

    Output out;
    const size_t n_embd = static_cast<size_t>(llama_model_n_embd(model.get()));
    if (const std::string why = generate::embed_sequences(ctx.get(), tokens, &out.rows); !why.empty()) {
        std::fprintf(stderr, "lctx embed: %s%s\n", why.c_str(), capi_error_suffix().c_str());
        return 1;
    }
    for (std::vector<float> &v : out.rows) generate::embd_normalize(v.data(), v.size(), embd_normalize);

    // llama-embedding's shapes: one row per text, or per token with none pooling.
    if (!out_format.empty()) {
        print_llama_format(out.rows, out_format, embd_normalize);
        return 0;
    }

    // One row per text (none: one per token, each text's rows in a block).
    if (json) {
        nlohmann::json data = nlohmann::json::array();
        size_t r = 0;
        for (size_t i = 0; i < texts.size(); ++i) {
            nlohmann::json item;
            item["index"] = i;
            if (pooling == LLAMA_POOLING_TYPE_RANK) {
                item["score"] = out.rows[r++][0];
            } else if (pooling == LLAMA_POOLING_TYPE_NONE) {
                nlohmann::json rows = nlohmann::json::array();
                for (size_t k = 0; k < tokens[i].size(); ++k) rows.push_back(out.rows[r++]);
                item["embedding"] = rows;
            } else {
                item["embedding"] = out.rows[r++];
            }
            data.push_back(item);
        }
        nlohmann::json doc;
        doc["model"] = model_path;
        doc["pooling"] = pooling_name(pooling);
        doc["n_embd"] = n_embd;
        doc["data"] = data;
        std::printf("%s\n", doc.dump().c_str());
        return 0;
    }
    size_t r = 0;
    for (size_t i = 0; i < texts.size(); ++i) {
        const size_t rows = pooling == LLAMA_POOLING_TYPE_NONE ? tokens[i].size() : 1;
        if (pooling == LLAMA_POOLING_TYPE_NONE && i > 0) std::printf("\n");
        for (size_t k = 0; k < rows; ++k, ++r) {
            const std::vector<float> &v = out.rows[r];
            for (size_t j = 0; j < v.size(); ++j) std::printf(j ? " %.6f" : "%.6f", v[j]);
            std::printf("\n");
        }
    }
    if (!quiet)
        std::fprintf(stderr, "lctx embed: %zu text%s, pooling %s%s\n", texts.size(),
                     texts.size() == 1 ? "" : "s", pooling_name(pooling), norm ? ", normalized" : "");
    return 0;
}

}  // namespace lctx::cli
