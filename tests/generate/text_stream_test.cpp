// generate/text_stream.h: stop strings end the text, and nothing goes out that could still become one or
// that ends inside a UTF-8 character.
#include "generate/text_stream.h"

#include <gtest/gtest.h>

namespace lctx::generate::text_stream_test {
namespace {

TEST(GenerateTextStream, HoldsBackAPossibleStopAndCutsAtIt) {
    TextStream s({"END"});
    EXPECT_EQ(s.push("Hello E"), "Hello ");
    EXPECT_EQ(s.push("N"), "");
    EXPECT_EQ(s.push("Xtra"), "ENXtra");  // not the stop string after all
    EXPECT_EQ(s.push(" done EN"), " done ");
    EXPECT_EQ(s.push("D more"), "");
    EXPECT_TRUE(s.stopped());
    EXPECT_EQ(s.text(), "Hello ENXtra done ");
    EXPECT_EQ(s.flush(), "");
    TextStream t({"x"});
    EXPECT_EQ(t.push("ab"), "ab");
    EXPECT_EQ(t.flush(), "");
}

TEST(GenerateTextStream, NeverSplitsAUtf8Character) {
    TextStream s({});
    const std::string e = "\xC3\xA9";  // é
    EXPECT_EQ(s.push("a\xC3"), "a");
    EXPECT_EQ(s.push("\xA9"), e);
    EXPECT_EQ(s.push("\xE2\x82"), "");
    EXPECT_EQ(s.flush(), "\xE2\x82");  // at the end, what is left is sent as is
    EXPECT_EQ(utf8_complete_prefix("ab\xF0\x9F\x98"), 2u);
    EXPECT_EQ(utf8_complete_prefix("ab\xF0\x9F\x98\x80"), 6u);
}

}  // namespace
}  // namespace lctx::generate::text_stream_test
