// Linked into each suite that ctest also runs at every kernel level (kernels, model, context): skips the
// whole run, with the reason, when LCTX_ISA asks for a level above the CPU's, and checks that the level that
// runs is the one requested.
#include "isa_level.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

namespace {

using lctx::kernels::Isa;

class IsaLevelEnvironment : public testing::Environment {
  public:
    void SetUp() override {
        const std::string why =
            isa_level::skip_reason(std::getenv("LCTX_ISA"), lctx::kernels::isa_detected());
        if (why.empty()) return;
        // gtest prints no per-test marker for a skip in a global environment; ctest reports a test whose
        // output has this one (gtest_discover_tests' SKIP_REGULAR_EXPRESSION) as skipped.
        std::printf("[  SKIPPED ] %s\n", why.c_str());
        std::fflush(stdout);
        GTEST_SKIP() << why;
    }
};

testing::Environment *const kIsaLevel = testing::AddGlobalTestEnvironment(new IsaLevelEnvironment);

// Under emulation (scripts/test-arm64.sh) the emulated CPU is known: LCTX_EXPECT_DETECTED names the level its
// features must give (qemu's cortex-a53: neon; its max CPU: i8mm), so that a probe that misreads the
// features (and runs a lower level everywhere) fails instead of passing at that level.
TEST(IsaLevel, DetectedLevelIsTheExpectedOne) {
    const char *expect = std::getenv("LCTX_EXPECT_DETECTED");
    if (!expect || !*expect) return;  // (a real machine: nothing to compare with)
    EXPECT_STREQ(lctx::kernels::isa_name(lctx::kernels::isa_detected()), expect);
}

TEST(IsaLevel, ActiveLevelIsTheRequestedOne) {
    Isa want = lctx::kernels::isa_detected();
    lctx::kernels::detail::isa_requested(std::getenv("LCTX_ISA"), &want);
    EXPECT_STREQ(lctx::kernels::isa_name(lctx::kernels::isa_active()), lctx::kernels::isa_name(want));
}

}  // namespace
