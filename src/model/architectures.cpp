#include "model/architectures.h"

#include <array>

namespace lctx {

namespace {

constexpr RopeKind N = RopeKind::None, R = RopeKind::Norm, X = RopeKind::Neox;

// b4748's architecture names and llama_model_rope_type's answer for each: NONE without rotary embedding,
// NORM on consecutive pairs, NEOX on pairs n_rot / 2 apart, MROPE for Qwen2-VL.
constexpr std::array kArchitectures = {
    ArchitectureInfo{"llama", R, false, true},
    ArchitectureInfo{"deci", R, false, true},
    ArchitectureInfo{"falcon", X, false, true},
    ArchitectureInfo{"grok", X, false, true},
    ArchitectureInfo{"gpt2", N, false, true},
    ArchitectureInfo{"gptj", N, false, true},
    ArchitectureInfo{"gptneox", X, false, true},
    ArchitectureInfo{"mpt", N, false, true},
    ArchitectureInfo{"baichuan", R, false, true},
    ArchitectureInfo{"starcoder", R, false, true},
    ArchitectureInfo{"refact", N, false, true},
    ArchitectureInfo{"bert", X, false, true},
    ArchitectureInfo{"nomic-bert", X, false, true},
    ArchitectureInfo{"jina-bert-v2", N, false, true},
    ArchitectureInfo{"bloom", N, false, true},
    ArchitectureInfo{"stablelm", X, false, true},
    ArchitectureInfo{"qwen", X, false, true},
    ArchitectureInfo{"qwen2", X, false, true},
    ArchitectureInfo{"qwen2moe", X, false, true},
    ArchitectureInfo{"qwen2vl", RopeKind::Mrope, false, true},
    ArchitectureInfo{"phi2", X, false, true},
    ArchitectureInfo{"phi3", X, false, true},
    ArchitectureInfo{"phimoe", X, false, true},
    ArchitectureInfo{"plamo", R, false, true},
    ArchitectureInfo{"codeshell", X, false, true},
    ArchitectureInfo{"orion", R, false, true},
    ArchitectureInfo{"internlm2", R, false, true},
    ArchitectureInfo{"minicpm", R, false, true},
    ArchitectureInfo{"minicpm3", X, false, true},
    ArchitectureInfo{"gemma", X, false, true},
    ArchitectureInfo{"gemma2", X, false, true},
    ArchitectureInfo{"starcoder2", X, false, true},
    ArchitectureInfo{"mamba", N, false, true},
    ArchitectureInfo{"xverse", R, false, true},
    ArchitectureInfo{"command-r", R, false, true},
    ArchitectureInfo{"cohere2", R, false, true},
    ArchitectureInfo{"dbrx", X, false, true},
    ArchitectureInfo{"olmo", R, false, true},
    ArchitectureInfo{"olmo2", X, false, true},
    ArchitectureInfo{"olmoe", X, false, true},
    ArchitectureInfo{"openelm", X, false, true},
    ArchitectureInfo{"arctic", R, false, true},
    ArchitectureInfo{"deepseek", R, false, true},
    ArchitectureInfo{"deepseek2", R, false, true},
    ArchitectureInfo{"chatglm", R, false, true},
    ArchitectureInfo{"bitnet", X, false, true},
    ArchitectureInfo{"t5", N, true, true},
    ArchitectureInfo{"t5encoder", N, true, false},
    ArchitectureInfo{"jais", N, false, true},
    ArchitectureInfo{"nemotron", X, false, true},
    ArchitectureInfo{"exaone", X, false, true},
    ArchitectureInfo{"rwkv6", N, false, true},
    ArchitectureInfo{"rwkv6qwen2", N, false, true},
    ArchitectureInfo{"granite", R, false, true},
    ArchitectureInfo{"granitemoe", R, false, true},
    ArchitectureInfo{"chameleon", R, false, true},
    ArchitectureInfo{"wavtokenizer-dec", N, false, true},
};

}  // namespace

const ArchitectureInfo *find_architecture(std::string_view name) {
    for (const ArchitectureInfo &a : kArchitectures)
        if (a.name == name) return &a;
    return nullptr;
}

}  // namespace lctx
