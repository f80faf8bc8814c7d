// llama_model_params.kv_overrides: each override replaces the file's value for the load (hyper-parameters and
// vocabulary alike), the metadata queries still show the file's own keys (as b4748), and an override that
// cannot be read as the key's type refuses the model.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "capi_test_util.h"
#include "llama.h"

namespace capi_kv_override_test {
namespace {

llama_model_kv_override kv_int(const char *key, int64_t v) {
    llama_model_kv_override o{};
    o.tag = LLAMA_KV_OVERRIDE_TYPE_INT;
    std::strncpy(o.key, key, sizeof o.key - 1);
    o.val_i64 = v;
    return o;
}

llama_model_kv_override kv_bool(const char *key, bool v) {
    llama_model_kv_override o{};
    o.tag = LLAMA_KV_OVERRIDE_TYPE_BOOL;
    std::strncpy(o.key, key, sizeof o.key - 1);
    o.val_bool = v;
    return o;
}

llama_model_kv_override kv_str(const char *key, const char *v) {
    llama_model_kv_override o{};
    o.tag = LLAMA_KV_OVERRIDE_TYPE_STR;
    std::strncpy(o.key, key, sizeof o.key - 1);
    std::strncpy(o.val_str, v, sizeof o.val_str - 1);
    return o;
}

llama_model *load_with(std::vector<llama_model_kv_override> kvs) {
    kvs.push_back(llama_model_kv_override{});  // the terminating empty key
    llama_model_params p = llama_model_default_params();
    p.kv_overrides = kvs.data();
    return llama_model_load_from_file(capi_test::model_path().c_str(), p);
}

std::string meta(const llama_model *m, const char *key) {
    char buf[256] = {};
    if (llama_model_meta_val_str(m, key, buf, sizeof buf) < 0) return "<missing>";
    return buf;
}

}  // namespace

TEST(CapiKvOverride, ReplacesTheFilesValueForTheLoadOnly) {
    capi_test::quiet_log();
    const llama_model *base = capi_test::model();
    ASSERT_NE(base, nullptr);
    const int32_t n_ctx_train = llama_model_n_ctx_train(base);
    const bool add_bos = llama_vocab_get_add_bos(llama_model_get_vocab(base));
    const std::string file_ctx = meta(base, "llama.context_length");

    llama_model *m =
        load_with({kv_int("llama.context_length", n_ctx_train / 2), kv_bool("tokenizer.ggml.add_bos_token", !add_bos)});
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(llama_model_n_ctx_train(m), n_ctx_train / 2);
    EXPECT_EQ(llama_vocab_get_add_bos(llama_model_get_vocab(m)), !add_bos);
    // The metadata queries show the file's keys, as b4748's do.
    EXPECT_EQ(meta(m, "llama.context_length"), file_ctx);
    llama_model_free(m);
}

TEST(CapiKvOverride, AKeyTheFileLacksIsAdded) {
    capi_test::quiet_log();
    // stories260K has no sliding window; an added key that the loader reads takes effect.
    llama_model *m = load_with({kv_int("llama.context_length", 64), kv_str("general.name", "renamed")});
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(llama_model_n_ctx_train(m), 64);
    llama_model_free(m);
}

TEST(CapiKvOverride, AnOverrideOfTheWrongTypeRefusesTheModel) {
    capi_test::quiet_log();
    EXPECT_EQ(load_with({kv_str("llama.context_length", "many")}), nullptr);
    EXPECT_EQ(load_with({kv_int("general.architecture", 3)}), nullptr);
}

TEST(CapiKvOverride, AnUnknownTagOrUnterminatedKeyIsRefused) {
    capi_test::quiet_log();
    llama_model_kv_override bad = kv_int("llama.context_length", 64);
    bad.tag = static_cast<llama_model_kv_override_type>(42);
    EXPECT_EQ(load_with({bad}), nullptr);
    llama_model_kv_override unterminated = kv_int("x", 1);
    std::memset(unterminated.key, 'k', sizeof unterminated.key);
    EXPECT_EQ(load_with({unterminated}), nullptr);
}
}  // namespace capi_kv_override_test
