// Control-vector files, as llama.cpp's common library reads them (--control-vector): a GGUF whose tensors
// are `direction.N`, one F32 vector of n_embd per layer N (from 1; layer 0 has none), with optional
// metadata `controlvector.model_hint` (the architecture it was made for) and `controlvector.layer_count`.
// One file's directions, laid out as llama_apply_adapter_cvec takes them; the C API reads files with it
// (lctx_control_vector_load in lctx/lctx_ext.h).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "gguf/gguf.h"

namespace lctx::gguf {

struct ControlVector {
    int32_t n_embd = 0;
    // n_embd floats per layer from layer 1 on: layer N's direction at [(N - 1) * n_embd, N * n_embd);
    // layers the file does not name hold zeros.
    std::vector<float> data;
    std::string model_hint;   // controlvector.model_hint, else ""
    int64_t layer_count = 0;  // the highest layer with a direction
};

// Layers beyond this are refused (a direction's index sizes the buffer).
constexpr int64_t kMaxControlVectorLayer = 4096;

// The file's directions times `scale`. Throws lctx::Error naming `name` and what is wrong: a tensor not
// named direction.N (N a decimal from 1 to kMaxControlVectorLayer), not F32, not one-dimensional, of
// another length than the others, holding a non-finite value, or no direction at all.
ControlVector read_control_vector(const File &file, float scale, const std::string &name);

}  // namespace lctx::gguf
