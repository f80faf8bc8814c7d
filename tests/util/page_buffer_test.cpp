// PageBuffer: zero-filled, huge-page aligned, movable, and empty when asked for nothing.
#include "util/page_buffer.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <utility>

namespace lctx::page_buffer_test {
namespace {

TEST(PageBufferTest, ZeroFilledAndAligned) {
    for (size_t n : {size_t{1}, size_t{4095}, size_t{3} << 20}) {
        PageBuffer b(n);
        ASSERT_NE(b.data(), nullptr);
        EXPECT_EQ(b.size(), n);
        EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % PageBuffer::kAlignment, 0u);
        size_t nonzero = 0;
        for (size_t i = 0; i < n; ++i) nonzero += b.data()[i] != 0;
        EXPECT_EQ(nonzero, 0u) << n << " bytes";
        b.data()[n - 1] = 7;  // the whole range is writable
    }
}

TEST(PageBufferTest, EmptyHoldsNothing) {
    PageBuffer b(0);
    EXPECT_EQ(b.data(), nullptr);
    EXPECT_EQ(b.size(), 0u);
}

TEST(PageBufferTest, MoveTransfersOwnership) {
    PageBuffer a(100);
    a.data()[5] = 42;
    uint8_t *p = a.data();
    PageBuffer b(std::move(a));
    EXPECT_EQ(a.data(), nullptr);
    EXPECT_EQ(a.size(), 0u);
    EXPECT_EQ(b.data(), p);
    EXPECT_EQ(b.data()[5], 42);
    PageBuffer c(10);
    c = std::move(b);  // releases c's own memory, takes b's
    EXPECT_EQ(c.data(), p);
    EXPECT_EQ(c.size(), 100u);
    EXPECT_EQ(b.data(), nullptr);
}

}  // namespace
}  // namespace lctx::page_buffer_test
