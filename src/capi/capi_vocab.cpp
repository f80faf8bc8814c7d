// C API: vocabulary getters, tokenization and detokenization with llama.h's buffer contract (a result
// that does not fit writes nothing and returns minus the size needed).
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "capi/capi_internal.h"

using lctx::capi::guard;
using lctx::capi::vocab_of;

namespace {

constexpr int32_t kInt32Max = std::numeric_limits<int32_t>::max();

int32_t clamp_len(size_t n) {
    return n > static_cast<size_t>(kInt32Max) ? kInt32Max : static_cast<int32_t>(n);
}

// Copies bytes into buf when they fit in `length`; returns the count, or -count when they do not.
int32_t copy_or_need(const std::string &s, char *buf, int32_t length) {
    const int32_t n = clamp_len(s.size());
    if (length < 0 || n > length) return -n;
    if (n) std::memcpy(buf, s.data(), static_cast<size_t>(n));
    return n;
}

}  // namespace

extern "C" {

enum llama_vocab_type llama_vocab_type(const struct llama_vocab *vocab) {
    LCTX_CAPI_REQUIRE(vocab, LLAMA_VOCAB_TYPE_NONE);
    return static_cast<enum llama_vocab_type>(vocab_of(vocab).type());
}

int32_t llama_vocab_n_tokens(const struct llama_vocab *vocab) {
    LCTX_CAPI_REQUIRE(vocab, 0);
    return vocab_of(vocab).n_tokens();
}
int32_t llama_n_vocab(const struct llama_vocab *vocab) {
    return llama_vocab_n_tokens(vocab);
}

const char *llama_vocab_get_text(const struct llama_vocab *vocab, llama_token token) {
    LCTX_CAPI_REQUIRE(vocab, nullptr);
    return guard(__func__, static_cast<const char *>(nullptr),
                 [&] { return vocab_of(vocab).token_text_cstr(token); });
}

float llama_vocab_get_score(const struct llama_vocab *vocab, llama_token token) {
    LCTX_CAPI_REQUIRE(vocab, 0.0f);
    return guard(__func__, 0.0f, [&] { return vocab_of(vocab).score(token); });
}

enum llama_token_attr llama_vocab_get_attr(const struct llama_vocab *vocab, llama_token token) {
    LCTX_CAPI_REQUIRE(vocab, LLAMA_TOKEN_ATTR_UNDEFINED);
    return guard(__func__, LLAMA_TOKEN_ATTR_UNDEFINED,
                 [&] { return static_cast<enum llama_token_attr>(vocab_of(vocab).token_attr(token)); });
}

bool llama_vocab_is_eog(const struct llama_vocab *vocab, llama_token token) {
    LCTX_CAPI_REQUIRE(vocab, false);
    return vocab_of(vocab).is_eog(token);  // false, silently, for ids outside the vocabulary
}

bool llama_vocab_is_control(const struct llama_vocab *vocab, llama_token token) {
    LCTX_CAPI_REQUIRE(vocab, false);
    return guard(__func__, false, [&] { return vocab_of(vocab).is_control(token); });
}

#define LCTX_VOCAB_GETTER(fn, expr)                   \
    llama_token fn(const struct llama_vocab *vocab) { \
        LCTX_CAPI_REQUIRE(vocab, LLAMA_TOKEN_NULL);   \
        return vocab_of(vocab).expr();                \
    }

LCTX_VOCAB_GETTER(llama_vocab_bos, bos)
LCTX_VOCAB_GETTER(llama_vocab_eos, eos)
LCTX_VOCAB_GETTER(llama_vocab_eot, eot)
LCTX_VOCAB_GETTER(llama_vocab_sep, sep)
LCTX_VOCAB_GETTER(llama_vocab_nl, nl)
LCTX_VOCAB_GETTER(llama_vocab_pad, pad)
LCTX_VOCAB_GETTER(llama_vocab_fim_pre, fim_pre)
LCTX_VOCAB_GETTER(llama_vocab_fim_suf, fim_suf)
LCTX_VOCAB_GETTER(llama_vocab_fim_mid, fim_mid)
LCTX_VOCAB_GETTER(llama_vocab_fim_pad, fim_pad)
LCTX_VOCAB_GETTER(llama_vocab_fim_rep, fim_rep)
LCTX_VOCAB_GETTER(llama_vocab_fim_sep, fim_sep)
LCTX_VOCAB_GETTER(llama_vocab_cls, bos)  // CLS and BOS are the same token
// Deprecated spellings.
LCTX_VOCAB_GETTER(llama_token_bos, bos)
LCTX_VOCAB_GETTER(llama_token_eos, eos)
LCTX_VOCAB_GETTER(llama_token_eot, eot)
LCTX_VOCAB_GETTER(llama_token_cls, bos)
LCTX_VOCAB_GETTER(llama_token_sep, sep)
LCTX_VOCAB_GETTER(llama_token_nl, nl)
LCTX_VOCAB_GETTER(llama_token_pad, pad)
LCTX_VOCAB_GETTER(llama_token_fim_pre, fim_pre)
LCTX_VOCAB_GETTER(llama_token_fim_suf, fim_suf)
LCTX_VOCAB_GETTER(llama_token_fim_mid, fim_mid)
LCTX_VOCAB_GETTER(llama_token_fim_pad, fim_pad)
LCTX_VOCAB_GETTER(llama_token_fim_rep, fim_rep)
LCTX_VOCAB_GETTER(llama_token_fim_sep, fim_sep)
#undef LCTX_VOCAB_GETTER

bool llama_vocab_get_add_bos(const struct llama_vocab *vocab) {
    LCTX_CAPI_REQUIRE(vocab, false);
    return vocab_of(vocab).add_bos();
}
bool llama_vocab_get_add_eos(const struct llama_vocab *vocab) {
    LCTX_CAPI_REQUIRE(vocab, false);
    return vocab_of(vocab).add_eos();
}

const char *llama_token_get_text(const struct llama_vocab *vocab, llama_token token) {
    return llama_vocab_get_text(vocab, token);
}
float llama_token_get_score(const struct llama_vocab *vocab, llama_token token) {
    return llama_vocab_get_score(vocab, token);
}
enum llama_token_attr llama_token_get_attr(const struct llama_vocab *vocab, llama_token token) {
    return llama_vocab_get_attr(vocab, token);
}
bool llama_token_is_eog(const struct llama_vocab *vocab, llama_token token) {
    return llama_vocab_is_eog(vocab, token);
}
bool llama_token_is_control(const struct llama_vocab *vocab, llama_token token) {
    return llama_vocab_is_control(vocab, token);
}
bool llama_add_bos_token(const struct llama_vocab *vocab) {
    return llama_vocab_get_add_bos(vocab);
}
bool llama_add_eos_token(const struct llama_vocab *vocab) {
    return llama_vocab_get_add_eos(vocab);
}

// ---- tokenization ----

int32_t llama_tokenize(const struct llama_vocab *vocab, const char *text, int32_t text_len,
                       llama_token *tokens, int32_t n_tokens_max, bool add_special, bool parse_special) {
    LCTX_CAPI_REQUIRE(vocab, std::numeric_limits<int32_t>::min());
    if (text_len < 0 || (!text && text_len > 0)) {
        LCTX_LOG_ERROR("%s: invalid text (text_len = %d)", __func__, text_len);
        return std::numeric_limits<int32_t>::min();
    }
    return guard(__func__, std::numeric_limits<int32_t>::min(), [&]() -> int32_t {
        const std::vector<int32_t> ids = vocab_of(vocab).tokenize(
            std::string_view(text ? text : "", static_cast<size_t>(text_len)), add_special, parse_special);
        if (ids.size() > static_cast<size_t>(kInt32Max)) throw lctx::Error("the text gives too many tokens");
        const int32_t n = static_cast<int32_t>(ids.size());
        if (n > n_tokens_max || (n > 0 && !tokens)) return -n;
        if (n) std::memcpy(tokens, ids.data(), ids.size() * sizeof(llama_token));
        return n;
    });
}

int32_t llama_token_to_piece(const struct llama_vocab *vocab, llama_token token, char *buf, int32_t length,
                             int32_t lstrip, bool special) {
    LCTX_CAPI_REQUIRE(vocab, 0);
    return guard(__func__, 0, [&]() -> int32_t {
        const std::string piece = vocab_of(vocab).token_to_piece(token, special, std::max(lstrip, 0));
        if (!buf && !piece.empty()) return -clamp_len(piece.size());
        return copy_or_need(piece, buf, length);
    });
}

int32_t llama_detokenize(const struct llama_vocab *vocab, const llama_token *tokens, int32_t n_tokens,
                         char *text, int32_t text_len_max, bool remove_special, bool unparse_special) {
    LCTX_CAPI_REQUIRE(vocab, 0);
    if (n_tokens < 0 || (!tokens && n_tokens > 0)) {
        LCTX_LOG_ERROR("%s: invalid tokens (n_tokens = %d)", __func__, n_tokens);
        return 0;
    }
    return guard(__func__, 0, [&]() -> int32_t {
        const std::vector<int32_t> ids(tokens, tokens + n_tokens);
        size_t raw = 0;
        const std::string s = vocab_of(vocab).detokenize(ids, remove_special, unparse_special, &raw);
        // As upstream: when the text before space clean-up does not fit, that length is what is asked for.
        if (raw > static_cast<size_t>(std::max(text_len_max, 0)) || (!text && !s.empty()))
            return -clamp_len(std::max(raw, s.size()));
        return copy_or_need(s, text, text_len_max);
    });
}

}  // extern "C"
