// generate/chat_turns.h: which template renders a chat (the front end's Jinja text, a built-in format by
// name, the model's own, the fallback of a model without one), a failed template reported with the format
// used instead, and rendered text tokenized with exactly one BOS.
#include "generate/chat_turns.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "chat/builtin_templates.h"
#include "generate/tokens.h"
#include "gguf_rewrite.h"

namespace chat_turns_test {
namespace {

using lctx::ChatFormat;
using lctx::ChatMessage;
using lctx::generate::ChatTemplateChoice;
using lctx::generate::ChatTurns;

const char *const kModelTemplate =
    "{{ bos_token }}{% for m in messages %}[{{ m.role }}] {{ m.content }}\n{% endfor %}"
    "{% if add_generation_prompt %}[assistant]{% endif %}";

// stories260K's vocabulary alone, with `chat_template` as its tokenizer.chat_template ("" for none).
class Model {
  public:
    explicit Model(const std::string &chat_template) {
        llama_log_set([](enum ggml_log_level, const char *, void *) {}, nullptr);
        const std::string src = std::string(LCTX_MODELS_DIR) + "/stories260K.gguf";
        path_ = src;
        if (!chat_template.empty()) {
            lctx::testing::Rewrite r;
            r.add = [&](lctx::gguf::Writer &w) { w.set_string("tokenizer.chat_template", chat_template); };
            path_ = lctx::testing::rewrite_gguf(src, r, "chat-turns");
            rewritten_ = true;
        }
        llama_model_params mp = llama_model_default_params();
        mp.vocab_only = true;
        model_ = llama_model_load_from_file(path_.c_str(), mp);
    }
    ~Model() {
        llama_model_free(model_);
        if (rewritten_) std::remove(path_.c_str());
    }
    Model(const Model &) = delete;
    Model &operator=(const Model &) = delete;
    const llama_model *get() const { return model_; }

  private:
    std::string path_;
    bool rewritten_ = false;
    llama_model *model_ = nullptr;
};

const std::vector<ChatMessage> kChat = {{"system", "Be brief."}, {"user", "Hi"}};

ChatTemplateChoice server_choice() {
    ChatTemplateChoice c;
    c.no_template = ChatFormat::ChatML;
    c.jinja_fallback = "chatml";
    return c;
}

TEST(GenerateChatTurns, TheModelsTemplateUnlessTheFrontEndChoseAnother) {
    const Model m(kModelTemplate);
    ASSERT_TRUE(m.get());
    const ChatTurns own(m.get(), {});
    EXPECT_EQ(own.jinja_template(), kModelTemplate);
    EXPECT_EQ(own.format(), "jinja");
    EXPECT_EQ(own.bos_text(), "<s>");
    EXPECT_EQ(own.eos_text(), "</s>");
    lctx::chat::ChatRenderResult r = own.render(kChat, true);
    EXPECT_EQ(r.prompt, "<s>[system] Be brief.\n[user] Hi\n[assistant]");
    EXPECT_EQ(r.format, "jinja");
    EXPECT_EQ(r.jinja_error, "");
    EXPECT_EQ(own.render(kChat, false).prompt, "<s>[system] Be brief.\n[user] Hi\n");

    // A built-in format by name: no Jinja template, the format's own rendering.
    ChatTemplateChoice named;
    named.format = "llama3";
    const ChatTurns builtin(m.get(), named);
    EXPECT_EQ(builtin.jinja_template(), "");
    EXPECT_EQ(builtin.format(), "llama3");
    std::string want;
    ASSERT_TRUE(lctx::chat::builtin_template_apply("llama3", kChat, true, want));
    r = builtin.render(kChat, true);
    EXPECT_EQ(r.prompt, want);
    EXPECT_EQ(r.format, "llama3");

    // raw by name, even over the model's template.
    named.format = "raw";
    const ChatTurns raw(m.get(), named);
    EXPECT_EQ(raw.format(), "raw");
    EXPECT_EQ(raw.render(kChat, true).prompt, lctx::chat_format_apply(ChatFormat::Raw, kChat, true));

    // A Jinja text given by the front end wins over the model's template and over a name.
    named.jinja = "{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}";
    const ChatTurns given(m.get(), named);
    EXPECT_EQ(given.jinja_template(), named.jinja);
    EXPECT_EQ(given.format(), "jinja");
    EXPECT_EQ(given.render(kChat, true).prompt, "<system>Be brief.<user>Hi");

    // An unknown name is refused.
    ChatTemplateChoice unknown;
    unknown.format = "no-such-format";
    EXPECT_THROW(ChatTurns(m.get(), unknown), std::invalid_argument);
    std::string b;
    EXPECT_FALSE(lctx::generate::chat_format_by_name("no-such-format", &b));
    EXPECT_TRUE(lctx::generate::chat_format_by_name("raw", &b));
    EXPECT_EQ(b, "");
    EXPECT_TRUE(lctx::generate::chat_format_by_name("chatml", &b));
    EXPECT_EQ(b, "chatml");
    const std::string names = lctx::generate::chat_format_names();
    EXPECT_EQ(names.rfind(", raw"), names.size() - 5) << names;
    EXPECT_NE(names.find("llama3, "), std::string::npos) << names;
}

TEST(GenerateChatTurns, AModelWithoutATemplateUsesTheFrontEndsFallback) {
    const Model m("");
    ASSERT_TRUE(m.get());
    ASSERT_EQ(llama_model_chat_template(m.get(), nullptr), nullptr);
    const ChatTurns cli(m.get(), {});  // lctx chat: raw
    EXPECT_EQ(cli.jinja_template(), "");
    EXPECT_EQ(cli.format(), "raw");
    lctx::chat::ChatRenderResult r = cli.render(kChat, true);
    EXPECT_EQ(r.prompt, lctx::chat_format_apply(ChatFormat::Raw, kChat, true));
    EXPECT_EQ(r.format, "raw");

    const ChatTurns server(m.get(), server_choice());  // lctx serve: chatml, as llama-server
    EXPECT_EQ(server.format(), "chatml");
    r = server.render(kChat, true);
    EXPECT_EQ(r.prompt, lctx::chat_format_apply(ChatFormat::ChatML, kChat, true));
    EXPECT_EQ(r.format, "chatml");
    EXPECT_NE(r.prompt, cli.render(kChat, true).prompt);
}

TEST(GenerateChatTurns, AFailingTemplateIsReportedWithTheFormatUsedInstead) {
    // Fails at render time; its text looks like chatml to the simple detection.
    const std::string failing = "{{ raise_exception('no chats here') }}<|im_start|>";
    const Model m(failing);
    ASSERT_TRUE(m.get());
    const ChatTurns cli(m.get(), {});
    lctx::chat::ChatRenderResult r = cli.render(kChat, true);
    EXPECT_NE(r.jinja_error.find("no chats here"), std::string::npos) << r.jinja_error;
    EXPECT_EQ(r.format, "chatml");
    std::string want;
    ASSERT_TRUE(lctx::chat::builtin_template_apply("chatml", kChat, true, want));
    EXPECT_EQ(r.prompt, want);

    // Malformed, and like no format: the server falls back to chatml; lctx chat has no format to use.
    ChatTemplateChoice c = server_choice();
    c.jinja = "{% for m in messages %}";
    const ChatTurns server(m.get(), c);
    r = server.render(kChat, true);
    EXPECT_FALSE(r.jinja_error.empty());
    EXPECT_EQ(r.format, "chatml");
    EXPECT_EQ(r.prompt, want);
    ChatTemplateChoice cli_given;
    cli_given.jinja = c.jinja;
    EXPECT_THROW(ChatTurns(m.get(), cli_given).render(kChat, true), std::exception);
}

TEST(GenerateChatTurns, ATemplatesBosIsNotDoubled) {
    const Model m(kModelTemplate);
    ASSERT_TRUE(m.get());
    const llama_vocab *vocab = llama_model_get_vocab(m.get());
    const llama_token bos = llama_vocab_bos(vocab);
    const ChatTurns own(m.get(), {});
    const std::string with_bos = own.render(kChat, true).prompt;
    ASSERT_TRUE(own.starts_with_bos(with_bos));
    std::vector<llama_token> t = own.tokenize(with_bos);
    ASSERT_GE(t.size(), 2u);
    EXPECT_EQ(t[0], bos);
    EXPECT_NE(t[1], bos);
    EXPECT_EQ(t, lctx::generate::tokenize(vocab, with_bos, false, true));

    // Text without the BOS gets one from the tokenizer.
    ChatTemplateChoice named;
    named.format = "chatml";
    const ChatTurns builtin(m.get(), named);
    const std::string without = builtin.render(kChat, true).prompt;
    ASSERT_FALSE(builtin.starts_with_bos(without));
    t = builtin.tokenize(without);
    ASSERT_GE(t.size(), 2u);
    EXPECT_EQ(t[0], bos);
    EXPECT_EQ(t, lctx::generate::tokenize(vocab, without, true, true));
}

TEST(GenerateChatTurns, JinjaMessagesGetTheModelsBosAndEos) {
    const Model m(kModelTemplate);
    ASSERT_TRUE(m.get());
    const ChatTurns own(m.get(), {});
    nlohmann::ordered_json msgs = nlohmann::ordered_json::array();
    msgs.push_back({{"role", "user"}, {"content", "Hi"}});
    lctx::chat::JinjaChatOptions jo;
    jo.add_generation_prompt = false;
    jo.bos_token = "<not the model's>";
    EXPECT_EQ(own.render_jinja(msgs, jo), "<s>[user] Hi\n");
}

}  // namespace
}  // namespace chat_turns_test
