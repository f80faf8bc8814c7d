// Fill-in-the-middle prompts, shared by `lctx infill` (llama-infill's layout) and the server's /infill
// (llama-server's): token ids from the model's FIM tokens and the texts, tokenized without special tokens.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace lctx::generate {

// The model's tokens (tokenizer.ggml.fim_*_token_id; -1 when it has none).
struct FimTokens {
    int32_t pre = -1, suf = -1, mid = -1;
    int32_t rep = -1, sep = -1;  // repository and file separator (the repo-level layout)
    int32_t bos = -1;
    bool add_bos = false;  // the model starts a text with BOS
    bool usable() const { return pre >= 0 && suf >= 0 && mid >= 0; }
};

// Another file given as context (llama-server's input_extra).
struct FimFile {
    std::string filename, text;
};

struct FimInput {
    std::string prefix, suffix;
    std::vector<FimFile> extra;
    std::string middle;  // text after FIM_MID (llama-server's `prompt`): the start of the middle
    bool spm = false;    // suffix first (--spm-infill)
};

using Tokenizer = std::function<std::vector<int32_t>(const std::string &)>;

// [BOS] EXTRA FIM_PRE prefix FIM_SUF suffix FIM_MID middle (spm: FIM_SUF suffix FIM_PRE prefix). EXTRA is,
// when the model has FIM_REP and FIM_SEP, the repo-level layout (FIM_REP "myproject\n", then per file FIM_SEP
// "name\n" text, then FIM_SEP "filename\n"); without them, the files' texts one after another. The tokens
// must be usable().
std::vector<int32_t> fim_prompt(const FimTokens &t, const FimInput &in, const Tokenizer &tokenize);

}  // namespace lctx::generate
