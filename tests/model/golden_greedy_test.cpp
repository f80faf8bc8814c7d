// Greedy continuations of the real stories260K model against llama.cpp's (fixtures/golden/FORMAT.md):
// prompt tokens from our tokenizer, then token-for-token equality. A divergence is allowed only at a
// step whose recorded top-1/top-2 gap is below 0.05 (where another summation order may fork).
#include <gtest/gtest.h>

#include "golden_runner.h"
#include "vocab/vocab.h"

namespace lctx::golden_greedy_test {
namespace {

constexpr float kForkGap = 0.05f;  // FORMAT.md: "Small gaps (<0.05) are where an engine ... may fork"

class GoldenGreedy : public ::testing::TestWithParam<const char *> {};

TEST_P(GoldenGreedy, SameTokensAsLlamaCpp) {
    const std::string dir = testing::fixtures_dir() + "/golden/";
    const nlohmann::json c = testing::read_json(dir + "cases/" + GetParam() + ".json");
    auto model = Model::load(dir + c["model"].get<std::string>());
    for (const nlohmann::json &step : c["steps"]) {
        ASSERT_EQ(step["op"], "greedy");
        const std::vector<int32_t> want_prompt = step["prompt_tokens"];
        const std::vector<int32_t> want = step["generated_tokens"];
        const std::vector<float> gaps = step["top1_top2_gap"];

        const std::vector<int32_t> prompt = model->vocab().tokenize(step["prompt"].get<std::string>(), true, false);
        EXPECT_EQ(prompt, want_prompt) << "tokenizer differs on the prompt";

        ContextParams p = testing::context_params(c);
        for (int n_threads : {1, 2}) {
            p.n_threads = p.n_threads_batch = n_threads;
            Context ctx(*model, p);
            const std::vector<int32_t> got = testing::run_greedy(
                *model, ctx, want_prompt, step.value("n_predict", 48),
                [](const Model &m, int32_t t) { return m.vocab().is_eog(t); });
            size_t i = 0;
            while (i < got.size() && i < want.size() && got[i] == want[i]) ++i;
            if (i < want.size()) {
                ASSERT_LT(i, gaps.size());
                EXPECT_LT(gaps[i], kForkGap) << "diverged at step " << i << " (gap " << gaps[i] << ") with "
                                             << n_threads << " threads: got " << (i < got.size() ? got[i] : -1)
                                             << ", want " << want[i];
            }
            // The text of the generated tokens, piece by piece, is llama.cpp's text.
            if (i == want.size()) {
                std::string text;
                for (int32_t t : got) text += model->vocab().token_to_piece(t, false);
                EXPECT_EQ(text, step["generated_text"].get<std::string>());
            }
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Stories, GoldenGreedy,
                         ::testing::Values("stories_greedy_0", "stories_greedy_1", "stories_greedy_2"));

}  // namespace
}  // namespace lctx::golden_greedy_test
