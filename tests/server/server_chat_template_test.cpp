// serve --chat-template takes the same names as `lctx chat` and the C API (llama_chat_builtin_templates: 33
// at b4748), and renders each exactly as llama_chat_apply_template does; an unknown name lists them all.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "llama.h"
#include "server/engine.h"
#include "server_fixture.h"

namespace lctx::server_chat_template_test {
namespace {

TEST(ServerChatTemplate, EveryBuiltinNameOfTheCApiRendersAsLlamaChatApplyTemplate) {
    std::vector<const char *> names(64);
    const int32_t n = llama_chat_builtin_templates(names.data(), names.size());
    ASSERT_GE(n, 33);
    names.resize(static_cast<size_t>(n));
    const std::vector<server::ChatTurn> turns = {
        {"system", "Be brief."}, {"user", "Hello"}, {"assistant", "Hi!"}, {"user", "Tell me a story."}};
    std::vector<llama_chat_message> msgs;
    for (const server::ChatTurn &t : turns) msgs.push_back({t.role.c_str(), t.content.c_str()});
    for (const char *name : names) {
        server::EngineOptions eo;
        eo.model_path = testing::stories_model();
        eo.n_ctx = 256;
        eo.n_slots = 1;
        eo.chat_template = name;
        server::Engine engine(eo);
        std::vector<char> buf(8192);
        const int32_t len =
            llama_chat_apply_template(name, msgs.data(), msgs.size(), true, buf.data(), buf.size());
        ASSERT_GT(len, 0) << name;
        ASSERT_LT(static_cast<size_t>(len), buf.size()) << name;
        EXPECT_EQ(engine.render_chat(turns, true), std::string(buf.data(), static_cast<size_t>(len))) << name;
    }
}

TEST(ServerChatTemplate, AnUnknownNameListsEveryName) {
    server::EngineOptions eo;
    eo.model_path = testing::stories_model();
    eo.n_ctx = 256;
    eo.n_slots = 1;
    eo.chat_template = "no-such-format";
    try {
        server::Engine engine(eo);
        FAIL() << "an unknown --chat-template was accepted";
    } catch (const std::runtime_error &e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("no-such-format"), std::string::npos) << what;
        for (const char *name : {"chatml", "deepseek3", "megrez", "raw"})
            EXPECT_NE(what.find(name), std::string::npos) << what;
    }
}

}  // namespace
}  // namespace lctx::server_chat_template_test
