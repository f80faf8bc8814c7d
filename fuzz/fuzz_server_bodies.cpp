// Fuzzes the parsers of the server's other request bodies (src/server/request.cpp): /v1/embeddings,
// /v1/rerank, /tokenize, /detokenize, the /slots/ID save and restore file names, llama-server's /completion
// and /infill, Anthropic's /v1/messages and OpenAI's /v1/responses (src/server/api_requests.cpp).
// (/v1/completions, /v1/chat/completions, /apply-template and the render endpoints parse theirs with the
// generation parsers, which fuzz_server_request drives; GET /slots reads no body.) Any bytes either parse
// into a request that keeps the promises below or are refused with ApiError (a 4xx); nothing else may escape,
// crash or read out of bounds. The first byte picks the endpoint.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "server/api_requests.h"
#include "server/request.h"

namespace {

constexpr int32_t kVocab = 512;

void check_ids(const std::vector<int32_t> &ids) {
    for (int32_t t : ids)
        if (t < 0 || t >= kVocab) std::abort();
}

// What a parsed generation request promises the server (any endpoint).
void check_generation(const lctx::server::GenRequest &r, const lctx::server::RequestLimits &lim) {
    using namespace lctx::server;
    if (r.n < 1 || r.n > lim.max_n || r.max_tokens == 0 || r.max_tokens > lim.max_tokens) std::abort();
    if (r.id_slot < -1 || r.id_slot >= lim.n_slots || r.n_probs < 0 || r.n_probs > 100) std::abort();
    if (static_cast<int64_t>(r.prompts.size()) * r.n > lim.max_choices) std::abort();
    for (const PromptInput &p : r.prompts)
        for (const PromptPiece &x : p)
            if (x.is_token && (x.token < 0 || x.token >= kVocab)) std::abort();
    const lctx::generate::SamplingConfig &s = r.sampling.config;
    if (s.mirostat < 0 || s.mirostat > 2 || !(s.typical_p >= 0.0f && s.typical_p <= 1.0f) ||
        !(s.xtc_probability >= 0.0f && s.xtc_probability <= 1.0f) || s.dry_base < 1.0f ||
        s.dry_sequence_breakers.empty() || r.sampling.samplers.size() > 32)
        std::abort();
    for (const std::string &b : s.dry_sequence_breakers)
        if (b.empty()) std::abort();
    for (const std::string &n : r.sampling.samplers)
        if (n != "top_k" && n != "typ_p" && n != "top_p" && n != "min_p" && n != "xtc" &&
            n != "temperature" && n != "dry" && n != "penalties")
            std::abort();
    if (r.endpoint == Endpoint::Chat && r.messages.empty()) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    using namespace lctx::server;
    if (size == 0) return 0;
    const int which = data[0] % 10;
    RequestLimits lim;
    lim.n_vocab = kVocab;
    lim.n_slots = 4;
    lim.max_choices = 20;
    const std::string text(reinterpret_cast<const char *>(data + 1), size - 1);
    try {
        const nlohmann::json body = parse_body(text);
        switch (which) {
            case 0: {
                const EmbeddingRequest r = parse_embedding_request(body, kVocab);
                if (r.inputs.empty()) std::abort();
                for (const EmbeddingInput &in : r.inputs) {
                    if (in.is_tokens && in.tokens.empty()) std::abort();
                    check_ids(in.tokens);
                }
                break;
            }
            case 1: {
                const RerankRequest r = parse_rerank_request(body);
                if (r.documents.empty() || (r.top_n != -1 && r.top_n < 1)) std::abort();
                break;
            }
            case 2:
                (void)parse_tokenize_request(body);
                break;
            case 3:
                check_ids(parse_detokenize_request(body, kVocab));
                break;
            case 4: {
                // The name is joined to --slot-save-path: it must not leave that folder.
                const std::string name = parse_slot_filename(body);
                if (!valid_slot_filename(name) || name.find('/') != std::string::npos || name[0] == '.')
                    std::abort();
                break;
            }
            case 5:
            case 6:
                // /completion, /infill (with its own fields).
                check_generation(parse_native_completion_request(body, lim, which == 6), lim);
                if (which == 6) (void)parse_infill_input(body);
                break;
            case 7:
                check_generation(parse_completion_request(body, lim), lim);
                break;
            case 8:
                check_generation(parse_anthropic_request(body, lim), lim);
                break;
            case 9:
                check_generation(parse_responses_request(body, lim), lim);
                break;
        }
    } catch (const ApiError &e) {
        if (e.status < 400 || e.status > 499) std::abort();
    }
    return 0;
}
