// Fuzzes model loading from a file (GGUF reader, hyper-parameters, vocabulary, weight binding): any bytes
// either load or are refused with lctx::Error. A model that loads is then run for two tokens, so that
// hyper-parameters the loader accepted are also safe to compute with.
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "context/context.h"
#include "fuzz_util.h"
#include "model/model.h"
#include "util/error.h"
#include "vocab/vocab.h"

using namespace lctx;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static fuzz::ScratchFile file("model");
    static const bool quiet = (fuzz::quiet_log(), true);
    (void)quiet;
    const std::string &path = file.write(data, size);

    std::unique_ptr<Model> model;
    try {
        model = Model::load(path);
    } catch (const Error &) {
        return 0;
    }
    const HParams &hp = model->hparams();
    if (hp.n_vocab == 0 || model->weights().layers.size() != hp.n_layer) {
        std::fprintf(stderr, "fuzz_model_load: loaded a model with n_vocab %u and %zu of %u layers\n",
                     hp.n_vocab, model->weights().layers.size(), hp.n_layer);
        std::abort();
    }
    (void)model->description();

    ContextParams cp;
    cp.n_ctx = 16;
    cp.n_batch = 16;
    cp.n_ubatch = 16;
    try {
        Context ctx(*model, cp);
        const int32_t tokens[2] = {0, static_cast<int32_t>(hp.n_vocab - 1)};
        Batch b;
        b.n_tokens = 2;
        b.token = tokens;
        if (ctx.decode(b) == DecodeStatus::Ok) {
            const float *logits = ctx.logits_ith(-1);
            if (!logits) {
                std::fprintf(stderr, "fuzz_model_load: decode succeeded without logits\n");
                std::abort();
            }
            volatile float sink = logits[hp.n_vocab - 1];  // the whole row must be addressable
            (void)sink;
        }
    } catch (const Error &) {
        // A context the model cannot have (e.g. an unsupported head size) is refused: fine.
    }
    return 0;
}
