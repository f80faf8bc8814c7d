// C API: model parameters, loading, queries and metadata; control vectors (quantize: capi_quantize.cpp, LoRA
// adapters: capi_lora.cpp, split models: capi_split.cpp).
#include <cstring>
#include <string>
#include <type_traits>

#include "capi/capi_internal.h"
#include "gguf/gguf.h"
#include "lctx/lctx_ext.h"
#include "model/architectures.h"

using lctx::capi::copy_out;
using lctx::capi::guard;
using lctx::capi::guard_void;
using lctx::capi::load_model;

namespace {

// llama_model_params.kv_overrides (an array ended by an empty key) as the model layer's override list; a
// key or string value without its terminating NUL inside its 128 bytes, or an unknown tag, is refused.
std::vector<lctx::gguf::KeyValue> overrides_from(const llama_model_kv_override *kvo) {
    using lctx::gguf::Value;
    using lctx::gguf::ValueType;
    std::vector<lctx::gguf::KeyValue> out;
    for (; kvo && kvo->key[0] != '\0'; ++kvo) {
        const size_t key_len = strnlen(kvo->key, sizeof kvo->key);
        if (key_len == sizeof kvo->key) throw lctx::Error("kv_overrides: a key is not NUL-terminated");
        std::string key(kvo->key, key_len);
        // The tag comes from the caller: read as its integer, so that a value outside the enum is refused
        // rather than loaded as the enum type.
        std::underlying_type_t<llama_model_kv_override_type> tag;
        std::memcpy(&tag, &kvo->tag, sizeof tag);
        switch (tag) {
            case LLAMA_KV_OVERRIDE_TYPE_INT:
                out.push_back({key, Value::from_int(ValueType::INT64, kvo->val_i64)});
                break;
            case LLAMA_KV_OVERRIDE_TYPE_FLOAT:
                out.push_back({key, Value::from_float(ValueType::FLOAT64, kvo->val_f64)});
                break;
            case LLAMA_KV_OVERRIDE_TYPE_BOOL:
                out.push_back({key, Value::from_bool(kvo->val_bool)});
                break;
            case LLAMA_KV_OVERRIDE_TYPE_STR: {
                const size_t n = strnlen(kvo->val_str, sizeof kvo->val_str);
                if (n == sizeof kvo->val_str)
                    throw lctx::Error("kv_overrides: the string value of '" + key +
                                      "' is not NUL-terminated");
                out.push_back({key, Value::from_string(std::string(kvo->val_str, n))});
                break;
            }
            default:
                throw lctx::Error("kv_overrides: '" + key + "' has an unknown type tag " +
                                  std::to_string(tag));
        }
        LCTX_LOG_INFO("model: metadata override %s = %s", key.c_str(),
                      out.back().value.to_display_string().c_str());
    }
    return out;
}

}  // namespace

llama_model *lctx::capi::load_model(const char *fn, const char *path, const std::vector<std::string> *parts,
                                    const llama_model_params &params) {
    LCTX_CAPI_REQUIRE(path, nullptr);
    return guard(fn, static_cast<llama_model *>(nullptr), [&]() -> llama_model * {
        if (params.n_gpu_layers > 0)
            LCTX_LOG_INFO("%s: no GPU backend; n_gpu_layers = %d is ignored", fn, params.n_gpu_layers);
        lctx::ModelLoadOptions opts;
        opts.vocab_only = params.vocab_only;
        opts.progress = params.progress_callback;
        opts.progress_user_data = params.progress_callback_user_data;
        opts.overrides = overrides_from(params.kv_overrides);

        const double t0 = lctx::capi::now_ms();
        auto m = std::make_unique<llama_model>();
        m->impl = parts ? lctx::Model::load_parts(*parts, opts) : lctx::Model::load(path, opts);
        m->vocab_only = params.vocab_only;
        m->t_load_ms = lctx::capi::now_ms() - t0;
        for (const lctx::gguf::KeyValue &kv : m->impl->file().metadata()) {
            if (kv.value.type == lctx::gguf::ValueType::ARRAY) continue;
            m->meta.emplace_back(kv.key, kv.value.to_display_string());
        }
        return m.release();
    });
}

namespace {

const lctx::HParams &hp(const llama_model *model) {
    return model->impl->hparams();
}

}  // namespace

extern "C" {

struct llama_model_params llama_model_default_params(void) {
    llama_model_params p{};
    p.devices = nullptr;
    p.n_gpu_layers = 0;
    p.split_mode = LLAMA_SPLIT_MODE_LAYER;
    p.main_gpu = 0;
    p.tensor_split = nullptr;
    p.progress_callback = nullptr;
    p.progress_callback_user_data = nullptr;
    p.kv_overrides = nullptr;
    p.vocab_only = false;
    p.use_mmap = true;
    p.use_mlock = false;
    p.check_tensors = false;
    return p;
}

struct llama_model_quantize_params llama_model_quantize_default_params(void) {
    llama_model_quantize_params p{};
    p.nthread = 0;
    p.ftype = LLAMA_FTYPE_MOSTLY_Q5_1;
    p.output_tensor_type = GGML_TYPE_COUNT;
    p.token_embedding_type = GGML_TYPE_COUNT;
    p.allow_requantize = false;
    p.quantize_output_tensor = true;
    p.only_copy = false;
    p.pure = false;
    p.keep_split = false;
    p.imatrix = nullptr;
    p.kv_overrides = nullptr;
    return p;
}

struct llama_model *llama_model_load_from_file(const char *path_model, struct llama_model_params params) {
    return load_model(__func__, path_model, nullptr, params);
}

struct llama_model *llama_load_model_from_file(const char *path_model, struct llama_model_params params) {
    return load_model(__func__, path_model, nullptr, params);
}

void llama_model_free(struct llama_model *model) {
    delete model;
}
void llama_free_model(struct llama_model *model) {
    delete model;
}

const struct llama_vocab *llama_model_get_vocab(const struct llama_model *model) {
    LCTX_CAPI_REQUIRE(model, nullptr);
    return lctx::capi::vocab_handle(model->impl->vocab());
}

enum llama_rope_type llama_model_rope_type(const struct llama_model *model) {
    LCTX_CAPI_REQUIRE(model, LLAMA_ROPE_TYPE_NONE);
    const lctx::kernels::RopeParams &r = hp(model).rope;
    // A vocab-only load reads no rotary dimensions; b4748 answers by architecture alone.
    if (model->vocab_only) {
        const lctx::ArchitectureInfo *a = lctx::find_architecture(hp(model).arch_name);
        switch (a ? a->rope : lctx::RopeKind::None) {
            case lctx::RopeKind::Norm:
                return LLAMA_ROPE_TYPE_NORM;
            case lctx::RopeKind::Neox:
                return LLAMA_ROPE_TYPE_NEOX;
            case lctx::RopeKind::Mrope:
                return LLAMA_ROPE_TYPE_MROPE;
            case lctx::RopeKind::None:
                return LLAMA_ROPE_TYPE_NONE;
        }
    }
    if (r.n_rot == 0) return LLAMA_ROPE_TYPE_NONE;
    return r.mode == lctx::kernels::RopeMode::Neox ? LLAMA_ROPE_TYPE_NEOX : LLAMA_ROPE_TYPE_NORM;
}

int32_t llama_model_n_ctx_train(const struct llama_model *model) {
    LCTX_CAPI_REQUIRE(model, 0);
    return static_cast<int32_t>(hp(model).n_ctx_train);
}
int32_t llama_model_n_embd(const struct llama_model *model) {
    LCTX_CAPI_REQUIRE(model, 0);
    return static_cast<int32_t>(hp(model).n_embd);
}
int32_t llama_model_n_layer(const struct llama_model *model) {
    LCTX_CAPI_REQUIRE(model, 0);
    return static_cast<int32_t>(hp(model).n_layer);
}
int32_t llama_model_n_head(const struct llama_model *model) {
    LCTX_CAPI_REQUIRE(model, 0);
    return static_cast<int32_t>(hp(model).n_head);
}
int32_t llama_n_ctx_train(const struct llama_model *model) {
    LCTX_CAPI_REQUIRE(model, 0);
    return static_cast<int32_t>(hp(model).n_ctx_train);
}
int32_t llama_n_embd(const struct llama_model *model) {
    LCTX_CAPI_REQUIRE(model, 0);
    return static_cast<int32_t>(hp(model).n_embd);
}
int32_t llama_n_layer(const struct llama_model *model) {
    LCTX_CAPI_REQUIRE(model, 0);
    return static_cast<int32_t>(hp(model).n_layer);
}
int32_t llama_n_head(const struct llama_model *model) {
    LCTX_CAPI_REQUIRE(model, 0);
    return static_cast<int32_t>(hp(model).n_head);
}

float llama_model_rope_freq_scale_train(const struct llama_model *model) {
    LCTX_CAPI_REQUIRE(model, 0.0f);
    return hp(model).rope.freq_scale;
}

int32_t llama_model_meta_val_str(const struct llama_model *model, const char *key, char *buf,
                                 size_t buf_size) {
    if (buf && buf_size > 0) buf[0] = '\0';
    LCTX_CAPI_REQUIRE(model, -1);
    LCTX_CAPI_REQUIRE(key, -1);
    for (const auto &[k, v] : model->meta)
        if (k == key) return copy_out(v, buf, buf_size);
    return -1;
}

int32_t llama_model_meta_count(const struct llama_model *model) {
    LCTX_CAPI_REQUIRE(model, 0);
    return static_cast<int32_t>(model->meta.size());
}

int32_t llama_model_meta_key_by_index(const struct llama_model *model, int32_t i, char *buf,
                                      size_t buf_size) {
    if (buf && buf_size > 0) buf[0] = '\0';
    LCTX_CAPI_REQUIRE(model, -1);
    if (i < 0 || static_cast<size_t>(i) >= model->meta.size()) return -1;
    return copy_out(model->meta[i].first, buf, buf_size);
}

int32_t llama_model_meta_val_str_by_index(const struct llama_model *model, int32_t i, char *buf,
                                          size_t buf_size) {
    if (buf && buf_size > 0) buf[0] = '\0';
    LCTX_CAPI_REQUIRE(model, -1);
    if (i < 0 || static_cast<size_t>(i) >= model->meta.size()) return -1;
    return copy_out(model->meta[i].second, buf, buf_size);
}

int32_t llama_model_desc(const struct llama_model *model, char *buf, size_t buf_size) {
    if (buf && buf_size > 0) buf[0] = '\0';
    LCTX_CAPI_REQUIRE(model, -1);
    return guard(__func__, -1, [&] { return copy_out(model->impl->description(), buf, buf_size); });
}

uint64_t llama_model_size(const struct llama_model *model) {
    LCTX_CAPI_REQUIRE(model, 0);
    return model->impl->size_bytes();
}

uint64_t llama_model_n_params(const struct llama_model *model) {
    LCTX_CAPI_REQUIRE(model, 0);
    return model->impl->n_params();
}

const char *llama_model_chat_template(const struct llama_model *model, const char *name) {
    LCTX_CAPI_REQUIRE(model, nullptr);
    const std::string key = name ? std::string("tokenizer.chat_template.") + name : "tokenizer.chat_template";
    const lctx::gguf::Value *v = model->impl->file().find(key);
    if (!v || v->type != lctx::gguf::ValueType::STRING) return nullptr;
    return v->str.c_str();  // lives in the model's metadata
}

bool llama_model_has_encoder(const struct llama_model *model) {
    LCTX_CAPI_REQUIRE(model, false);
    const lctx::ArchitectureInfo *a = lctx::find_architecture(hp(model).arch_name);
    return a && a->has_encoder;
}

bool llama_model_has_decoder(const struct llama_model *model) {
    LCTX_CAPI_REQUIRE(model, false);
    const lctx::ArchitectureInfo *a = lctx::find_architecture(hp(model).arch_name);
    return !a || a->has_decoder;
}

llama_token llama_model_decoder_start_token(const struct llama_model *model) {
    LCTX_CAPI_REQUIRE(model, LLAMA_TOKEN_NULL);
    return hp(model).dec_start_token;  // t5.decoder_start_token_id, or -1 (LLAMA_TOKEN_NULL)
}

bool llama_model_is_recurrent(const struct llama_model *model) {
    LCTX_CAPI_REQUIRE(model, false);
    return hp(model).recurrent;  // mamba: one state per sequence instead of attention cells
}

// ---- Control vectors (LoRA adapters: capi_lora.cpp) ----

int32_t llama_apply_adapter_cvec(struct llama_context *ctx, const float *data, size_t len, int32_t n_embd,
                                 int32_t il_start, int32_t il_end) {
    LCTX_CAPI_REQUIRE(ctx, 1);
    return guard(__func__, 1, [&] {
        ctx->impl->set_control_vector(data, len, n_embd, il_start, il_end);
        return 0;
    });
}

bool lctx_model_has_output(const struct llama_model *model) {
    LCTX_CAPI_REQUIRE(model, false);
    return model->impl->weights().output.data != nullptr;
}

uint64_t lctx_model_kv_cache_size(const struct llama_model *model, uint32_t n_ctx, enum ggml_type type_k,
                                  enum ggml_type type_v) {
    LCTX_CAPI_REQUIRE(model, 0);
    const lctx::HParams &h = hp(model);
    using lctx::GgmlType;
    if (h.recurrent)  // one f32 state per sequence, whatever the context
        return static_cast<uint64_t>(h.n_layer) * (lctx::row_size(GgmlType::F32, h.n_embd_k_s()) +
                                                   lctx::row_size(GgmlType::F32, h.n_embd_v_s()));
    return static_cast<uint64_t>(h.n_layer_cache()) * n_ctx *
           (lctx::row_size(static_cast<GgmlType>(type_k), h.n_embd_k_gqa()) +
            lctx::row_size(static_cast<GgmlType>(type_v), h.n_embd_v_gqa()));
}

}  // extern "C"
