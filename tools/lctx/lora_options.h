// LoRA adapter options shared by run, chat and serve: --lora FILE[:SCALE] (repeatable; scale 1 when left
// out) and llama.cpp's --lora-scaled FILE SCALE (repeatable).
#pragma once
#include <CLI/CLI.hpp>
#include <memory>
#include <string>
#include <vector>

#include "context/context.h"
#include "model/lora_adapter.h"

namespace lctx::cli {

struct LoraOption {
    std::string path;
    float scale = 1.0f;
};

struct LoraArgs {
    std::vector<std::string> lora;         // FILE[:SCALE]
    std::vector<std::string> lora_scaled;  // FILE SCALE pairs, flattened
};

void add_lora_options(CLI::App &app, LoraArgs &a);
// The adapters in the order given (--lora first, then --lora-scaled); the first problem as one line
// ("--lora: ...") in `error`.
std::vector<LoraOption> parse_lora_options(const LoraArgs &a, std::string &error);

// Loads each adapter for the model; on a bad file prints "lctx CMD: --lora FILE: reason" and returns false.
bool load_loras_or_report(const Model &model, const std::vector<LoraOption> &opts, const char *cmd,
                          std::vector<std::shared_ptr<const LoraAdapter>> &out);
// Sets the loaded adapters on a context with their scales.
void apply_loras(Context &ctx, const std::vector<LoraOption> &opts,
                 const std::vector<std::shared_ptr<const LoraAdapter>> &adapters);

}  // namespace lctx::cli
