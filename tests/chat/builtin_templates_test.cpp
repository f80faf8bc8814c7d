// llama_chat_apply_template and llama_chat_builtin_templates against b4748's outputs for each of its 33
// built-in formats (tests/chat/builtin_b4748.json, beside this file and not under fixtures/, which
// mirrors ../shared: the expected texts and where each comes from), the
// detection from template text, and the header's buffer contract.
#include "chat/builtin_templates.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "chat/chat_template.h"
#include "llama.h"

namespace lctx::chat::builtin_templates_test {
namespace {

const std::string kDir = std::string(LCTX_FIXTURES_DIR);

std::string slurp(const std::string &path) {
    std::ifstream f(path, std::ios::binary);
    EXPECT_TRUE(f.good()) << path;
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
}

const nlohmann::json &fixture() {
    static const nlohmann::json j = nlohmann::json::parse(slurp(kDir + "/../tests/chat/builtin_b4748.json"));
    return j;
}

struct Conversation {
    std::vector<std::string> roles, contents;
    std::vector<llama_chat_message> msgs;
};

Conversation conversation() {
    Conversation c;
    for (const auto &m : fixture()["conversation"]) {
        c.roles.push_back(m["role"]);
        c.contents.push_back(m["content"]);
    }
    for (size_t i = 0; i < c.roles.size(); ++i) c.msgs.push_back({c.roles[i].c_str(), c.contents[i].c_str()});
    return c;
}

// The whole llama.h call: size first with no buffer, then render.
std::string apply(const char *tmpl, const std::vector<llama_chat_message> &msgs, bool add_ass,
                  int32_t *ret = nullptr) {
    const int32_t n = llama_chat_apply_template(tmpl, msgs.data(), msgs.size(), add_ass, nullptr, 0);
    if (ret) *ret = n;
    if (n < 0) return "";
    std::string buf(static_cast<size_t>(n) + 1, '\0');
    EXPECT_EQ(llama_chat_apply_template(tmpl, msgs.data(), msgs.size(), add_ass, buf.data(), n + 1), n);
    buf.resize(static_cast<size_t>(n));
    return buf;
}

TEST(BuiltinTemplates, EveryFormatMatchesB4748ByNameAndByTemplateText) {
    const Conversation conv = conversation();
    int passed = 0;
    for (const auto &c : fixture()["cases"]) {
        const std::string name = c["name"], tmpl = c["template"], expected = c["expected"];
        EXPECT_EQ(builtin_template_detect(tmpl), name) << "detected from: " << tmpl;
        const std::string by_name = apply(name.c_str(), conv.msgs, true);
        const std::string by_text = apply(tmpl.c_str(), conv.msgs, true);
        EXPECT_EQ(by_name, expected) << name << " (" << c["source"].get<std::string>() << ")";
        EXPECT_EQ(by_text, expected) << name;
        passed += by_name == expected && by_text == expected;
    }
    EXPECT_EQ(passed, 33);
}

TEST(BuiltinTemplates, TheListIsB4748sThirtyThreeNamesInOrder) {
    EXPECT_EQ(llama_chat_builtin_templates(nullptr, 0), 33);
    std::vector<const char *> names(33);
    ASSERT_EQ(llama_chat_builtin_templates(names.data(), names.size()), 33);
    std::set<std::string> from_fixture;
    for (const auto &c : fixture()["cases"]) from_fixture.insert(c["name"].get<std::string>());
    for (size_t i = 0; i < names.size(); ++i) {
        EXPECT_EQ(from_fixture.count(names[i]), 1u) << names[i];
        if (i) {
            EXPECT_LT(std::strcmp(names[i - 1], names[i]), 0) << "not alphabetical at " << names[i];
        }
    }
    // A short output array gets the first names and the total count.
    const char *two[2] = {nullptr, nullptr};
    EXPECT_EQ(llama_chat_builtin_templates(two, 2), 33);
    EXPECT_STREQ(two[0], "chatglm3");
    EXPECT_STREQ(two[1], "chatglm4");
}

TEST(BuiltinTemplates, BufferContract) {
    const Conversation conv = conversation();
    const std::string full = apply("chatml", conv.msgs, true);
    ASSERT_FALSE(full.empty());
    // Too small: the needed length comes back and exactly `length` bytes are written, without a NUL.
    char small[16];
    std::memset(small, 'x', sizeof small);
    EXPECT_EQ(llama_chat_apply_template("chatml", conv.msgs.data(), conv.msgs.size(), true, small, 10),
              static_cast<int32_t>(full.size()));
    EXPECT_EQ(std::string(small, 10), full.substr(0, 10));
    EXPECT_EQ(small[10], 'x');
    // NULL selects chatml (b4748 no longer takes the model).
    EXPECT_EQ(apply(nullptr, conv.msgs, true), full);
    // An unrecognised template or name: -1.
    int32_t ret = 0;
    apply("{{ messages }}", conv.msgs, true, &ret);
    EXPECT_EQ(ret, -1);
    apply("no-such-format", conv.msgs, true, &ret);
    EXPECT_EQ(ret, -1);
    // No messages: just the generation prompt.
    EXPECT_EQ(apply("llama3", {}, true), "<|start_header_id|>assistant<|end_header_id|>\n\n");
    EXPECT_EQ(apply("chatml", {}, false), "");
}

TEST(BuiltinTemplates, AddAssistantOnlyOpensATurnWhereTheFormatHasOne) {
    const Conversation conv = conversation();
    for (const char *name : builtin_template_names()) {
        const std::string with = apply(name, conv.msgs, true), without = apply(name, conv.msgs, false);
        EXPECT_EQ(with.rfind(without, 0), 0u) << name << ": the generation prompt only appends";
    }
}

TEST(BuiltinTemplates, RealModelTemplatesAreRecognised) {
    const std::pair<const char *, const char *> cases[] = {
        {"meta-llama-Llama-3.1-8B-Instruct.jinja", "llama3"},
        {"Qwen-Qwen2.5-7B-Instruct.jinja", "chatml"},
        {"google-gemma-2-2b-it.jinja", "gemma"},
        {"microsoft-Phi-3.5-mini-instruct.jinja", "phi3"},
        {"CohereForAI-c4ai-command-r-plus-tool_use.jinja", "command-r"},
        {"ibm-granite-granite-3.3-2B-Instruct.jinja", "granite"},
    };
    for (const auto &[file, name] : cases)
        EXPECT_EQ(builtin_template_detect(slurp(kDir + "/templates/" + file)), name) << file;
}

TEST(ChatRender, UsesTheModelsTemplateElseABuiltIn) {
    const std::vector<ChatMessage> msgs = {{"system", "Be brief."}, {"user", "Hi"}};
    ChatRenderOptions o;
    o.bos_token = "<s>";
    const ChatRenderResult jinja =
        chat_render(slurp(kDir + "/templates/Qwen-Qwen2.5-7B-Instruct.jinja"), msgs, o);
    EXPECT_EQ(jinja.format, "jinja");
    EXPECT_EQ(jinja.prompt, apply("chatml", {{"system", "Be brief."}, {"user", "Hi"}}, true));
    // No template: the fallback by name.
    o.fallback = "llama3";
    EXPECT_EQ(chat_render("", msgs, o).format, "llama3");
    // A template the engine rejects still gets the built-in its markers name, and says why.
    const ChatRenderResult broken = chat_render("{% if %}<|start_header_id|><|end_header_id|>", msgs, o);
    EXPECT_EQ(broken.format, "llama3");
    EXPECT_NE(broken.jinja_error.find("line 1, column 7"), std::string::npos) << broken.jinja_error;
    o.fallback = "nonsense";
    EXPECT_THROW(chat_render("", msgs, o), jinja::JinjaError);
}

}  // namespace
}  // namespace lctx::chat::builtin_templates_test
