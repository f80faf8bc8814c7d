// llama.h's metadata overrides as the values the quantizer writes (llama_model_quantize's kv_overrides, and
// `lctx quantize --override-kv`, which parses them as llama.h's): integers as int32, floats as float32, as
// b4748 writes them.
#pragma once
#include <vector>

#include "gguf/gguf.h"
#include "llama.h"

namespace lctx::capi {

// Up to the first empty key (llama.h's end marker) or the end. Throws lctx::Error on an unknown tag.
std::vector<gguf::KeyValue> quantize_overrides(const std::vector<llama_model_kv_override> &list);

}  // namespace lctx::capi
