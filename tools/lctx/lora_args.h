// LoRA adapter options shared by run, chat and serve: --lora FILE[:SCALE] (repeatable; scale 1 when left
// out) and llama.cpp's --lora-scaled FILE SCALE (repeatable). Parsing only; loading is the command's.
#pragma once
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

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

}  // namespace lctx::cli
