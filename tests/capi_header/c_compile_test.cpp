// Compiles llama.h and the C programs beside this file with the system C and C++ compilers, the way a
// C program or binding written for llama.cpp b4748 would be compiled. Only syntax is checked
// (-fsyntax-only): no library is linked, so these tests do not depend on the implementations.
//
// The C sources here are not part of the gtest glob (*.cpp); they are data for these tests.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace c_compile_test {
namespace {

// CMake defines LCTX_FIXTURES_DIR as <source root>/fixtures.
const fs::path kSourceRoot = fs::path(LCTX_FIXTURES_DIR).parent_path();
const fs::path kIncludeDir = kSourceRoot / "include";
const fs::path kTestDir = kSourceRoot / "tests" / "capi_header";

// Strict C11, as the brief for the public header asks; -Wstrict-prototypes catches `f()` declarations.
const char *const kStrictC11 = "-std=c11 -pedantic -Wall -Wextra -Wstrict-prototypes -Werror";

// The 35 deprecated functions of b4748 (LLAMA-API.md §7).
const char *const kDeprecated[] = {
    "llama_load_model_from_file",
    "llama_free_model",
    "llama_new_context_with_model",
    "llama_n_ctx_train",
    "llama_n_embd",
    "llama_n_layer",
    "llama_n_head",
    "llama_n_vocab",
    "llama_get_state_size",
    "llama_copy_state_data",
    "llama_set_state_data",
    "llama_load_session_file",
    "llama_save_session_file",
    "llama_token_get_text",
    "llama_token_get_score",
    "llama_token_get_attr",
    "llama_token_is_eog",
    "llama_token_is_control",
    "llama_token_bos",
    "llama_token_eos",
    "llama_token_eot",
    "llama_token_cls",
    "llama_token_sep",
    "llama_token_nl",
    "llama_token_pad",
    "llama_add_bos_token",
    "llama_add_eos_token",
    "llama_token_fim_pre",
    "llama_token_fim_suf",
    "llama_token_fim_mid",
    "llama_token_fim_pad",
    "llama_token_fim_rep",
    "llama_token_fim_sep",
    "llama_vocab_cls",
    "llama_sampler_init_softmax",
};

std::string quote(const fs::path &p) {
    return "'" + p.string() + "'";
}

bool have_tool(const std::string &tool) {
    return std::system(("command -v " + tool + " >/dev/null 2>&1").c_str()) == 0;
}

std::string read_text(const fs::path &p) {
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

struct Compile {
    int exit_code = -1;
    std::string output;  // compiler diagnostics (stdout and stderr)
};

class CapiHeaderCompile : public ::testing::Test {
  protected:
    void SetUp() override {
        const auto *info = ::testing::UnitTest::GetInstance()->current_test_info();
        work_ = fs::temp_directory_path() /
                ("lctx_capi_header_" + std::to_string(::getpid()) + "_" + info->name());
        fs::create_directories(work_);
    }

    void TearDown() override {
        std::error_code ec;
        fs::remove_all(work_, ec);
    }

    // Writes `text` to a file of the scratch directory and returns its path.
    fs::path write(const std::string &name, const std::string &text) const {
        const fs::path p = work_ / name;
        std::ofstream(p) << text;
        return p;
    }

    // Runs `compiler flags -fsyntax-only -I<include> source` (plus `extra` after the source) with the C
    // locale, so diagnostics quote names with plain apostrophes.
    Compile compile(const std::string &compiler, const std::string &flags, const fs::path &source,
                    const std::string &extra = "-fsyntax-only") const {
        const fs::path log = work_ / "compile.log";
        const std::string cmd = "LC_ALL=C " + compiler + " " + flags + " -I" + quote(kIncludeDir) + " " +
                                extra + " " + quote(source) + " >" + quote(log) + " 2>&1";
        const int status = std::system(cmd.c_str());
        Compile result;
        result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        result.output = read_text(log);
        return result;
    }

    // The C compilers to try: `cc` always, clang too when installed (it warns differently).
    static std::vector<std::string> c_compilers() {
        std::vector<std::string> out;
        if (have_tool("cc")) out.push_back("cc");
        if (have_tool("clang")) out.push_back("clang");
        return out;
    }

    fs::path work_;
};

TEST_F(CapiHeaderCompile, HeaderAloneIsStrictC11) {
    const auto compilers = c_compilers();
    if (compilers.empty()) GTEST_SKIP() << "no C compiler on PATH";
    // Included twice: the include guard must hold.
    const fs::path src = write("header_only.c", "#include \"llama.h\"\n#include \"llama.h\"\n");
    for (const std::string &cc : compilers) {
        for (const char *std_flag : {"", " -std=c17"}) {
            const Compile r = compile(cc, std::string(kStrictC11) + std_flag, src);
            EXPECT_EQ(r.exit_code, 0) << cc << std_flag << ":\n" << r.output;
        }
    }
}

TEST_F(CapiHeaderCompile, HeaderAloneIsStrictCxx) {
    if (!have_tool("c++")) GTEST_SKIP() << "no C++ compiler on PATH";
    const fs::path src = write("header_only.cpp", "#include \"llama.h\"\n");
    for (const char *std_flag : {"-std=c++11", "-std=c++17", "-std=c++20"}) {
        const Compile r = compile("c++", std::string(std_flag) + " -pedantic -Wall -Wextra -Werror", src);
        EXPECT_EQ(r.exit_code, 0) << std_flag << ":\n" << r.output;
    }
}

TEST_F(CapiHeaderCompile, HeaderBringsTheStandardHeadersProgramsRelyOn) {
    if (!have_tool("cc")) GTEST_SKIP() << "no C compiler on PATH";
    // Upstream llama.h includes stdint, stddef, stdio and stdbool; programs use them without including.
    const fs::path src = write("transitive.c",
                               "#include \"llama.h\"\n"
                               "int use(void);\n"
                               "int use(void) {\n"
                               "    FILE *f = stdout;\n"
                               "    size_t n = sizeof(int64_t);\n"
                               "    bool ok = f != NULL && n == 8 && INT32_MAX > 0;\n"
                               "    return ok ? 0 : 1;\n"
                               "}\n");
    const Compile r = compile("cc", kStrictC11, src);
    EXPECT_EQ(r.exit_code, 0) << r.output;
}

TEST_F(CapiHeaderCompile, HeaderDoesNotNeedGgml) {
    if (!have_tool("cc")) GTEST_SKIP() << "no C compiler on PATH";
    const fs::path src = write("deps.c", "#include \"llama.h\"\n");
    const Compile r = compile("cc", "-std=c11", src, "-M");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("lctx/ggml_compat.h"), std::string::npos) << r.output;
    for (const char *upstream : {"/ggml.h", "/ggml-cpu.h", "/ggml-backend.h"}) {
        EXPECT_EQ(r.output.find(upstream), std::string::npos) << "llama.h pulls in " << upstream;
    }
}

TEST_F(CapiHeaderCompile, TypicalCProgramCompiles) {
    const auto compilers = c_compilers();
    if (compilers.empty()) GTEST_SKIP() << "no C compiler on PATH";
    for (const std::string &cc : compilers) {
        const Compile r = compile(cc, kStrictC11, kTestDir / "c_usage.c");
        EXPECT_EQ(r.exit_code, 0) << cc << ":\n" << r.output;
    }
}

TEST_F(CapiHeaderCompile, TypicalCProgramCompilesAsCxx) {
    if (!have_tool("c++")) GTEST_SKIP() << "no C++ compiler on PATH";
    // Bindings often compile C-style code as C++; the enum/function name pairs must work there too.
    const Compile r =
        compile("c++", "-x c++ -std=c++17 -pedantic -Wall -Wextra -Werror", kTestDir / "c_usage.c");
    EXPECT_EQ(r.exit_code, 0) << r.output;
}

TEST_F(CapiHeaderCompile, EveryCurrentFunctionIsDeclaredAndNotDeprecated) {
    const auto compilers = c_compilers();
    if (compilers.empty()) GTEST_SKIP() << "no C compiler on PATH";
    const fs::path src = kTestDir / "c_all_functions.c";

    // 197 functions in all, 35 of them deprecated.
    const std::string text = read_text(src);
    size_t entries = 0;
    for (size_t at = text.find("(any_fn)llama_"); at != std::string::npos;
         at = text.find("(any_fn)llama_", at + 1)) {
        ++entries;
    }
    EXPECT_EQ(entries, 197u - std::size(kDeprecated));

    for (const std::string &cc : compilers) {
        const Compile r = compile(cc, kStrictC11, src);
        EXPECT_EQ(r.exit_code, 0) << cc << ":\n" << r.output;
    }
}

TEST_F(CapiHeaderCompile, DeprecatedFunctionsWarnWithAHint) {
    const auto compilers = c_compilers();
    if (compilers.empty()) GTEST_SKIP() << "no C compiler on PATH";
    const fs::path src = kTestDir / "c_deprecated.c";
    for (const std::string &cc : compilers) {
        // Warnings only: every reference must be reported, not just the first error.
        const Compile warn = compile(cc, "-std=c11 -Wall -Wdeprecated-declarations", src);
        ASSERT_EQ(warn.exit_code, 0) << cc << ":\n" << warn.output;
        for (const char *name : kDeprecated) {
            // "is deprecated:" (with a colon) means a hint follows; without one there is no colon.
            const std::string needle = "'" + std::string(name) + "' is deprecated: ";
            EXPECT_NE(warn.output.find(needle), std::string::npos)
                << cc << ": no deprecation hint for " << name;
        }
        // Under -Werror the same references stop the build, as they do with upstream's header.
        const Compile strict = compile(cc, "-std=c11 -Werror=deprecated-declarations", src);
        EXPECT_NE(strict.exit_code, 0) << cc;
    }
}

TEST_F(CapiHeaderCompile, CppHelpersRefuseC) {
    if (!have_tool("cc")) GTEST_SKIP() << "no C compiler on PATH";
    const fs::path src = write("cpp_helpers.c", "#include \"llama-cpp.h\"\n");
    const Compile r = compile("cc", "-std=c11", src);
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.output.find("C++ only"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace c_compile_test
