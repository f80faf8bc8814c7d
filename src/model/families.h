// The model families lctx knows, in one table: for each, how its tensors bind (bind_<family>) and how one
// micro-batch runs through it (forward_<family>), both in the family's own file (llama.cpp, qwen2.cpp, ...).
// Adding a family: an Arch value and its hyper-parameters (hparams.cpp), its file with the two functions,
// and its row in families.cpp. A row without functions names a family whose forward pass is not written yet:
// its files are refused by name.
#pragma once
#include <string>
#include <string_view>

#include "kernels/threadpool.h"
#include "model/forward.h"
#include "model/hparams.h"

namespace lctx {

class WeightBinder;
struct ModelWeights;

// Declares the family's tensors (required or optional, with their shapes) into w; throws lctx::Error naming
// a missing or mis-shaped tensor.
using BindFn = void (*)(WeightBinder &b, const HParams &hp, ModelWeights &w);
// Runs one micro-batch; returns false when aborted through the batch's abort_cb.
using ForwardFn = bool (*)(const Model &model, const KvView &kv, const ForwardBatch &batch, ForwardScratch &s,
                           kernels::ThreadPool &pool);

struct Family {
    Arch arch;
    std::string_view name;  // general.architecture
    BindFn bind;            // null (with forward) until the family's forward pass exists
    ForwardFn forward;
    // The encoder pass llama_encode runs (every token's final hidden state into ForwardBatch::hidden): the
    // same function as forward for encoder-only families, the encoder stack for encoder-decoder ones, null
    // for decoder-only families.
    ForwardFn encode;
    bool runs() const { return bind && forward; }
};

// Null when lctx has no family of that name or Arch (Arch::Other).
const Family *find_family(std::string_view name);
const Family *find_family(Arch arch);
// "llama, qwen2, ...": the families that run, for error messages.
std::string running_family_names();

void bind_llama(WeightBinder &b, const HParams &hp, ModelWeights &w);
bool forward_llama(const Model &model, const KvView &kv, const ForwardBatch &batch, ForwardScratch &s,
                   kernels::ThreadPool &pool);

void bind_qwen2(WeightBinder &b, const HParams &hp, ModelWeights &w);  // runs forward_llama

void bind_phi3(WeightBinder &b, const HParams &hp, ModelWeights &w);
bool forward_phi3(const Model &model, const KvView &kv, const ForwardBatch &batch, ForwardScratch &s,
                  kernels::ThreadPool &pool);

void bind_gemma2(WeightBinder &b, const HParams &hp, ModelWeights &w);
bool forward_gemma2(const Model &model, const KvView &kv, const ForwardBatch &batch, ForwardScratch &s,
                    kernels::ThreadPool &pool);

void bind_bloom(WeightBinder &b, const HParams &hp, ModelWeights &w);
bool forward_bloom(const Model &model, const KvView &kv, const ForwardBatch &batch, ForwardScratch &s,
                   kernels::ThreadPool &pool);

void bind_bert(WeightBinder &b, const HParams &hp, ModelWeights &w);
void bind_nomic_bert(WeightBinder &b, const HParams &hp, ModelWeights &w);  // runs forward_bert
bool forward_bert(const Model &model, const KvView &kv, const ForwardBatch &batch, ForwardScratch &s,
                  kernels::ThreadPool &pool);

// t5: forward runs the decoder (over the context's cache, with the batch's encoder output), encode the
// encoder.
void bind_t5(WeightBinder &b, const HParams &hp, ModelWeights &w);
bool forward_t5_encoder(const Model &model, const KvView &kv, const ForwardBatch &batch, ForwardScratch &s,
                        kernels::ThreadPool &pool);
bool forward_t5_decoder(const Model &model, const KvView &kv, const ForwardBatch &batch, ForwardScratch &s,
                        kernels::ThreadPool &pool);

void bind_mamba(WeightBinder &b, const HParams &hp, ModelWeights &w);
bool forward_mamba(const Model &model, const KvView &kv, const ForwardBatch &batch, ForwardScratch &s,
                   kernels::ThreadPool &pool);

}  // namespace lctx
