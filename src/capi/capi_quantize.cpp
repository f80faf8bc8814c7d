// C API: llama_model_quantize, over the quantize layer. As in b4748, params->imatrix points to a C++
// std::unordered_map<std::string, std::vector<float>> (tensor name -> importance weights) and
// params->kv_overrides to a std::vector<llama_model_kv_override> ending with an element whose key is empty.
#include <cstring>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "capi/capi_internal.h"
#include "capi/quantize_overrides.h"
#include "quantize/model_quantizer.h"
#include "tensor/types.h"

using lctx::capi::guard;

namespace {

std::optional<lctx::GgmlType> forced_type(enum ggml_type t, const char *what) {
    if (t == GGML_TYPE_COUNT) return std::nullopt;
    if (!lctx::type_is_known(static_cast<int32_t>(t)))
        throw lctx::Error(std::string(what) + ": unknown tensor type " + std::to_string(static_cast<int>(t)));
    return static_cast<lctx::GgmlType>(t);
}

}  // namespace

uint32_t llama_model_quantize(const char *fname_inp, const char *fname_out,
                              const llama_model_quantize_params *params) {
    LCTX_CAPI_REQUIRE(fname_inp, 1u);
    LCTX_CAPI_REQUIRE(fname_out, 1u);
    const llama_model_quantize_params p = params ? *params : llama_model_quantize_default_params();
    return guard(__func__, 1u, [&]() -> uint32_t {
        namespace q = lctx::quantize;
        q::Options o;
        o.ftype = static_cast<int32_t>(p.ftype);
        o.n_threads = p.nthread;
        o.output_type = forced_type(p.output_tensor_type, "output_tensor_type");
        o.token_embd_type = forced_type(p.token_embedding_type, "token_embedding_type");
        o.allow_requantize = p.allow_requantize;
        o.quantize_output_tensor = p.quantize_output_tensor;
        o.only_copy = p.only_copy;
        o.pure = p.pure;
        o.imatrix = static_cast<const std::unordered_map<std::string, std::vector<float>> *>(p.imatrix);
        if (p.kv_overrides)
            o.kv_overrides = lctx::capi::quantize_overrides(
                *static_cast<const std::vector<llama_model_kv_override> *>(p.kv_overrides));
        o.on_tensor = [](const q::TensorReport &r, bool done) {
            if (!done) return;
            LCTX_LOG_INFO("[%4d/%4d] %36s - %6s -> %6s%s, %8.2f MiB -> %8.2f MiB", r.index, r.count,
                          r.name.c_str(), lctx::type_name(r.from), lctx::type_name(r.to),
                          r.to != r.wanted ? " (fallback)" : "", r.bytes_in / 1048576.0,
                          r.bytes_out / 1048576.0);
        };
        const q::Summary s = q::quantize_model(fname_inp, fname_out, o);
        LCTX_LOG_INFO("%s: model size = %8.2f MiB, quant size = %8.2f MiB", __func__, s.bytes_in / 1048576.0,
                      s.bytes_out / 1048576.0);
        if (s.n_fallback > 0)
            LCTX_LOG_WARN("%s: %d of %d tensor(s) required fallback quantization", __func__, s.n_fallback,
                          s.n_fallback + s.n_block_fit);
        return 0u;
    });
}

namespace lctx::capi {

std::vector<gguf::KeyValue> quantize_overrides(const std::vector<llama_model_kv_override> &list) {
    std::vector<gguf::KeyValue> kv;
    for (const llama_model_kv_override &o : list) {
        if (o.key[0] == '\0') break;
        const std::string key(o.key, strnlen(o.key, sizeof o.key));
        switch (o.tag) {  // b4748 writes integers as int32 and floats as float32
            case LLAMA_KV_OVERRIDE_TYPE_INT:
                kv.push_back(
                    {key, gguf::Value::from_int(gguf::ValueType::INT32, static_cast<int32_t>(o.val_i64))});
                break;
            case LLAMA_KV_OVERRIDE_TYPE_FLOAT:
                kv.push_back({key, gguf::Value::from_float(gguf::ValueType::FLOAT32, o.val_f64)});
                break;
            case LLAMA_KV_OVERRIDE_TYPE_BOOL:
                kv.push_back({key, gguf::Value::from_bool(o.val_bool)});
                break;
            case LLAMA_KV_OVERRIDE_TYPE_STR:
                kv.push_back({key, gguf::Value::from_string(
                                       std::string(o.val_str, strnlen(o.val_str, sizeof o.val_str)))});
                break;
            default:
                throw Error("metadata override '" + key + "' has an unknown type");
        }
    }
    return kv;
}

}  // namespace lctx::capi
