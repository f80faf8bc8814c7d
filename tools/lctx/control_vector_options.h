// The control-vector options of the generating commands (run, chat), with llama.cpp's names:
// --control-vector FILE[:SCALE], --control-vector-scaled FILE SCALE (both repeatable, the files add up) and
// --control-vector-layer-range START END (default: layer 1 to the last).
#pragma once
#include <CLI/CLI.hpp>
#include <string>
#include <utility>
#include <vector>

#include "llama.h"

namespace lctx::cli {

struct ControlVectorOptions {
    std::vector<std::string> files;                           // FILE or FILE:SCALE
    std::vector<std::pair<std::string, std::string>> scaled;  // FILE, SCALE
    std::vector<int32_t> layer_range;                         // START, END when given
    bool any() const { return !files.empty() || !scaled.empty(); }
};

void add_control_vector_options(CLI::App &app, ControlVectorOptions &o);

// Loads the files, adds them up and installs the sum on `ctx` for the layer range (llama.cpp's defaults:
// a START or END of 0 or less means layer 1 or the last layer). Returns "" or the error in one line
// (naming the option and the file); the context is unchanged then. Prints a note (unless quiet) when a
// file has directions for more layers than the model.
std::string apply_control_vector_options(const ControlVectorOptions &o, const llama_model *model,
                                         llama_context *ctx, bool quiet, const char *cmd);
// What it installs: the summed directions and the layer range, checked against the model's n_layer and
// n_embd (the note printed here). "" or the error.
struct ControlVectorPlan {
    std::vector<float> data;
    int32_t n_embd = 0, start = 0, end = 0;
};
std::string plan_control_vector(const ControlVectorOptions &o, int32_t n_layer, int32_t n_embd, bool quiet,
                                const char *cmd, ControlVectorPlan *out);

}  // namespace lctx::cli
