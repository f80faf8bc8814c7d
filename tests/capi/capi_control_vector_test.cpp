// lctx_control_vector_load (lctx/lctx_ext.h): a control-vector GGUF read by the engine into the layout
// llama_apply_adapter_cvec takes, scaled; a file that is missing or no control vector gives -1, an empty
// result and a logged reason that names the file and the problem.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "lctx/lctx_ext.h"
#include "llama.h"

namespace capi_control_vector_test {
namespace {

std::string temp_path(const std::string &tag) {
    return (std::filesystem::temp_directory_path() /
            ("lctx-capi-cvec-" + std::to_string(::getpid()) + "-" + tag + ".gguf"))
        .string();
}

// A file with the given direction tensors (name -> values), F32 and one-dimensional.
std::string write_file(const std::string &tag,
                       const std::vector<std::pair<std::string, std::vector<float>>> &t, bool hint = true) {
    lctx::gguf::Writer w;
    w.set_string("general.architecture", "controlvector");
    if (hint) w.set_string("controlvector.model_hint", "llama");
    for (const auto &[name, v] : t)
        w.add_tensor(name, lctx::GgmlType::F32, {static_cast<int64_t>(v.size())}, v.data(),
                     v.size() * sizeof(float));
    const std::string path = temp_path(tag);
    w.write_file(path);
    return path;
}

// The last error line the library logs while f runs.
template <typename F>
std::string logged_error(F &&f) {
    static std::string last;
    last.clear();
    llama_log_set(
        [](enum ggml_log_level level, const char *text, void *) {
            if (level == GGML_LOG_LEVEL_ERROR) last = text;
        },
        nullptr);
    f();
    llama_log_set(nullptr, nullptr);
    return last;
}

TEST(CapiControlVector, ReadsTheLayersFromOneScaledWithZerosBetween) {
    const std::vector<float> d1 = {1.0f, -2.0f, 0.5f}, d3 = {0.25f, 4.0f, -1.0f};
    const std::string path = write_file("good", {{"direction.3", d3}, {"direction.1", d1}});
    lctx_control_vector cv{};
    ASSERT_EQ(lctx_control_vector_load(path.c_str(), -2.0f, &cv), 0);
    EXPECT_EQ(cv.n_embd, 3);
    EXPECT_EQ(cv.layer_count, 3);
    EXPECT_STREQ(cv.model_hint, "llama");
    ASSERT_EQ(cv.len, 9u);
    ASSERT_NE(cv.data, nullptr);
    for (size_t j = 0; j < 3; ++j) {
        EXPECT_EQ(cv.data[j], d1[j] * -2.0f);  // layer 1
        EXPECT_EQ(cv.data[3 + j], 0.0f);       // layer 2: not in the file
        EXPECT_EQ(cv.data[6 + j], d3[j] * -2.0f);
    }
    lctx_control_vector_free(&cv);
    EXPECT_EQ(cv.data, nullptr);
    EXPECT_EQ(cv.len, 0u);
    lctx_control_vector_free(&cv);  // an empty one: nothing to do
    lctx_control_vector_free(nullptr);
    const std::string no_hint = write_file("no-hint", {{"direction.1", d1}}, false);
    ASSERT_EQ(lctx_control_vector_load(no_hint.c_str(), 1.0f, &cv), 0);
    EXPECT_STREQ(cv.model_hint, "");
    lctx_control_vector_free(&cv);
    std::filesystem::remove(path);
    std::filesystem::remove(no_hint);
}

TEST(CapiControlVector, RefusesAMissingOrMalformedFileSayingWhy) {
    auto refused = [](const std::string &path, float scale, const std::string &needle) {
        lctx_control_vector cv{};
        cv.n_embd = 99;  // emptied on failure
        int32_t rc = 0;
        const std::string e = logged_error([&] { rc = lctx_control_vector_load(path.c_str(), scale, &cv); });
        EXPECT_EQ(rc, -1) << path;
        EXPECT_EQ(cv.data, nullptr);
        EXPECT_EQ(cv.n_embd, 0);
        EXPECT_EQ(e.rfind("lctx_control_vector_load: ", 0), 0u) << e;
        EXPECT_NE(e.find(path), std::string::npos) << e;
        EXPECT_NE(e.find(needle), std::string::npos) << e;
    };
    refused("/nonexistent/lctx-cvec.gguf", 1.0f, "control vector /nonexistent/lctx-cvec.gguf");
    const std::string text = temp_path("text");
    {
        std::FILE *f = std::fopen(text.c_str(), "wb");
        std::fputs("hello, not a gguf file at all", f);
        std::fclose(f);
    }
    refused(text, 1.0f, "control vector " + text);
    const std::string empty = write_file("empty", {});
    refused(empty, 1.0f, "no direction tensors");
    const std::string other = write_file("other", {{"blk.0.attn_q.weight", {1.0f, 2.0f}}});
    refused(other, 1.0f, "tensor 'blk.0.attn_q.weight' is not a direction");
    const std::string mixed = write_file("mixed", {{"direction.1", {1.0f, 2.0f}}, {"direction.2", {1.0f}}});
    refused(mixed, 1.0f, "tensor 'direction.2' has 1 values, the others 2");
    const std::string good = write_file("scale", {{"direction.1", {1.0f, 2.0f}}});
    refused(good, std::nanf(""), "is not a finite number");
    const std::string e = logged_error([] {
        lctx_control_vector cv{};
        EXPECT_EQ(lctx_control_vector_load(nullptr, 1.0f, &cv), -1);
    });
    EXPECT_NE(e.find("path is NULL"), std::string::npos) << e;
    for (const std::string &p : {text, empty, other, mixed, good}) std::filesystem::remove(p);
}

}  // namespace
}  // namespace capi_control_vector_test
