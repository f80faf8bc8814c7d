// lctx info: what a GGUF file holds, read from its metadata and tensor directory alone (no weights are
// bound, so vocabulary-only files and architectures without a forward pass work too; a split model's
// first part brings its other parts): architecture, parameter count, tensors per type, context length,
// RoPE settings, the vocabulary and its special tokens, the chat template's built-in format; every key
// with --all, the tensor table with --tensors; --json prints one object instead.
#include <CLI/CLI.hpp>
#include <cinttypes>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "chat/builtin_templates.h"
#include "gguf/gguf_split.h"
#include "model/hparams.h"
#include "tools/lctx/args.h"
#include "tools/lctx/commands.h"
#include "vocab/vocab.h"

namespace lctx::cli {

namespace {

using nlohmann::json;

// Arrays longer than this are summarised (a vocabulary's tokens): element type, count, first elements.
constexpr size_t kArrayShown = 16;

json value_json(const gguf::Value &v) {
    using gguf::ValueType;
    switch (v.type) {
        case ValueType::BOOL:
            return v.scalar.b;
        case ValueType::STRING:
            return v.str;
        case ValueType::FLOAT32:
        case ValueType::FLOAT64:
            return v.scalar.f64;
        case ValueType::UINT8:
        case ValueType::UINT16:
        case ValueType::UINT32:
        case ValueType::UINT64:
            return v.scalar.u64;
        case ValueType::ARRAY: {
            const size_t n = v.array_size();
            json elems = json::array();
            for (size_t i = 0; i < n && i < kArrayShown; ++i) elems.push_back(value_json(v.array_at(i)));
            if (n <= kArrayShown) return elems;
            return json{{"array_type", gguf::value_type_name(v.array_type)}, {"count", n}, {"first", elems}};
        }
        default:
            return v.scalar.i64;
    }
}

std::string value_text(const gguf::Value &v) {
    if (v.type != gguf::ValueType::ARRAY) return v.to_display_string();
    const size_t n = v.array_size();
    if (n <= kArrayShown) return v.to_display_string();
    std::string out =
        std::string("[") + gguf::value_type_name(v.array_type) + " x " + std::to_string(n) + ": ";
    for (size_t i = 0; i < 4; ++i) {
        const gguf::Value e = v.array_at(i);
        out += e.type == gguf::ValueType::STRING ? "'" + e.str + "'" : e.to_display_string();
        out += ", ";
    }
    return out + "...]";
}

// 292480 -> "292.48 K"
std::string short_count(uint64_t n) {
    const char *units[] = {"", " K", " M", " B", " T"};
    double v = static_cast<double>(n);
    int u = 0;
    while (v >= 1000.0 && u < 4) {
        v /= 1000.0;
        ++u;
    }
    char buf[32];
    if (u == 0)
        std::snprintf(buf, sizeof buf, "%" PRIu64, n);
    else
        std::snprintf(buf, sizeof buf, "%.2f%s", v, units[u]);
    return buf;
}

std::string short_bytes(uint64_t n) {
    char buf[32];
    const double v = static_cast<double>(n);
    if (n < 1024)
        std::snprintf(buf, sizeof buf, "%" PRIu64 " B", n);
    else if (n < (uint64_t{1} << 20))
        std::snprintf(buf, sizeof buf, "%.2f KiB", v / 1024.0);
    else if (n < (uint64_t{1} << 30))
        std::snprintf(buf, sizeof buf, "%.2f MiB", v / 1048576.0);
    else
        std::snprintf(buf, sizeof buf, "%.2f GiB", v / 1073741824.0);
    return buf;
}

const char *vocab_type_name(VocabType t) {
    switch (t) {
        case VocabType::kSpm:
            return "SPM";
        case VocabType::kBpe:
            return "BPE";
        case VocabType::kWpm:
            return "WPM";
        case VocabType::kUgm:
            return "UGM";
        case VocabType::kRwkv:
            return "RWKV";
        default:
            return "none";
    }
}

struct TypeCount {
    uint64_t tensors = 0, elements = 0, bytes = 0;
};

// Builds the whole description as JSON; the text output prints from it.
json describe(const gguf::File &f, const std::vector<std::string> &paths, bool all, bool tensors) {
    json out;
    out["path"] = paths[0];
    out["parts"] = paths;
    out["gguf_version"] = f.version();
    uint64_t file_bytes = 0;
    for (size_t i = 0; i < f.n_parts(); ++i) file_bytes += f.part(i).size();
    out["file_bytes"] = file_bytes;
    const std::string arch = f.get_string("general.architecture").value_or("");
    out["architecture"] = arch.empty() ? json() : json(arch);
    if (const std::optional<std::string> name = f.get_string("general.name")) out["name"] = *name;

    uint64_t n_params = 0, n_bytes = 0;
    std::map<int32_t, TypeCount> by_type;
    for (const gguf::TensorInfo &t : f.tensors()) {
        const uint64_t n = static_cast<uint64_t>(t.n_elements());
        n_params += n;
        n_bytes += t.nbytes;
        TypeCount &c = by_type[static_cast<int32_t>(t.type)];
        ++c.tensors;
        c.elements += n;
        c.bytes += t.nbytes;
    }
    out["n_params"] = n_params;
    out["n_tensors"] = f.tensors().size();
    out["tensor_bytes"] = n_bytes;
    json types = json::array();
    for (const auto &[id, c] : by_type)
        types.push_back({{"type", type_name(static_cast<GgmlType>(id))},
                         {"tensors", c.tensors},
                         {"elements", c.elements},
                         {"bytes", c.bytes}});
    out["types"] = types;

    // The hyper-parameters a user asks about first, under the architecture's prefix, where present.
    json hp = json::object();
    for (const char *k :
         {"context_length", "embedding_length", "block_count", "feed_forward_length", "attention.head_count",
          "attention.head_count_kv", "attention.sliding_window", "expert_count", "expert_used_count"})
        if (const gguf::Value *v = f.find(arch + "." + k)) hp[k] = value_json(*v);
    out["hparams"] = hp;
    out["context_length"] = hp.contains("context_length") ? hp["context_length"] : json();
    json rope = json::object();
    for (const char *k : {"dimension_count", "freq_base", "scaling.type", "scaling.factor",
                          "scaling.original_context_length", "scaling.attn_factor"})
        if (const gguf::Value *v = f.find(arch + ".rope." + k)) rope[k] = value_json(*v);
    out["rope"] = rope;
    // What a load would use (the family's defaults for keys the file leaves out); null when the file cannot
    // be loaded as a model (vocabulary only, an architecture without a forward pass, bad hyper-parameters).
    json rope_used;
    try {
        const HParams h = HParams::load(f);
        if (h.rope.n_rot > 0)
            rope_used = {{"type", h.rope.mode == kernels::RopeMode::Neox ? "neox" : "norm"},
                         {"n_rot", h.rope.n_rot},
                         {"freq_base", h.rope.freq_base},
                         {"freq_scale", h.rope.freq_scale}};
        else
            rope_used = {{"type", "none"}};
    } catch (const std::exception &) {
    }
    out["rope_used"] = rope_used;

    json vocab;
    try {
        const std::unique_ptr<Vocab> v = Vocab::load(f);
        vocab["model"] = f.get_string("tokenizer.ggml.model").value_or("");
        vocab["type"] = vocab_type_name(v->type());
        vocab["n_tokens"] = v->n_tokens();
        vocab["add_bos"] = v->add_bos();
        vocab["add_eos"] = v->add_eos();
        json special = json::object();
        const std::pair<const char *, int32_t> ids[] = {
            {"bos", v->bos()},         {"eos", v->eos()},         {"eot", v->eot()},
            {"eom", v->eom()},         {"unk", v->unk()},         {"sep", v->sep()},
            {"pad", v->pad()},         {"mask", v->mask()},       {"nl", v->nl()},
            {"fim_pre", v->fim_pre()}, {"fim_suf", v->fim_suf()}, {"fim_mid", v->fim_mid()},
            {"fim_pad", v->fim_pad()}, {"fim_rep", v->fim_rep()}, {"fim_sep", v->fim_sep()}};
        for (const auto &[name, id] : ids)
            if (id >= 0 && id < v->n_tokens())
                special[name] = {{"id", id}, {"text", v->token_to_piece(id, true)}};
        vocab["special"] = special;
    } catch (const std::exception &e) {
        vocab = {{"error", e.what()}};
    }
    out["vocab"] = vocab;

    json tmpl = json::object();
    if (const std::optional<std::string> t = f.get_string("tokenizer.chat_template")) {
        const std::string name = chat::builtin_template_detect(*t);
        tmpl["present"] = true;
        tmpl["builtin"] = name.empty() ? json() : json(name);
        tmpl["bytes"] = t->size();
    } else {
        tmpl["present"] = false;
        tmpl["builtin"] = json();
    }
    out["chat_template"] = tmpl;

    if (all) {
        json meta = json::array();
        for (const gguf::KeyValue &kv : f.metadata())
            meta.push_back(
                {{"key", kv.key},
                 {"type", kv.value.type == gguf::ValueType::ARRAY
                              ? std::string("array of ") + gguf::value_type_name(kv.value.array_type)
                              : std::string(gguf::value_type_name(kv.value.type))},
                 {"value", value_json(kv.value)},
                 {"text", value_text(kv.value)}});
        out["metadata"] = meta;
    }
    if (tensors) {
        json table = json::array();
        for (const gguf::TensorInfo &t : f.tensors())
            table.push_back({{"name", t.name},
                             {"type", type_name(t.type)},
                             {"shape", t.ne},
                             {"elements", t.n_elements()},
                             {"bytes", t.nbytes},
                             {"part", t.part},
                             {"offset", t.offset}});
        out["tensors"] = table;
    }
    return out;
}

std::string scalar_text(const json &j) {
    if (j.is_string()) return j.get<std::string>();
    return j.dump();
}

void print_text(const json &d) {
    auto line = [](const char *label, const std::string &value) {
        std::printf("%-15s %s\n", label, value.c_str());
    };
    const size_t n_parts = d["parts"].size();
    line("file:", d["path"].get<std::string>() + " (GGUF v" + d["gguf_version"].dump() + ", " +
                      short_bytes(d["file_bytes"].get<uint64_t>()) +
                      (n_parts > 1 ? ", " + std::to_string(n_parts) + " parts" : "") + ")");
    for (size_t i = 1; i < n_parts; ++i) line("", d["parts"][i].get<std::string>());
    line("architecture:", d["architecture"].is_null() ? "(none)" : d["architecture"].get<std::string>());
    if (d.contains("name")) line("name:", d["name"].get<std::string>());
    const uint64_t n_params = d["n_params"].get<uint64_t>();
    line("parameters:", short_count(n_params) + " (" + std::to_string(n_params) + ")");
    line("tensors:", d["n_tensors"].dump() + " (" + short_bytes(d["tensor_bytes"].get<uint64_t>()) + ")");
    std::string types;
    for (const json &t : d["types"]) {
        if (!types.empty()) types += ", ";
        types += t["type"].get<std::string>() + " " + t["tensors"].dump() + " (" +
                 short_bytes(t["bytes"].get<uint64_t>()) + ")";
    }
    line("types:", types.empty() ? "(no tensors)" : types);
    line("context:", d["context_length"].is_null() ? "(not set)" : d["context_length"].dump());
    std::string hp;
    for (const auto &[k, v] : d["hparams"].items()) {
        if (k == "context_length") continue;
        hp += (hp.empty() ? "" : ", ") + k + " " + scalar_text(v);
    }
    if (!hp.empty()) line("shape:", hp);
    std::string rope;
    for (const auto &[k, v] : d["rope"].items())
        rope += (rope.empty() ? "" : ", ") + k + " " + scalar_text(v);
    std::string used;
    if (!d["rope_used"].is_null()) {
        for (const char *k : {"type", "n_rot", "freq_base", "freq_scale"})
            if (d["rope_used"].contains(k))
                used += (used.empty() ? "" : ", ") + (std::string(k) == "type" ? "" : std::string(k) + " ") +
                        scalar_text(d["rope_used"][k]);
    }
    line("rope:", (used.empty() ? "" : used + "; ") + "keys: " + (rope.empty() ? "(none)" : rope));
    const json &v = d["vocab"];
    if (v.contains("error")) {
        line("vocabulary:", "(none: " + v["error"].get<std::string>() + ")");
    } else {
        line("vocabulary:", v["model"].get<std::string>() + " (" + v["type"].get<std::string>() + "), " +
                                v["n_tokens"].dump() + " tokens" +
                                (v["add_bos"].get<bool>() ? ", adds BOS" : "") +
                                (v["add_eos"].get<bool>() ? ", adds EOS" : ""));
        std::string special;
        for (const auto &[k, t] : v["special"].items())
            special +=
                (special.empty() ? "" : ", ") + k + " " + t["id"].dump() + " " + json(t["text"]).dump();
        line("special tokens:", special.empty() ? "(none)" : special);
    }
    const json &tm = d["chat_template"];
    line("chat template:", !tm["present"].get<bool>() ? "(none)"
                           : tm["builtin"].is_null()  ? "present, no built-in format recognised"
                                                      : tm["builtin"].get<std::string>());
    if (d.contains("metadata")) {
        std::printf("\nmetadata (%zu keys):\n", d["metadata"].size());
        for (const json &kv : d["metadata"])
            std::printf("  %-40s %-16s %s\n", kv["key"].get<std::string>().c_str(),
                        kv["type"].get<std::string>().c_str(), kv["text"].get<std::string>().c_str());
    }
    if (d.contains("tensors")) {
        std::printf("\ntensors (%zu):\n", d["tensors"].size());
        for (const json &t : d["tensors"]) {
            std::string shape;
            for (const json &n : t["shape"]) shape += (shape.empty() ? "" : " x ") + n.dump();
            std::printf("  %-40s %-8s %-24s %12s", t["name"].get<std::string>().c_str(),
                        t["type"].get<std::string>().c_str(), shape.c_str(), t["bytes"].dump().c_str());
            if (n_parts > 1) std::printf("  part %s", std::to_string(t["part"].get<int>() + 1).c_str());
            std::printf("\n");
        }
    }
}

}  // namespace

int cmd_info(int argc, char **argv) {
    CLI::App app{"Describe a GGUF file: architecture, parameters, types, vocabulary, metadata, tensors",
                 "lctx info"};
    configure_app(app);
    std::string model_path;
    bool all = false, tensors = false, as_json = false;
    app.add_option("-m,--model,model", model_path, "GGUF file (a split model: its first part)")->required();
    app.add_flag("--all", all, "also list every metadata key and value");
    app.add_flag("--tensors", tensors, "also list every tensor: name, type, shape, bytes");
    app.add_flag("--json", as_json, "print one JSON object");
    const int st = parse_or_report(app, "info", normalize_args(argc, argv));
    if (st >= 0) return st;
    try {
        const std::unique_ptr<gguf::File> f = gguf::open_model(model_path);
        std::vector<std::string> paths;
        for (size_t i = 0; i < f->n_parts(); ++i) paths.push_back(f->part(i).origin());
        const json d = describe(*f, paths, all, tensors);
        if (as_json)
            std::printf("%s\n", d.dump(-1, ' ', false, json::error_handler_t::replace).c_str());
        else
            print_text(d);
    } catch (const std::exception &e) {
        std::fprintf(stderr, "lctx info: %s\n", e.what());
        return 1;
    }
    return 0;
}

}  // namespace lctx::cli
