// Fuzzes the state loaders of the C API: llama_state_set_data, llama_state_seq_set_data,
// llama_state_load_file and llama_state_seq_load_file, on a context of models/stories260K.gguf that holds
// two sequences. A refused load must leave the context byte-for-byte as it was; an accepted one must leave
// a context that can decode.
// Input: byte 0 % 4 picks the loader; byte 1 gives the destination sequence ((b % 4) - 1: -1, 0, 1 or 2,
// of which -1 and 2 are invalid) and the token capacity of the file loaders (b >> 3); the rest is the state.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "fuzz_util.h"
#include "llama.h"

namespace {

[[noreturn]] void fail(const char *what) {
    std::fprintf(stderr, "fuzz_state: %s\n", what);
    std::abort();
}

std::vector<uint8_t> state_of(llama_context *ctx) {
    std::vector<uint8_t> s(llama_state_get_size(ctx));
    if (s.empty() || llama_state_get_data(ctx, s.data(), s.size()) != s.size()) fail("cannot read the state");
    return s;
}

bool decode(llama_context *ctx, std::vector<llama_token> tokens, llama_pos pos0, llama_seq_id seq) {
    llama_batch b = llama_batch_init(static_cast<int32_t>(tokens.size()), 0, 1);
    for (size_t i = 0; i < tokens.size(); ++i) {
        b.token[i] = tokens[i];
        b.pos[i] = pos0 + static_cast<llama_pos>(i);
        b.n_seq_id[i] = 1;
        b.seq_id[i][0] = seq;
        b.logits[i] = i + 1 == tokens.size();
    }
    b.n_tokens = static_cast<int32_t>(tokens.size());
    const int32_t rc = llama_decode(ctx, b);
    llama_batch_free(b);
    return rc == 0;
}

struct Fixture {
    llama_model *model = nullptr;
    llama_context *ctx = nullptr;
    std::vector<uint8_t> base;  // the state every input starts from

    Fixture() {
        llama_log_set([](enum ggml_log_level, const char *, void *) {}, nullptr);
        lctx::fuzz::quiet_log();
        const std::string path = std::string(LCTX_MODELS_DIR) + "/stories260K.gguf";
        model = llama_model_load_from_file(path.c_str(), llama_model_default_params());
        if (!model) fail("cannot load the model");
        // The settings of fixtures/state (so its files are valid seeds), with a second sequence.
        llama_context_params p = llama_context_default_params();
        p.n_ctx = 256;
        p.n_batch = 64;
        p.n_ubatch = 8;
        p.n_seq_max = 2;
        p.n_threads = 1;
        p.n_threads_batch = 1;
        ctx = llama_init_from_model(model, p);
        if (!ctx) fail("cannot create the context");
        if (!decode(ctx, {1, 403, 407, 261, 378, 432}, 0, 0) || !decode(ctx, {1, 298, 315}, 0, 1))
            fail("cannot decode the starting prompt");
        base = state_of(ctx);
    }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static Fixture fx;
    static lctx::fuzz::ScratchFile file("state");
    if (size < 2) return 0;
    const int mode = data[0] % 4;
    const llama_seq_id seq = static_cast<llama_seq_id>(data[1] % 4) - 1;
    const size_t capacity = data[1] >> 3;
    const uint8_t *payload = data + 2;
    const size_t n = size - 2;

    llama_context *ctx = fx.ctx;
    const std::vector<uint8_t> before = state_of(ctx);
    std::vector<llama_token> tokens(32, -1);
    size_t n_tokens = 0;
    bool ok = false;
    switch (mode) {
        case 0:
            ok = llama_state_set_data(ctx, payload, n) != 0;
            break;
        case 1:
            ok = llama_state_seq_set_data(ctx, payload, n, seq) != 0;
            break;
        case 2:
            ok = llama_state_load_file(ctx, file.write(payload, n).c_str(), tokens.data(), capacity,
                                       &n_tokens);
            break;
        default:
            ok = llama_state_seq_load_file(ctx, file.write(payload, n).c_str(), seq, tokens.data(), capacity,
                                           &n_tokens) != 0;
            break;
    }
    if (!ok) {
        if (state_of(ctx) != before) fail("a refused load changed the context");
        return 0;
    }
    if (mode >= 2 && n_tokens > capacity) fail("more tokens than the capacity");
    // The restored context must stay usable: decode one more token on sequence 0 (default position).
    llama_token t = 1;
    (void)llama_decode(ctx, llama_batch_get_one(&t, 1));
    (void)state_of(ctx);
    if (llama_state_set_data(ctx, fx.base.data(), fx.base.size()) != fx.base.size())
        fail("cannot restore the starting state");
    return 0;
}
