// Fuzzes LoRA adapter loading (src/model/lora_adapter.h) against the fixtures' llama base model: any bytes
// are either refused with lctx::Error (the GGUF reader's, or the adapter's checks of architecture, pairs,
// names, types and shapes) or give an adapter that is then applied to a two-token decode, so that every pair
// the loader accepted is also safe to compute with (its products stay inside the views it made). The first
// byte picks the scale; the rest is the file.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "context/context.h"
#include "fuzz_util.h"
#include "model/lora_adapter.h"
#include "model/model.h"
#include "util/error.h"

using namespace lctx;

namespace {

void check(bool ok, const char *what) {
    if (!ok) {
        std::fprintf(stderr, "fuzz_lora: invariant broken: %s\n", what);
        std::abort();
    }
}

const Model &base() {
    static const std::unique_ptr<Model> m = Model::load(LCTX_FIXTURES_DIR "/golden/models/llama-F16.gguf");
    return *m;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static fuzz::ScratchFile file("lora");
    static const bool quiet = (fuzz::quiet_log(), true);
    (void)quiet;
    if (size < 1) return 0;
    const float scales[4] = {1.0f, -0.5f, 2.0f, 0.25f};
    const float scale = scales[data[0] % 4];
    const std::string &path = file.write(data + 1, size - 1);

    std::shared_ptr<const LoraAdapter> adapter;
    try {
        adapter = LoraAdapter::load(base(), path);
    } catch (const Error &) {
        return 0;
    }
    check(&adapter->base() == &base(), "adapter bound to another model");
    // (An adapter with no pairs loads, as in b4748, and changes nothing.)

    ContextParams cp;
    cp.n_ctx = 16;
    cp.n_batch = 16;
    cp.n_ubatch = 16;
    Context ctx(base(), cp);
    ctx.lora().set(adapter, scale);
    const int32_t n_vocab = static_cast<int32_t>(base().hparams().n_vocab);
    const int32_t tokens[2] = {1, n_vocab - 1};
    Batch b;
    b.n_tokens = 2;
    b.token = tokens;
    check(ctx.decode(b) == DecodeStatus::Ok, "a decode with an accepted adapter failed");
    const float *logits = ctx.logits_ith(-1);
    check(logits != nullptr, "decode succeeded without logits");
    volatile float sink = logits[n_vocab - 1];  // the whole row must be addressable
    (void)sink;
    return 0;
}
