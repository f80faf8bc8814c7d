// Every architecture llama.cpp b4748 knows (general.architecture), with what llama.h reports of it before
// any weight is read: its RoPE flavour and whether it has an encoder / a decoder. A vocabulary-only load
// accepts any of them; running one needs its forward pass (Arch in model/hparams.h).
#pragma once
#include <string_view>

namespace lctx {

enum class RopeKind { None, Norm, Neox, Mrope };

struct ArchitectureInfo {
    std::string_view name;
    RopeKind rope;
    bool has_encoder;
    bool has_decoder;
};

// Null for a name b4748 does not know.
const ArchitectureInfo *find_architecture(std::string_view name);

}  // namespace lctx
