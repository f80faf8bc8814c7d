#include "model/families.h"

#include <array>

#include "model/model.h"
#include "util/error.h"

namespace lctx {

namespace {

constexpr std::array kFamilies = {
    Family{Arch::Llama, "llama", bind_llama, forward_llama, nullptr},
    Family{Arch::Qwen2, "qwen2", bind_qwen2, forward_llama, nullptr},  // llama's layer
    Family{Arch::Phi3, "phi3", bind_phi3, forward_phi3, nullptr},
    Family{Arch::Gemma2, "gemma2", bind_gemma2, forward_gemma2, nullptr},
    Family{Arch::Bloom, "bloom", bind_bloom, forward_bloom, nullptr},
    Family{Arch::Bert, "bert", bind_bert, forward_bert, forward_bert},  // an encoder: encode and decode alike
    Family{Arch::NomicBert, "nomic-bert", bind_nomic_bert, forward_bert, forward_bert},  // bert's layer
    Family{Arch::T5, "t5", bind_t5, forward_t5_decoder, forward_t5_encoder},
    Family{Arch::Mamba, "mamba", bind_mamba, forward_mamba, nullptr},  // recurrent: one state per sequence
};

}  // namespace

const Family *find_family(std::string_view name) {
    for (const Family &f : kFamilies)
        if (f.name == name) return &f;
    return nullptr;
}

const Family *find_family(Arch arch) {
    for (const Family &f : kFamilies)
        if (f.arch == arch) return &f;
    return nullptr;
}

std::string running_family_names() {
    std::string names;
    for (const Family &f : kFamilies)
        if (f.runs()) names += (names.empty() ? "" : ", ") + std::string(f.name);
    return names;
}

bool forward(const Model &model, const KvView &kv, const ForwardBatch &batch, ForwardScratch &scratch,
             kernels::ThreadPool &pool) {
    const Family *f = find_family(model.hparams().arch);
    if (!f || !f->runs()) throw Error("no forward pass for architecture " + model.hparams().arch_name);
    return f->forward(model, kv, batch, scratch, pool);
}

}  // namespace lctx
