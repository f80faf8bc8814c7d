// lctx serve's chat options: --chat-template-file (a Jinja template read and checked at start),
// --reasoning-format and --reasoning-budget, and --draft-batch-max; each mistake is one line naming the option, status 1, before
// anything listens.
#include <gtest/gtest.h>

#include <fstream>

#include "cli_run.h"

namespace serve_options_test {
using namespace lctx::testing;

namespace {
bool has(const std::string &s, const std::string &what) {
    return s.find(what) != std::string::npos;
}
}  // namespace

TEST(ServeOptions, ChatTemplateFileMistakes) {
    const std::string missing =
        run_cli("serve --port 0 --chat-template-file /no/such/template.jinja", true).out;
    EXPECT_TRUE(has(missing, "--chat-template-file")) << missing;
    EXPECT_TRUE(has(missing, "/no/such/template.jinja")) << missing;
    EXPECT_FALSE(has(missing, "listening")) << missing;

    const std::string empty_path = temp_file("empty.jinja");
    std::ofstream(empty_path).close();
    const CliResult empty = run_cli("serve --port 0 --chat-template-file " + empty_path, true);
    EXPECT_EQ(empty.status, 1);
    EXPECT_TRUE(has(empty.out, "is empty")) << empty.out;

    const std::string bad_path = temp_file("bad.jinja");
    std::ofstream(bad_path) << "{% for m in messages %}{{ m.content }";
    const CliResult bad = run_cli("serve --port 0 --chat-template-file " + bad_path, true);
    EXPECT_EQ(bad.status, 1);
    EXPECT_TRUE(has(bad.out, "not a valid Jinja template")) << bad.out;
    EXPECT_FALSE(has(bad.out, "listening")) << bad.out;

    const std::string good_path = temp_file("good.jinja");
    std::ofstream(good_path) << "{% for m in messages %}{{ m.content }}{% endfor %}";
    const CliResult both =
        run_cli("serve --port 0 --chat-template-file " + good_path + " --chat-template chatml", true);
    EXPECT_EQ(both.status, 1);
    EXPECT_TRUE(has(both.out, "give one of them")) << both.out;
}

// --draft-batch-max: a count of draft tokens, 0 for the automatic cap; a negative one is refused at start.
TEST(ServeOptions, DraftBatchMaxIsACount) {
    const CliResult neg = run_cli("serve --port 0 --lookup --draft-batch-max -1", true);
    EXPECT_NE(neg.status, 0);
    EXPECT_TRUE(has(neg.out, "--draft-batch-max")) << neg.out;
    EXPECT_FALSE(has(neg.out, "listening")) << neg.out;
}

TEST(ServeOptions, ReasoningOptionsTakeTheirValuesOnly) {
    const CliResult f = run_cli("serve --port 0 --reasoning-format r1", true);
    EXPECT_NE(f.status, 0);
    EXPECT_TRUE(has(f.out, "--reasoning-format")) << f.out;
    const CliResult b = run_cli("serve --port 0 --reasoning-budget 100", true);
    EXPECT_NE(b.status, 0);
    EXPECT_TRUE(has(b.out, "--reasoning-budget")) << b.out;
}
}  // namespace serve_options_test
