// --n-probs N, shared by run and chat: with --json, the N most likely tokens before each sampled one.
#pragma once
#include <CLI/CLI.hpp>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "llama.h"

namespace lctx::cli {

void add_n_probs_option(CLI::App &app, int32_t &n_probs);
// The range (0 to 1000) and that the probabilities come with --json: "" or the problem in one line.
std::string check_n_probs(int32_t n_probs, bool json);
// The n most likely tokens of the softmax over the logits, [{id, token, prob}], most likely first (ties by
// id).
nlohmann::json top_probs(const float *logits, int32_t n_vocab, int32_t n, const llama_vocab *vocab);
// The same with each token's text (special tokens rendered) from `piece`.
nlohmann::json top_probs(const float *logits, int32_t n_vocab, int32_t n,
                         const std::function<std::string(int32_t)> &piece);

}  // namespace lctx::cli
