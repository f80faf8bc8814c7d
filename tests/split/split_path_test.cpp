// llama_split_path / llama_split_prefix: the gguf-split file-name convention (split_no 0-based, the file
// number split_no + 1), truncation to maxlen, and prefixes refused when the suffix does not match.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "gguf/gguf_split.h"
#include "llama.h"

namespace split_path_test {
namespace {

TEST(SplitPath, WritesTheNumberedName) {
    char buf[256];
    EXPECT_EQ(llama_split_path(buf, sizeof buf, "/m/x", 2, 4), 24);
    EXPECT_STREQ(buf, "/m/x-00003-of-00004.gguf");
    EXPECT_EQ(llama_split_path(buf, sizeof buf, "model", 0, 1), 25);
    EXPECT_STREQ(buf, "model-00001-of-00001.gguf");
    // Five digits at least; a larger number takes what it needs.
    EXPECT_EQ(llama_split_path(buf, sizeof buf, "a", 123455, 200000), 2 + 6 + 4 + 6 + 5);
    EXPECT_STREQ(buf, "a-123456-of-200000.gguf");
}

TEST(SplitPath, TruncatesToMaxlenAndReturnsTheFullLength) {
    char buf[10];
    std::memset(buf, 'z', sizeof buf);
    EXPECT_EQ(llama_split_path(buf, sizeof buf, "/m/x", 0, 2), 24);
    EXPECT_STREQ(buf, "/m/x-0000");  // 9 characters and the NUL
    char one[1] = {'z'};
    EXPECT_EQ(llama_split_path(one, 1, "/m/x", 0, 2), 24);
    EXPECT_EQ(one[0], '\0');
    char untouched = 'z';
    EXPECT_EQ(llama_split_path(&untouched, 0, "/m/x", 0, 2), 24);  // maxlen 0 writes nothing
    EXPECT_EQ(untouched, 'z');
    EXPECT_EQ(llama_split_path(nullptr, 0, "/m/x", 0, 2), 24);  // a length query
    EXPECT_EQ(llama_split_path(buf, sizeof buf, nullptr, 0, 2), 0);
}

TEST(SplitPrefix, ExtractsThePrefixOfTheMatchingPart) {
    char buf[256];
    EXPECT_EQ(llama_split_prefix(buf, sizeof buf, "/m/x-00003-of-00004.gguf", 2, 4), 4);
    EXPECT_STREQ(buf, "/m/x");
    // The round trip through both helpers.
    char path[256];
    llama_split_path(path, sizeof path, "dir/name.q4", 6, 9);
    EXPECT_EQ(llama_split_prefix(buf, sizeof buf, path, 6, 9), 11);
    EXPECT_STREQ(buf, "dir/name.q4");
}

TEST(SplitPrefix, RefusesAnotherSuffixAndWritesNothing) {
    char buf[32];
    std::strcpy(buf, "unchanged");
    EXPECT_EQ(llama_split_prefix(buf, sizeof buf, "/m/x-00003-of-00004.gguf", 1, 4), 0);  // another number
    EXPECT_EQ(llama_split_prefix(buf, sizeof buf, "/m/x-00003-of-00004.gguf", 2, 5), 0);  // another count
    EXPECT_EQ(llama_split_prefix(buf, sizeof buf, "/m/x-00003-of-00004.bin", 2, 4), 0);
    EXPECT_EQ(llama_split_prefix(buf, sizeof buf, "/m/x-00003-of-00004.gguf.tmp", 2, 4), 0);
    EXPECT_EQ(llama_split_prefix(buf, sizeof buf, "/m/x", 0, 1), 0);                  // too short
    EXPECT_EQ(llama_split_prefix(buf, sizeof buf, "-00001-of-00001.gguf", 0, 1), 0);  // empty prefix
    EXPECT_EQ(llama_split_prefix(buf, sizeof buf, nullptr, 0, 1), 0);
    EXPECT_STREQ(buf, "unchanged");
}

TEST(SplitPrefix, TruncatesToMaxlenAndReturnsTheFullLength) {
    char buf[4];
    EXPECT_EQ(llama_split_prefix(buf, sizeof buf, "/long/prefix-00001-of-00002.gguf", 0, 2), 12);
    EXPECT_STREQ(buf, "/lo");
    EXPECT_EQ(llama_split_prefix(nullptr, 0, "/long/prefix-00001-of-00002.gguf", 0, 2), 12);
}

TEST(SplitPrefix, InternalHelpersAgree) {
    EXPECT_EQ(lctx::gguf::split_path("p", 0, 3), "p-00001-of-00003.gguf");
    EXPECT_EQ(lctx::gguf::split_prefix("p-00001-of-00003.gguf", 0, 3).value_or("?"), "p");
    EXPECT_FALSE(lctx::gguf::split_prefix("p-00001-of-00003.gguf", 1, 3));
}

}  // namespace
}  // namespace split_path_test
