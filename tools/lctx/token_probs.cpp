#include "tools/lctx/token_probs.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "generate/tokens.h"

namespace lctx::cli {

void add_n_probs_option(CLI::App &app, int32_t &n_probs) {
    app.add_option(
        "--n-probs", n_probs,
        "with --json: the N most likely tokens before each generated one, with their probabilities "
        "(the softmax of the model's logits, before sampling)");
}

std::string check_n_probs(int32_t n_probs, bool json) {
    if (n_probs < 0 || n_probs > 1000)
        return "--n-probs: " + std::to_string(n_probs) + " is out of range (0 to 1000)";
    if (n_probs > 0 && !json) return "--n-probs: the probabilities come with --json";
    return "";
}

nlohmann::json top_probs(const float *logits, int32_t n_vocab, int32_t n,
                         const std::function<std::string(int32_t)> &piece) {
    float mx = -INFINITY;
    for (int32_t i = 0; i < n_vocab; ++i) mx = std::max(mx, logits[i]);
    double sum = 0;
    for (int32_t i = 0; i < n_vocab; ++i) sum += std::exp(static_cast<double>(logits[i]) - mx);
    std::vector<int32_t> order(static_cast<size_t>(n_vocab));
    for (int32_t i = 0; i < n_vocab; ++i) order[static_cast<size_t>(i)] = i;
    const size_t k = std::min<size_t>(static_cast<size_t>(n), order.size());
    std::partial_sort(
        order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k), order.end(),
        [&](int32_t a, int32_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); });
    nlohmann::json out = nlohmann::json::array();
    for (size_t i = 0; i < k; ++i) {
        const int32_t id = order[i];
        out.push_back({{"id", id},
                       {"token", piece(id)},
                       {"prob", std::exp(static_cast<double>(logits[id]) - mx) / sum}});
    }
    return out;
}

nlohmann::json top_probs(const float *logits, int32_t n_vocab, int32_t n, const llama_vocab *vocab) {
    return top_probs(logits, n_vocab, n,
                     [vocab](int32_t id) { return generate::token_piece(vocab, id, true); });
}

}  // namespace lctx::cli
