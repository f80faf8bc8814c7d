// Candidate arrays: the data every sampler reads and rewrites. The two structs are layout-identical to
// llama.h's llama_token_data / llama_token_data_array, so the C API can reinterpret_cast between them
// (the static_asserts below pin the x86-64 layout).
#pragma once
#include <cstddef>
#include <cstdint>

namespace lctx {

using Token = int32_t;  // llama_token

// LLAMA_DEFAULT_SEED: a seed argument with this value means "draw a random seed".
constexpr uint32_t kDefaultSeed = 0xFFFFFFFFu;

struct TokenData {
    Token id;     // token id
    float logit;  // unnormalised log-odds
    float p;      // probability; valid only after a sampler computed softmax
};

struct TokenDataArray {
    TokenData *data;  // [size]; samplers may shrink size and may also advance this pointer (XTC)
    size_t size;
    int64_t selected;  // index into data (not a token id) of the chosen candidate; -1 when none
    bool sorted;       // true when data is known to be sorted by descending logit
};

static_assert(sizeof(TokenData) == 12);
static_assert(offsetof(TokenData, id) == 0 && offsetof(TokenData, logit) == 4 && offsetof(TokenData, p) == 8);
static_assert(sizeof(TokenDataArray) == 32);
static_assert(offsetof(TokenDataArray, data) == 0 && offsetof(TokenDataArray, size) == 8 &&
              offsetof(TokenDataArray, selected) == 16 && offsetof(TokenDataArray, sorted) == 24);

}  // namespace lctx
