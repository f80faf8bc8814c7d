// Writes the binary seed inputs of the fuzz corpora (fuzz/make_corpus.sh runs it): small GGUF files, tiny
// models in the llama layout with the stories260K vocabulary, saved states of a stories260K context, and
// the JSON schemas of fixtures/grammar/schema-cases.json.
// Usage: fuzz_make_seeds <corpus dir>   (writes <dir>/gguf, <dir>/model_load, <dir>/state, <dir>/json_schema)
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gguf/gguf.h"
#include "llama.h"
#include "tensor/types.h"

using namespace lctx;
namespace fs = std::filesystem;

namespace {

void put(const fs::path &path, const std::vector<uint8_t> &bytes) {
    std::ofstream f(path, std::ios::binary);
    f.write(reinterpret_cast<const char *>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    if (!f) throw std::runtime_error("cannot write " + path.string());
}

std::vector<uint8_t> prefixed(std::initializer_list<uint8_t> head, const std::vector<uint8_t> &body) {
    std::vector<uint8_t> out(head);
    out.insert(out.end(), body.begin(), body.end());
    return out;
}

std::vector<uint8_t> slurp(const fs::path &path) {
    std::ifstream f(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(f), {}};
}

// Every value type, nested arrays, tensors of several types.
std::vector<uint8_t> all_value_types() {
    using gguf::Value;
    using gguf::ValueType;
    gguf::Writer w;
    w.set("u8", Value::from_uint(ValueType::UINT8, 200));
    w.set("i8", Value::from_int(ValueType::INT8, -5));
    w.set("u16", Value::from_uint(ValueType::UINT16, 60000));
    w.set("i16", Value::from_int(ValueType::INT16, -30000));
    w.set_u32("u32", 4000000000u);
    w.set_i32("i32", -2000000000);
    w.set_u64("u64", ~uint64_t{0});
    w.set("i64", Value::from_int(ValueType::INT64, INT64_MIN));
    w.set_f32("f32", 1.5f);
    w.set("f64", Value::from_float(ValueType::FLOAT64, 1e300));
    w.set_bool("bool", true);
    w.set_string("general.name", "seed");
    w.set_u32("general.alignment", 64);
    w.set_string_array("strs", {"a", "", "\xff\xfe", "longer string"});
    w.set_f32_array("floats", {0.0f, -1.0f, 3.5f});
    w.set_i32_array("ints", {1, -1, 7});
    w.set("nested",
          Value::from_array(ValueType::ARRAY,
                            {Value::from_array(ValueType::INT16, {Value::from_int(ValueType::INT16, -2)}),
                             Value::from_array(ValueType::STRING, {Value::from_string("x")})}));
    std::vector<float> f(64, 0.25f);
    w.add_tensor("f32", GgmlType::F32, {4, 2}, f.data(), 32);
    std::vector<uint8_t> q(row_size(GgmlType::Q8_0, 64));
    quantize_row(GgmlType::Q8_0, f.data(), q.data(), 64);
    w.add_tensor("q8", GgmlType::Q8_0, {64}, q.data(), q.size());
    std::vector<uint8_t> q4(row_size(GgmlType::Q4_K, 256) * 2);
    std::vector<float> f256(512, -0.5f);
    quantize_row(GgmlType::Q4_K, f256.data(), q4.data(), 512);
    w.add_tensor("blk.0.q4k", GgmlType::Q4_K, {256, 2}, q4.data(), q4.size());
    return w.to_bytes();
}

struct TinyShape {
    uint32_t n_embd, n_layer, n_head, n_head_kv, n_ff;
    GgmlType matrix_type;
    bool tied;
};

// A llama model with random weights and the vocabulary (tokenizer.* keys) of `vocab_file`.
std::vector<uint8_t> tiny_model(const gguf::File &vocab_file, const TinyShape &s, uint32_t seed) {
    gguf::Writer w;
    w.set_string("general.architecture", "llama");
    w.set_string("general.name", "fuzz-seed");
    w.set_u32("llama.context_length", 64);
    w.set_u32("llama.embedding_length", s.n_embd);
    w.set_u32("llama.block_count", s.n_layer);
    w.set_u32("llama.feed_forward_length", s.n_ff);
    w.set_u32("llama.attention.head_count", s.n_head);
    w.set_u32("llama.attention.head_count_kv", s.n_head_kv);
    w.set_f32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
    w.set_f32("llama.rope.freq_base", 10000.0f);
    int64_t n_vocab = 0;
    for (const gguf::KeyValue &kv : vocab_file.metadata()) {
        if (kv.key.rfind("tokenizer.", 0) != 0) continue;
        w.set(kv.key, kv.value);
        if (kv.key == "tokenizer.ggml.tokens") n_vocab = static_cast<int64_t>(kv.value.array_size());
    }
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(-0.1f, 0.1f);
    auto add = [&](const std::string &name, GgmlType type, std::vector<int64_t> ne) {
        int64_t n = 1;
        for (int64_t d : ne) n *= d;
        std::vector<float> v(static_cast<size_t>(n));
        for (float &x : v) x = ne.size() == 1 ? 1.0f + dist(rng) : dist(rng);
        std::vector<uint8_t> bytes(row_size(type, ne[0]) * static_cast<size_t>(n / ne[0]));
        for (int64_t r = 0; r < n / ne[0]; ++r)
            quantize_row(type, v.data() + r * ne[0], bytes.data() + r * row_size(type, ne[0]), ne[0]);
        w.add_tensor(name, type, ne, bytes.data(), bytes.size());
    };
    const int64_t hd = s.n_embd / s.n_head;
    add("token_embd.weight", s.matrix_type, {s.n_embd, n_vocab});
    add("output_norm.weight", GgmlType::F32, {s.n_embd});
    if (!s.tied) add("output.weight", s.matrix_type, {s.n_embd, n_vocab});
    for (uint32_t il = 0; il < s.n_layer; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        add(p + "attn_norm.weight", GgmlType::F32, {s.n_embd});
        add(p + "attn_q.weight", s.matrix_type, {s.n_embd, hd * s.n_head});
        add(p + "attn_k.weight", s.matrix_type, {s.n_embd, hd * s.n_head_kv});
        add(p + "attn_v.weight", s.matrix_type, {s.n_embd, hd * s.n_head_kv});
        add(p + "attn_output.weight", s.matrix_type, {hd * s.n_head, s.n_embd});
        add(p + "ffn_norm.weight", GgmlType::F32, {s.n_embd});
        add(p + "ffn_gate.weight", s.matrix_type, {s.n_embd, s.n_ff});
        add(p + "ffn_up.weight", s.matrix_type, {s.n_embd, s.n_ff});
        add(p + "ffn_down.weight", s.matrix_type, {s.n_ff, s.n_embd});
    }
    return w.to_bytes();
}

bool decode(llama_context *ctx, const std::vector<llama_token> &tokens, llama_pos pos0, llama_seq_id seq) {
    llama_batch b = llama_batch_init(static_cast<int32_t>(tokens.size()), 0, 1);
    for (size_t i = 0; i < tokens.size(); ++i) {
        b.token[i] = tokens[i];
        b.pos[i] = pos0 + static_cast<llama_pos>(i);
        b.n_seq_id[i] = 1;
        b.seq_id[i][0] = seq;
        b.logits[i] = i + 1 == tokens.size();
    }
    b.n_tokens = static_cast<int32_t>(tokens.size());
    const bool ok = llama_decode(ctx, b) == 0;
    llama_batch_free(b);
    return ok;
}

// Seeds for fuzz_state: byte 0 = loader (0 set_data, 1 seq_set_data, 2 load_file, 3 seq_load_file),
// byte 1 = destination sequence + 1 (low 2 bits) and token capacity (<< 3).
void state_seeds(const fs::path &dir, const fs::path &root) {
    llama_log_set([](enum ggml_log_level, const char *, void *) {}, nullptr);
    const std::string model_path = (root / "models" / "stories260K.gguf").string();
    llama_model *model = llama_model_load_from_file(model_path.c_str(), llama_model_default_params());
    if (!model) throw std::runtime_error("cannot load " + model_path);
    llama_context_params p = llama_context_default_params();
    p.n_ctx = 256;
    p.n_batch = 64;
    p.n_ubatch = 8;
    p.n_seq_max = 2;
    p.n_threads = 1;
    p.n_threads_batch = 1;
    llama_context *ctx = llama_init_from_model(model, p);
    const std::vector<llama_token> prompt = {1, 403, 407, 261, 378};
    if (!ctx || !decode(ctx, prompt, 0, 0) || !decode(ctx, {1, 298}, 0, 1))
        throw std::runtime_error("cannot prepare the state context");

    std::vector<uint8_t> s(llama_state_get_size(ctx));
    llama_state_get_data(ctx, s.data(), s.size());
    put(dir / "set_data", prefixed({0, 0}, s));
    std::vector<uint8_t> q(llama_state_seq_get_size(ctx, 1));
    llama_state_seq_get_data(ctx, q.data(), q.size(), 1);
    put(dir / "seq_set_data_into_0", prefixed({1, 1}, q));
    put(dir / "seq_set_data_into_1", prefixed({1, 2}, q));

    const fs::path tmp = fs::temp_directory_path() / "lctx_make_seeds.bin";
    llama_state_save_file(ctx, tmp.c_str(), prompt.data(), prompt.size());
    put(dir / "load_file", prefixed({2, 8 << 3}, slurp(tmp)));
    llama_state_seq_save_file(ctx, tmp.c_str(), 0, prompt.data(), prompt.size());
    put(dir / "seq_load_file", prefixed({3, (8 << 3) | 2}, slurp(tmp)));
    fs::remove(tmp);

    // An empty context's state (no outputs, no cells).
    llama_kv_cache_clear(ctx);
    llama_context *empty = llama_init_from_model(model, p);
    std::vector<uint8_t> e(llama_state_get_size(empty));
    llama_state_get_data(empty, e.data(), e.size());
    put(dir / "set_data_empty", prefixed({0, 0}, e));
    llama_free(empty);

    // The files llama.cpp wrote (fixtures/state): 20 tokens, so capacity 24.
    put(dir / "llama_cpp_session", prefixed({2, 24 << 3}, slurp(root / "fixtures/state/session.bin")));
    put(dir / "llama_cpp_seq0_into_1", prefixed({3, (24 << 3) | 2}, slurp(root / "fixtures/state/seq0.bin")));
    llama_free(ctx);
    llama_model_free(model);
}

}  // namespace

// One file per fixture schema, named after its case, written as it stands in the fixture (key order kept).
void json_schema_seeds(const fs::path &dir, const fs::path &root) {
    std::ifstream f(root / "fixtures" / "grammar" / "schema-cases.json");
    for (const nlohmann::ordered_json &c : nlohmann::ordered_json::parse(f)) {
        const std::string text = c["schema"].dump(2);
        put(dir / c["name"].get<std::string>(), std::vector<uint8_t>(text.begin(), text.end()));
    }
}

int main(int argc, char **argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s <corpus dir>\n", argv[0]);
        return 2;
    }
    try {
        const fs::path out = argv[1];
        const fs::path root = fs::path(LCTX_FIXTURES_DIR).parent_path();
        for (const char *sub : {"gguf", "model_load", "state", "json_schema"}) fs::create_directories(out / sub);

        const auto stories = gguf::File::open((root / "models" / "stories260K.gguf").string());
        const std::vector<uint8_t> a = tiny_model(*stories, {8, 2, 2, 1, 16, GgmlType::F32, false}, 1);
        const std::vector<uint8_t> b = tiny_model(*stories, {32, 1, 4, 2, 64, GgmlType::Q8_0, true}, 2);
        const std::vector<uint8_t> c = tiny_model(*stories, {32, 1, 2, 2, 32, GgmlType::F16, true}, 3);
        put(out / "model_load" / "tiny_f32.gguf", a);
        put(out / "model_load" / "tiny_q8_0_tied.gguf", b);
        put(out / "model_load" / "tiny_f16_tied.gguf", c);

        put(out / "gguf" / "all_value_types.gguf", all_value_types());
        put(out / "gguf" / "tiny_f32.gguf", a);
        gguf::Writer empty;
        put(out / "gguf" / "empty.gguf", empty.to_bytes());

        state_seeds(out / "state", root);
        json_schema_seeds(out / "json_schema", root);
    } catch (const std::exception &e) {
        std::fprintf(stderr, "fuzz_make_seeds: %s\n", e.what());
        return 1;
    }
    return 0;
}
