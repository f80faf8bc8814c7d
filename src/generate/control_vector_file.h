// Control-vector files, as llama.cpp's common library reads them (--control-vector): a GGUF whose tensors
// are `direction.N`, one F32 vector of n_embd per layer N (from 1; layer 0 has none), with optional
// metadata `controlvector.model_hint` (the architecture it was made for) and `controlvector.layer_count`.
// Several files add up, each scaled by its own strength. The result is laid out as
// llama_apply_adapter_cvec takes it. Like llama.cpp's common code, this reads the file format directly
// (src/gguf) and hands the engine only the numbers.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace lctx::gguf {
class File;
}

namespace lctx::generate {

struct ControlVectorSource {
    std::string path;
    float scale = 1.0f;
};

struct ControlVector {
    int32_t n_embd = 0;
    // n_embd floats per layer from layer 1 on: layer N's direction at [(N - 1) * n_embd, N * n_embd);
    // layers a file does not name hold zeros.
    std::vector<float> data;
    std::string model_hint;   // controlvector.model_hint of the first file that has it, else ""
    int64_t layer_count = 0;  // the highest layer with a direction

    int32_t n_layers_covered() const { return n_embd > 0 ? static_cast<int32_t>(data.size() / n_embd) : 0; }
};

// Layers beyond this are refused (a direction's index sizes the buffer).
constexpr int64_t kMaxControlVectorLayer = 4096;

// One file's directions times `scale`. Throws lctx::Error naming `name` and what is wrong: a tensor not
// named direction.N (N a decimal from 1 to kMaxControlVectorLayer), not F32, not one-dimensional, of
// another length than the others, holding a non-finite value, or no direction at all.
ControlVector control_vector_read(const gguf::File &file, float scale, const std::string &name);

// Reads every file and adds them up. Throws lctx::Error on an unreadable or malformed file, a non-finite
// scale, or files of different n_embd.
ControlVector control_vector_load(const std::vector<ControlVectorSource> &sources);

// "FILE" or "FILE:SCALE": a number after the last colon is the scale, unless the whole argument names an
// existing file; anything else is a path. False with *why set when the scale is infinite or NaN.
bool parse_control_vector_arg(const std::string &arg, ControlVectorSource *out, std::string *why);

}  // namespace lctx::generate
