// Fuzzes the tokenizers of the four vocabulary kinds with arbitrary bytes (invalid UTF-8, control-token
// spellings, long inputs) and the detokenizer with arbitrary ids.
// Input: byte 0 picks the vocabulary (% 4: SPM stories260K, BPE gpt-2, WPM bert-bge, UGM t5) and the flags
// (bit 2 add_special, bit 3 parse_special, bit 4 remove_special, bit 5 unparse_special, bit 6 also read
// the rest as int32 token ids); the rest is the text.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "fuzz_util.h"
#include "gguf/gguf.h"
#include "util/error.h"
#include "vocab/vocab.h"

using namespace lctx;

namespace {

struct Loaded {
    std::unique_ptr<gguf::File> file;
    std::unique_ptr<Vocab> vocab;
};

Loaded load(const std::string &path) {
    Loaded l;
    l.file = gguf::File::open(path);
    l.vocab = Vocab::load(*l.file);
    return l;
}

const Vocab &pick(uint8_t selector) {
    static Loaded vocabs[4] = {
        load(std::string(LCTX_MODELS_DIR) + "/stories260K.gguf"),
        load(std::string(LCTX_FIXTURES_DIR) + "/vocab/ggml-vocab-gpt-2.gguf"),
        load(std::string(LCTX_FIXTURES_DIR) + "/vocab/ggml-vocab-bert-bge.gguf"),
        load(std::string(LCTX_FIXTURES_DIR) + "/golden-t5/vocab/ggml-vocab-t5.gguf"),
    };
    return *vocabs[selector % 4].vocab;
}

[[noreturn]] void fail(const char *what, int64_t detail) {
    std::fprintf(stderr, "fuzz_tokenize: %s (%lld)\n", what, static_cast<long long>(detail));
    std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const bool quiet = (fuzz::quiet_log(), true);
    (void)quiet;
    if (size == 0) return 0;
    const uint8_t flags = data[0];
    const Vocab &vocab = pick(flags);
    const bool add_special = flags & 0x04, parse_special = flags & 0x08;
    const bool remove_special = flags & 0x10, unparse_special = flags & 0x20;
    const std::string_view text(reinterpret_cast<const char *>(data + 1), size - 1);

    const std::vector<int32_t> ids = vocab.tokenize(text, add_special, parse_special);
    if (text.empty() && !add_special && !ids.empty()) fail("empty text gave tokens", int64_t(ids.size()));
    for (int32_t id : ids) {
        if (id < 0 || id >= vocab.n_tokens()) fail("token id out of range", id);
        (void)vocab.token_to_piece(id, true);
        (void)vocab.token_to_piece(id, false, 1);
    }
    size_t raw = 0;
    const std::string back = vocab.detokenize(ids, remove_special, unparse_special, &raw);
    if (raw < back.size()) fail("raw_size smaller than the cleaned text", int64_t(raw));

    if (flags & 0x40) {
        // The same bytes as token ids, most of them out of range: refused with lctx::Error only.
        std::vector<int32_t> any((size - 1) / 4);
        if (!any.empty()) std::memcpy(any.data(), data + 1, any.size() * 4);
        for (int32_t id : any) {
            try {
                (void)vocab.token_to_piece(id, unparse_special, id & 3);
            } catch (const Error &) {
            }
        }
        try {
            (void)vocab.detokenize(any, remove_special, unparse_special);
        } catch (const Error &) {
        }
    }
    return 0;
}
