#include <gtest/gtest.h>

#include "chat/chat_format.h"

namespace lctx::chat_format_test {
namespace {

const std::vector<ChatMessage> kConv = {{"system", "Be brief."}, {"user", "Hello!"}};

TEST(ChatFormat, RecognizesTemplatesByTheirMarkers) {
    EXPECT_EQ(chat_format_detect("{% for m in messages %}<|im_start|>{{ m.role }}"), ChatFormat::ChatML);
    EXPECT_EQ(chat_format_detect("<|start_header_id|>{{ role }}<|end_header_id|>"), ChatFormat::Llama3);
    EXPECT_EQ(chat_format_detect("<start_of_turn>user"), ChatFormat::Gemma);
    EXPECT_EQ(chat_format_detect("{{ '<|user|>' }}{{ '<|end|>' }}{{ '<|assistant|>' }}"), ChatFormat::Phi3);
    EXPECT_EQ(chat_format_detect("[INST] {{ m }} [/INST]"), ChatFormat::Llama2);
    EXPECT_EQ(chat_format_detect("chatml"), ChatFormat::ChatML);
    EXPECT_EQ(chat_format_detect(""), ChatFormat::Raw);
}

TEST(ChatFormat, ChatMLRendering) {
    EXPECT_EQ(chat_format_apply(ChatFormat::ChatML, kConv, true),
              "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHello!<|im_end|>\n<|im_start|>assistant\n");
}

TEST(ChatFormat, Llama3Rendering) {
    EXPECT_EQ(chat_format_apply(ChatFormat::Llama3, {{"user", "Hi"}}, true),
              "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n");
}

TEST(ChatFormat, GemmaFoldsTheSystemPromptIntoTheUserTurn) {
    EXPECT_EQ(chat_format_apply(ChatFormat::Gemma, kConv, true),
              "<start_of_turn>user\nBe brief.\n\nHello!<end_of_turn>\n<start_of_turn>model\n");
}

TEST(ChatFormat, RenderingIsAPrefixAsTheConversationGrows) {
    // lctx chat decodes only the new suffix of each rendering, so earlier renderings must be prefixes.
    for (ChatFormat f : {ChatFormat::ChatML, ChatFormat::Llama3, ChatFormat::Phi3, ChatFormat::Gemma,
                         ChatFormat::Zephyr, ChatFormat::Llama2, ChatFormat::Raw}) {
        std::vector<ChatMessage> m = kConv;
        m.push_back({"assistant", "Hi."});
        const std::string before = chat_format_apply(f, m, false);
        m.push_back({"user", "More?"});
        const std::string after = chat_format_apply(f, m, true);
        EXPECT_EQ(after.rfind(before, 0), 0u) << chat_format_name(f);
    }
}

}  // namespace
}  // namespace lctx::chat_format_test
