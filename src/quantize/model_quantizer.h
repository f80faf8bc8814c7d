// Quantizing a GGUF model file into another (llama_model_quantize, `lctx quantize`): every tensor gets the
// type the file type's rules choose (tensor_type_rules.h), the metadata is copied with general.file_type
// and general.quantization_version set, and tensors are written in llama-quantize's order and layout, so
// both tools produce the same file from the same input.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "gguf/gguf.h"
#include "tensor/types.h"

namespace lctx::quantize {

struct TensorReport {
    int index = 0;  // 1-based
    int count = 0;
    std::string name;
    std::vector<int64_t> ne;
    GgmlType from = GgmlType::F32;
    GgmlType to = GgmlType::F32;
    GgmlType wanted = GgmlType::F32;  // differs from `to` after a fallback
    bool converted = false;           // false: copied as it was
    bool weighted = false;            // quantized with importance weights
    uint64_t bytes_in = 0, bytes_out = 0;
};

struct Options {
    int32_t ftype = 0;  // llama_ftype
    int n_threads = 0;  // <= 0: the hardware's
    std::optional<GgmlType> output_type;
    std::optional<GgmlType> token_embd_type;
    bool allow_requantize = false;
    bool quantize_output_tensor = true;
    bool only_copy = false;  // copy every tensor as it is (general.file_type: the input's)
    bool pure = false;
    // Tensor name -> importance weights (ne[0] per expert), as llama-quantize's map.
    const std::unordered_map<std::string, std::vector<float>> *imatrix = nullptr;
    std::vector<gguf::KeyValue> kv_overrides;  // set after the input's keys (replacing them)
    // Called as each tensor starts (converted and sizes not yet known: bytes_out 0) and again when written.
    std::function<void(const TensorReport &, bool done)> on_tensor;
};

struct Summary {
    int n_tensors = 0;
    int n_fallback = 0;                    // tensors whose rows did not fit the chosen type
    int n_block_fit = 0;                   // quantized tensors whose rows did
    uint64_t bytes_in = 0, bytes_out = 0;  // tensor data, without padding
    uint64_t file_bytes = 0;
};

// Throws lctx::Error (bad input, a tensor the type cannot hold, an I/O failure); the output is then left as
// it was (written through a temporary file that replaces it only when complete).
Summary quantize_model(const std::string &in_path, const std::string &out_path, const Options &opts);

}  // namespace lctx::quantize
