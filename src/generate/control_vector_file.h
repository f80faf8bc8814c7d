// Control-vector files, as llama.cpp's common library reads them (--control-vector): the engine reads each
// one (lctx_control_vector_load: direction.N tensors, one per layer from 1); several files add up, each
// scaled by its own strength. The result is laid out as llama_apply_adapter_cvec takes it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

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
};

// Reads every file and adds them up. False with *why set to what is wrong (the engine's reason for an
// unreadable or malformed file or a non-finite scale, naming the file; or files of different n_embd).
bool control_vector_load(const std::vector<ControlVectorSource> &sources, ControlVector *out,
                         std::string *why);

// "FILE" or "FILE:SCALE": a number after the last colon is the scale, unless the whole argument names an
// existing file; anything else is a path. False with *why set when the scale is infinite or NaN.
bool parse_control_vector_arg(const std::string &arg, ControlVectorSource *out, std::string *why);

}  // namespace lctx::generate
