// Fuzzes the parsers of the server's other request bodies (src/server/request.cpp): /v1/embeddings,
// /v1/rerank, /tokenize, /detokenize and the /slots/ID save and restore file names. (/v1/completions,
// /v1/chat/completions, /apply-template and the render endpoints parse theirs with the generation parsers,
// which fuzz_server_request drives; GET /slots reads no body.) Any bytes either parse into a request that
// keeps the promises below or are refused with ApiError (a 4xx); nothing else may escape, crash or read out
// of bounds. The first byte picks the endpoint.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "server/request.h"

namespace {

constexpr int32_t kVocab = 512;

void check_ids(const std::vector<int32_t> &ids) {
    for (int32_t t : ids)
        if (t < 0 || t >= kVocab) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    using namespace lctx::server;
    if (size == 0) return 0;
    const int which = data[0] % 5;
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
        }
    } catch (const ApiError &e) {
        if (e.status < 400 || e.status > 499) std::abort();
    }
    return 0;
}
