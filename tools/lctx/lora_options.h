// The LoRA options (lora_args.h) loaded as the internal adapters, for the commands still over the internal
// classes (chat).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "context/context.h"
#include "model/lora_adapter.h"
#include "tools/lctx/lora_args.h"

namespace lctx::cli {

// Loads each adapter for the model; on a bad file prints "lctx CMD: --lora FILE: reason" and returns false.
bool load_loras_or_report(const Model &model, const std::vector<LoraOption> &opts, const char *cmd,
                          std::vector<std::shared_ptr<const LoraAdapter>> &out);
// Sets the loaded adapters on a context with their scales.
void apply_loras(Context &ctx, const std::vector<LoraOption> &opts,
                 const std::vector<std::shared_ptr<const LoraAdapter>> &adapters);

}  // namespace lctx::cli
