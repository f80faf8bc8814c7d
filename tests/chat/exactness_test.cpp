// Where the chat layer's results were checked against llama.cpp b4748 (and, for gpt-oss, newer llama.cpp)
// program by program: template detection order, several system messages in the formats that fold the
// system text into the next user turn, and gpt-oss's end of a final assistant turn.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "chat/builtin_templates.h"
#include "chat/chat_template.h"
#include "llama.h"

namespace lctx::chat::exactness_test {
namespace {

const std::string kDir = std::string(LCTX_FIXTURES_DIR);

std::string slurp(const std::string &path) {
    std::ifstream f(path, std::ios::binary);
    EXPECT_TRUE(f.good()) << path;
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
}

std::string apply(const char *tmpl, const std::vector<llama_chat_message> &msgs, bool add_ass) {
    const int32_t n = llama_chat_apply_template(tmpl, msgs.data(), msgs.size(), add_ass, nullptr, 0);
    if (n < 0) return "<refused>";
    std::string buf(static_cast<size_t>(n) + 1, '\0');
    EXPECT_EQ(llama_chat_apply_template(tmpl, msgs.data(), msgs.size(), add_ass, buf.data(), n + 1), n);
    buf.resize(static_cast<size_t>(n));
    return buf;
}

// b4748 tries glmedge (<|user|> and <|assistant|>) before chatglm4 ([gMASK]<sop>): the GLM-4.6 and
// GLM-4.7-Flash templates hold all three and come out as glmedge.
TEST(ChatExactness, GlmTemplatesWithUserAndAssistantMarkersAreGlmedge) {
    const std::vector<llama_chat_message> msgs = {
        {"system", "Be brief."}, {"user", "Hello"}, {"assistant", "Hi"}, {"user", "Bye"}};
    for (const char *file : {"GLM-4.6.jinja", "GLM-4.7-Flash.jinja"}) {
        const std::string tmpl = slurp(kDir + "/templates/" + file);
        EXPECT_EQ(builtin_template_detect(tmpl), "glmedge") << file;
        for (bool add : {true, false})
            EXPECT_EQ(apply(tmpl.c_str(), msgs, add), apply("glmedge", msgs, add)) << file << " add " << add;
    }
    // The chatglm4 marker alone (b4748's own glm-4-9b-chat template) is still chatglm4.
    EXPECT_EQ(
        builtin_template_detect("[gMASK]<sop>{% for m in messages %}<|{{ m['role'] }}|>\n{{ m['content'] }}"
                                "{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}"),
        "chatglm4");
}

// gemma and orion fold the system text into the next user turn; of several system messages before it,
// b4748 keeps the last one.
TEST(ChatExactness, GemmaAndOrionKeepTheLastOfSeveralSystemMessages) {
    const std::vector<llama_chat_message> msgs = {{"system", " First. "},
                                                  {"system", " Second. "},
                                                  {"user", "Hi"},
                                                  {"assistant", "Hello"},
                                                  {"user", "Bye"}};
    EXPECT_EQ(apply("gemma", msgs, true),
              "<start_of_turn>user\nSecond.\n\nHi<end_of_turn>\n<start_of_turn>model\nHello<end_of_turn>\n"
              "<start_of_turn>user\nBye<end_of_turn>\n<start_of_turn>model\n");
    EXPECT_EQ(apply("orion", msgs, true),
              "Human:  Second. \n\nHi\n\nAssistant: </s>Hello</s>Human: Bye\n\nAssistant: </s>");
    // A system message after the user turn it would open waits for the next one.
    const std::vector<llama_chat_message> late = {
        {"user", "Hi"}, {"system", "A"}, {"system", "B"}, {"user", "Yo"}};
    EXPECT_EQ(apply("orion", late, false), "Human: Hi\n\nAssistant: </s>Human: B\n\nYo\n\nAssistant: </s>");
}

// gpt-oss ends a final assistant turn with <|return|> (the end of generation), which must never be model
// input: the prompt ends the turn with <|end|>, as newer llama.cpp's prompt does.
TEST(ChatExactness, GptOssFinalAssistantTurnEndsWithEnd) {
    const std::string tmpl = slurp(kDir + "/templates/openai-gpt-oss-120b.jinja");
    const nlohmann::ordered_json msgs = {{{"role", "user"}, {"content", "Hello!"}},
                                         {{"role", "assistant"}, {"content", "Hi there!"}}};
    JinjaChatOptions o;
    o.add_generation_prompt = false;
    const std::string prompt = jinja_chat_render(tmpl, msgs, o);
    const std::string tail = "<|start|>assistant<|channel|>final<|message|>Hi there!<|end|>";
    ASSERT_GE(prompt.size(), tail.size()) << prompt;
    EXPECT_EQ(prompt.substr(prompt.size() - tail.size()), tail) << prompt;
    EXPECT_EQ(prompt.find("<|return|>"), std::string::npos) << prompt;
    // The same through the chat layer's entry point.
    ChatRenderOptions co;
    co.add_generation_prompt = false;
    const ChatRenderResult r = chat_render(tmpl, {{"user", "Hello!"}, {"assistant", "Hi there!"}}, co);
    EXPECT_EQ(r.format, "jinja");
    EXPECT_EQ(r.prompt, prompt);
    // A plain render (no pipeline) keeps what the template wrote.
    o.pipeline = false;
    EXPECT_NE(jinja_chat_render(tmpl, msgs, o).find("<|return|>"), std::string::npos);
}

}  // namespace
}  // namespace lctx::chat::exactness_test
