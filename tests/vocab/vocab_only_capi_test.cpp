// Vocabulary-only loads of every architecture b4748 knows, through llama.h: the ten fixture vocabularies
// (GPT-2, Falcon, MPT, StarCoder, Refact, Phi-3, BERT, DeepSeek, llama SPM) load with vocab_only and
// tokenize their test texts exactly as llama.cpp did; an unknown architecture is refused by name, and a
// known one without a forward pass loads its vocabulary only.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "capi/capi_test_util.h"
#include "gguf/gguf.h"
#include "llama.h"
#include "vocab/vocab_test_util.h"

namespace vocab_only_capi_test {
namespace {

const char *const kSets[] = {"bert-bge", "deepseek-coder", "deepseek-llm", "falcon",    "gpt-2", "llama-spm",
                             "mpt",      "phi-3",          "refact",       "starcoder", "t5"};

llama_model *load_vocab_only(const std::string &path) {
    llama_model_params p = llama_model_default_params();
    p.vocab_only = true;
    return llama_model_load_from_file(path.c_str(), p);
}

TEST(CapiVocabOnly, EveryFixtureVocabularyTokenizesItsTestTexts) {
    capi_test::quiet_log();
    for (const char *set : kSets) {
        llama_model *m = load_vocab_only(lctx::test::vocab_path(set));
        ASSERT_NE(m, nullptr) << set;
        const llama_vocab *v = llama_model_get_vocab(m);
        size_t n_cases = 0;
        for (const lctx::test::VocabCase &c : lctx::test::read_cases(set)) {
            std::vector<llama_token> got(c.text.size() + 16);
            const int32_t n = llama_tokenize(v, c.text.data(), static_cast<int32_t>(c.text.size()),
                                             got.data(), static_cast<int32_t>(got.size()), false, false);
            ASSERT_GE(n, 0) << set;
            got.resize(static_cast<size_t>(n));
            EXPECT_EQ(got, c.ids) << set << ": \"" << lctx::test::escape(c.text) << "\"";
            ++n_cases;
        }
        EXPECT_GT(n_cases, 0u) << set;
        // A vocabulary has no weights to run.
        EXPECT_EQ(llama_init_from_model(m, llama_context_default_params()), nullptr) << set;
        llama_model_free(m);
    }
}

// A full load of a vocabulary-only file fails and its logged reason says the file has no weights.
TEST(CapiVocabOnly, AFullLoadSaysTheFileHasNoWeights) {
    static std::string errors;
    errors.clear();
    llama_log_set(
        [](enum ggml_log_level level, const char *text, void *) {
            if (level == GGML_LOG_LEVEL_ERROR && text) errors += text;
        },
        nullptr);
    llama_model *m =
        llama_model_load_from_file(lctx::test::vocab_path("bert-bge").c_str(), llama_model_default_params());
    EXPECT_EQ(m, nullptr);
    if (m) llama_model_free(m);
    EXPECT_NE(errors.find("the file has no weights"), std::string::npos) << errors;
    capi_test::quiet_log();
}

TEST(CapiVocabOnly, ArchitectureFactsComeFromB4748sTable) {
    capi_test::quiet_log();
    struct Want {
        const char *set;
        enum llama_rope_type rope;
    };
    for (const Want &w : {Want{"gpt-2", LLAMA_ROPE_TYPE_NONE}, Want{"falcon", LLAMA_ROPE_TYPE_NEOX},
                          Want{"mpt", LLAMA_ROPE_TYPE_NONE}, Want{"phi-3", LLAMA_ROPE_TYPE_NEOX},
                          Want{"llama-spm", LLAMA_ROPE_TYPE_NORM}, Want{"bert-bge", LLAMA_ROPE_TYPE_NEOX}}) {
        llama_model *m = load_vocab_only(lctx::test::vocab_path(w.set));
        ASSERT_NE(m, nullptr) << w.set;
        EXPECT_EQ(llama_model_rope_type(m), w.rope) << w.set;
        EXPECT_FALSE(llama_model_has_encoder(m)) << w.set;
        EXPECT_TRUE(llama_model_has_decoder(m)) << w.set;
        llama_model_free(m);
    }
    // T5: an encoder and a decoder, no rotation, the decoder starts from t5.decoder_start_token_id (0).
    llama_model *m = load_vocab_only(lctx::test::vocab_path("t5"));
    ASSERT_NE(m, nullptr);
    EXPECT_TRUE(llama_model_has_encoder(m));
    EXPECT_TRUE(llama_model_has_decoder(m));
    EXPECT_EQ(llama_model_rope_type(m), LLAMA_ROPE_TYPE_NONE);
    EXPECT_EQ(llama_model_decoder_start_token(m), 0);
    llama_model_free(m);
    // A decoder-only model names none.
    m = load_vocab_only(lctx::test::vocab_path("gpt-2"));
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(llama_model_decoder_start_token(m), LLAMA_TOKEN_NULL);
    llama_model_free(m);
}

// stories260K relabelled: a known architecture without a forward pass loads only with vocab_only; an
// unknown one never loads, and the log names it.
TEST(CapiVocabOnly, UnknownArchitecturesAreRefusedByName) {
    std::string logged;
    llama_log_set([](enum ggml_log_level, const char *t, void *d) { *static_cast<std::string *>(d) += t; },
                  &logged);
    auto relabelled = [](const std::string &arch) {
        const std::string path = (std::filesystem::temp_directory_path() /
                                  ("lctx-arch-" + arch + "-" + std::to_string(getpid()) + ".gguf"))
                                     .string();
        auto f = lctx::gguf::File::open(capi_test::model_path());
        lctx::gguf::Writer w;
        for (const lctx::gguf::KeyValue &kv : f->metadata()) {
            if (kv.key == "general.architecture") {
                w.set_string(kv.key, arch);
            } else if (kv.key.rfind("llama.", 0) == 0) {
                lctx::gguf::KeyValue moved = kv;
                w.set(arch + kv.key.substr(5), moved.value);
            } else {
                w.set(kv.key, kv.value);
            }
        }
        for (const lctx::gguf::TensorInfo &t : f->tensors())
            w.add_tensor(t.name, t.type, t.ne, f->tensor_data(t), t.nbytes);
        w.write_file(path);
        return path;
    };
    const std::string gptj = relabelled("gptj"), odd = relabelled("no-such-arch");
    llama_model *m = load_vocab_only(gptj);
    ASSERT_NE(m, nullptr);
    EXPECT_FALSE(llama_model_has_encoder(m));
    EXPECT_EQ(llama_model_rope_type(m), LLAMA_ROPE_TYPE_NONE);
    llama_model_free(m);
    EXPECT_EQ(llama_model_load_from_file(gptj.c_str(), llama_model_default_params()), nullptr);
    EXPECT_NE(logged.find("no forward pass for the 'gptj' architecture"), std::string::npos) << logged;
    EXPECT_EQ(load_vocab_only(odd), nullptr);
    EXPECT_NE(logged.find("unknown model architecture 'no-such-arch'"), std::string::npos) << logged;
    std::remove(gptj.c_str());
    std::remove(odd.c_str());
    capi_test::quiet_log();
}

}  // namespace

namespace {

// b4748 takes a unigram vocabulary's newline token from tokenizing "\n"; T5's normalizer leaves nothing
// of it, so the newline token is the pad id (0), where a lookup of the text "\n" would find none (-1).
TEST(CapiVocabOnly, T5NewlineTokenIsThePadId) {
    capi_test::quiet_log();
    llama_model *m = load_vocab_only(lctx::test::vocab_path("t5"));
    ASSERT_NE(m, nullptr);
    const llama_vocab *v = llama_model_get_vocab(m);
    EXPECT_EQ(llama_vocab_pad(v), 0);
    EXPECT_EQ(llama_vocab_nl(v), 0);
    llama_token none[4];
    EXPECT_EQ(llama_tokenize(v, "\n", 1, none, 4, false, false), 0);  // why: nothing is left of "\n"
    llama_model_free(m);
}

}  // namespace
}  // namespace vocab_only_capi_test
