// Runs a golden case of fixtures/golden (see fixtures/golden/FORMAT.md) on an lctx Context and
// returns the output rows it produced, in the order of the case's data file.
#pragma once
#include <cstdint>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "context/batch_builder.h"
#include "context/context.h"
#include "model/lora_adapter.h"
#include "model/model.h"
#include "vocab/vocab.h"

namespace lctx::testing {

inline std::string fixtures_dir() {
    return LCTX_FIXTURES_DIR;
}

inline nlohmann::json read_json(const std::string &path) {
    std::ifstream f(path);
    if (!f) throw std::runtime_error("cannot open " + path);
    return nlohmann::json::parse(f);
}

inline std::vector<float> read_f32(const std::string &path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) throw std::runtime_error("cannot open " + path);
    f.seekg(0, std::ios::end);
    const size_t n = static_cast<size_t>(f.tellg()) / sizeof(float);
    f.seekg(0);
    std::vector<float> v(n);
    f.read(reinterpret_cast<char *>(v.data()), static_cast<std::streamsize>(n * sizeof(float)));
    return v;
}

inline GgmlType kv_type(const nlohmann::json &ctx, const char *key) {
    const std::string t = ctx.value(key, std::string("f16"));
    GgmlType type;
    if (!type_from_name(t.c_str(), &type)) throw std::runtime_error("unknown cache type " + t);
    return type;
}

inline ContextParams context_params(const nlohmann::json &c) {
    const nlohmann::json &ctx = c["ctx"];
    ContextParams p;
    // Non-unified llama.cpp caches pad each sequence's stream; one unified cache of the recorded
    // total size holds the same cells.
    p.n_ctx = c.value("n_ctx_actual", ctx.value("n_ctx", 512u));
    p.n_batch = ctx.value("n_batch", 2048u);
    p.n_ubatch = ctx.value("n_ubatch", 512u);
    p.n_seq_max = ctx.value("n_seq_max", 1u);
    p.n_threads = p.n_threads_batch = 1;
    p.type_k = kv_type(ctx, "type_k");
    p.type_v = kv_type(ctx, "type_v");
    p.flash_attn = ctx.value("flash_attn", false);
    return p;
}

struct GoldenRun {
    std::vector<float> rows;  // [n_rows][row_len] in the data file's order
    size_t row_len = 0;
};

// Executes the steps of a logits / kv_ops case with n_threads threads. Files the steps name (lora_load's
// adapters) are relative to files_dir.
inline GoldenRun run_logits_case(const Model &model, const nlohmann::json &c, int n_threads = 1,
                                 const std::string &files_dir = "") {
    ContextParams p = context_params(c);
    p.n_threads = p.n_threads_batch = n_threads;
    auto ctx = std::make_unique<Context>(model, p);
    std::map<std::string, std::shared_ptr<const LoraAdapter>> adapters;  // by the case's id
    GoldenRun out;
    out.row_len = model.hparams().n_vocab;
    for (const nlohmann::json &step : c["steps"]) {
        const std::string op = step["op"];
        if (op == "decode") {
            const nlohmann::json &entries = step["batch"];
            const int32_t n = static_cast<int32_t>(entries.size());
            const bool all = step["logits"] == "all";  // else the last entry of each sequence
            BatchBuilder bb;
            for (int32_t i = 0; i < n; ++i) {
                bool later = false;
                for (int32_t j = i + 1; j < n && !all; ++j) later |= entries[j][2] == entries[i][2];
                bb.add(entries[i][0], entries[i][1], entries[i][2], all || !later);
            }
            const Batch b = bb.view();
            if (ctx->decode(b) != DecodeStatus::Ok) throw std::runtime_error("decode failed");
            for (int32_t i = 0; i < n; ++i) {
                if (!b.logits[i]) continue;
                const float *l = ctx->logits_ith(i);
                if (!l) throw std::runtime_error("no logits for a requested row");
                out.rows.insert(out.rows.end(), l, l + out.row_len);
            }
        } else if (op == "seq_rm") {
            ctx->kv().seq_rm(step["seq"], step["p0"], step["p1"]);
        } else if (op == "seq_cp") {
            ctx->kv().seq_cp(step["src"], step["dst"], step["p0"], step["p1"]);
        } else if (op == "seq_add") {
            ctx->kv().seq_add(step["seq"], step["p0"], step["p1"], step["delta"]);
        } else if (op == "lora_load") {
            std::shared_ptr<const LoraAdapter> a =
                LoraAdapter::load(model, files_dir + step["path"].get<std::string>());
            // The metadata llama.cpp read must read the same here (llama_adapter_meta_val_str's rendering).
            const nlohmann::json meta = step.value("meta", nlohmann::json::object());
            for (const auto &[key, want] : meta.items()) {
                std::string got = "(missing)";
                for (const auto &[k, v] : a->meta())
                    if (k == key) got = v;
                if (got != want.get<std::string>())
                    throw std::runtime_error("adapter metadata " + key + " is '" + got +
                                             "', llama.cpp read '" + want.get<std::string>() + "'");
            }
            adapters[step["id"].get<std::string>()] = std::move(a);
        } else if (op == "lora_set") {
            // llama_set_adapters_lora (newer API) replaces the whole set: clear, then set each.
            ctx->lora().clear();
            for (const nlohmann::json &e : step["adapters"])
                ctx->lora().set(adapters.at(e["id"].get<std::string>()), e["scale"].get<float>());
        } else if (op == "new_context") {
            ctx = std::make_unique<Context>(model, p);
        } else {
            throw std::runtime_error("unknown golden step op " + op);
        }
    }
    return out;
}

inline PoolingType pooling_from_name(const std::string &name) {
    if (name == "none") return PoolingType::None;
    if (name == "mean") return PoolingType::Mean;
    if (name == "cls") return PoolingType::Cls;
    if (name == "last") return PoolingType::Last;
    if (name == "rank") return PoolingType::Rank;
    throw std::runtime_error("unknown pooling " + name);
}

// How an "embed" case reaches the model: llama_encode's path (as llama.cpp ran the goldens) or a decode with
// embeddings on (b4748 and lctx run it as the same pass, within the batch, never in the cache).
enum class EmbedPath { Encode, Decode };

// Executes the "embed" step of an embeddings case: its texts tokenized with add_special (checked against the
// case's token ids), back to back in one batch; returns the pooled rows (one per sequence) or, without
// pooling, one row per token, in the data file's order. type_kv: the context's cache type.
inline GoldenRun run_embed_case(const Model &model, const nlohmann::json &c, EmbedPath path,
                                GgmlType type_kv = GgmlType::F32, int n_threads = 1) {
    ContextParams p = context_params(c);
    p.n_threads = p.n_threads_batch = n_threads;
    p.embeddings = true;
    p.pooling = pooling_from_name(c["ctx"]["pooling"]);
    p.type_k = p.type_v = type_kv;
    Context ctx(model, p);
    GoldenRun out;
    out.row_len = model.hparams().n_embd;
    for (const nlohmann::json &step : c["steps"]) {
        if (step["op"] != "embed") throw std::runtime_error("not an embed step");
        BatchBuilder bb;
        for (size_t s = 0; s < step["seqs"].size(); ++s) {
            const nlohmann::json &seq = step["seqs"][s];
            const std::vector<int32_t> ids =
                model.vocab().tokenize(seq["text"].get<std::string>(), true, false);
            if (ids != step["seqs_tokens"][s].get<std::vector<int32_t>>())
                throw std::runtime_error("tokenization differs from the case's");
            for (size_t i = 0; i < ids.size(); ++i)
                bb.add(ids[i], seq["pos0"].get<int32_t>() + static_cast<int32_t>(i), seq["seq_id"], true);
        }
        const int32_t n = bb.size();
        const Batch b = bb.view();
        const DecodeStatus st = path == EmbedPath::Encode ? ctx.encode(b) : ctx.decode(b);
        if (st != DecodeStatus::Ok) throw std::runtime_error("embedding pass failed");
        if (p.pooling == PoolingType::None) {
            for (int32_t i = 0; i < n; ++i) {
                const float *e = ctx.embeddings_ith(i);
                if (!e) throw std::runtime_error("no embedding for a token");
                out.rows.insert(out.rows.end(), e, e + out.row_len);
            }
        } else {
            for (const nlohmann::json &seq : step["seqs"]) {
                const float *e = ctx.embeddings_seq(seq["seq_id"]);
                if (!e) throw std::runtime_error("no pooled embedding for a sequence");
                out.rows.insert(out.rows.end(), e, e + out.row_len);
            }
        }
    }
    return out;
}

// Greedy generation as the golden "greedy" cases run it; returns the generated tokens.
inline std::vector<int32_t> run_greedy(const Model &model, Context &ctx, const std::vector<int32_t> &prompt,
                                       int n_predict, bool (*is_eog)(const Model &, int32_t)) {
    std::vector<int32_t> out;
    std::vector<int32_t> tokens = prompt;
    Batch b;
    b.n_tokens = static_cast<int32_t>(tokens.size());
    b.token = tokens.data();
    if (ctx.decode(b) != DecodeStatus::Ok) throw std::runtime_error("prompt decode failed");
    int32_t pos = b.n_tokens;
    for (int i = 0; i < n_predict; ++i) {
        const float *l = ctx.logits_ith(-1);
        int32_t best = 0;
        for (int32_t t = 1; t < static_cast<int32_t>(model.hparams().n_vocab); ++t)
            if (l[t] > l[best]) best = t;
        out.push_back(best);
        if (is_eog(model, best)) break;
        Batch one;
        one.n_tokens = 1;
        one.token = &best;
        one.pos = &pos;
        if (ctx.decode(one) != DecodeStatus::Ok) throw std::runtime_error("decode failed");
        ++pos;
    }
    return out;
}

}  // namespace lctx::testing
