// Fuzzes the server's request-body parser and validator (src/server/request.cpp): any bytes either parse
// into a request or are refused with ApiError (a 4xx); nothing else may escape, crash or read out of
// bounds. The first byte picks the endpoint (completions or chat).
#include <cstdint>
#include <cstdlib>
#include <string>

#include "server/request.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0) return 0;
    const bool chat = data[0] & 1;
    const std::string body(reinterpret_cast<const char *>(data + 1), size - 1);
    lctx::server::RequestLimits lim;
    lim.n_vocab = 512;
    try {
        const nlohmann::json j = lctx::server::parse_body(body);
        const lctx::server::GenRequest r =
            chat ? lctx::server::parse_chat_request(j, lim) : lctx::server::parse_completion_request(j, lim);
        // What the validator promises the scheduler.
        if (r.n < 1 || r.n > lim.max_n || r.max_tokens == 0 || r.max_tokens < -1 ||
            r.max_tokens > lim.max_tokens)
            std::abort();
        for (int32_t t : r.prompt_tokens)
            if (t < 0 || t >= lim.n_vocab) std::abort();
        // Completions: one prompt at least (a list gives several), each piece text or a token id in range.
        if (!chat && (r.prompts.empty() || static_cast<int64_t>(r.prompts.size()) * r.n > lim.max_choices))
            std::abort();
        for (const lctx::server::PromptInput &p : r.prompts) {
            if (p.empty()) std::abort();
            for (const lctx::server::PromptPiece &x : p)
                if (x.is_token && (x.token < 0 || x.token >= lim.n_vocab)) std::abort();
        }
        for (const auto &[tok, bias] : r.sampling.logit_bias)
            if (tok < 0 || tok >= lim.n_vocab || !(bias >= -100.0f && bias <= 100.0f)) std::abort();
    } catch (const lctx::server::ApiError &e) {
        if (e.status < 400 || e.status > 499) std::abort();
    }
    return 0;
}
