// lctx split (split, --merge, --dry-run, limits and refusals) and lctx info (text and JSON) on a model, a
// vocabulary-only file and a split model. Expected values come from the file through other code paths
// (the C API's counts, the GGUF reader), not from the command's own output.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/cli_run.h"
#include "gguf/gguf.h"
#include "gguf_rewrite.h"
#include "llama.h"

namespace fs = std::filesystem;
using lctx::testing::run_cli;
using nlohmann::json;

namespace split_cli_test {
namespace {

std::string model_path() {
    return std::string(LCTX_MODELS_DIR) + "/stories260K.gguf";
}
std::string vocab_path() {
    return std::string(LCTX_FIXTURES_DIR) + "/vocab/ggml-vocab-llama-spm.gguf";
}

std::string read_all(const std::string &path) {
    std::ifstream f(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

class SplitCli : public ::testing::Test {
  protected:
    void SetUp() override {
        dir_ = fs::temp_directory_path() / ("lctx_split_cli_" + std::to_string(::getpid()) + "_" +
                                            ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::remove_all(dir_);
        fs::create_directories(dir_);
    }
    void TearDown() override { fs::remove_all(dir_); }
    std::string path(const std::string &name) const { return (dir_ / name).string(); }
    size_t n_files() const {
        size_t n = 0;
        for (const fs::directory_entry &e : fs::directory_iterator(dir_)) n += e.is_regular_file();
        return n;
    }
    fs::path dir_;
};

json info_json(const std::string &args) {
    const lctx::testing::CliResult r = run_cli("info " + args + " --json");
    EXPECT_EQ(r.status, 0) << r.out;
    return json::parse(r.out, nullptr, false);
}

TEST_F(SplitCli, SplitsByTensorsMergesBackAndRunsTheSame) {
    const size_t n_tensors = lctx::gguf::File::open(model_path())->tensors().size();
    const std::string prefix = path("st");
    lctx::testing::CliResult r = run_cli("split --split-max-tensors 10 " + model_path() + " " + prefix, true);
    ASSERT_EQ(r.status, 0) << r.out;
    const size_t n_parts = (n_tensors + 9) / 10;
    EXPECT_NE(r.out.find("n_split: " + std::to_string(n_parts)), std::string::npos) << r.out;
    char first[512], last[512];
    llama_split_path(first, sizeof first, prefix.c_str(), 0, static_cast<int>(n_parts));
    llama_split_path(last, sizeof last, prefix.c_str(), static_cast<int>(n_parts) - 1,
                     static_cast<int>(n_parts));
    EXPECT_TRUE(fs::is_regular_file(first));
    EXPECT_TRUE(fs::is_regular_file(last));
    EXPECT_EQ(n_files(), n_parts);  // no temporary file left

    // The same greedy text from the split model as from the file.
    const std::string gen = "run -n 12 --temp 0 -p 'Once upon a time' -q -m ";
    const lctx::testing::CliResult a = run_cli(gen + model_path()), b = run_cli(gen + first);
    EXPECT_EQ(a.status, 0);
    EXPECT_EQ(b.status, 0) << b.out;
    EXPECT_EQ(a.out, b.out);
    EXPECT_FALSE(a.out.empty());

    r = run_cli("split --merge " + std::string(first) + " " + path("merged.gguf"), true);
    ASSERT_EQ(r.status, 0) << r.out;
    EXPECT_TRUE(read_all(path("merged.gguf")) == read_all(model_path()));
}

TEST_F(SplitCli, SplitsBySizeAndDryRunWritesNothing) {
    const std::string prefix = path("sz");
    lctx::testing::CliResult r =
        run_cli("split --dry-run --split-max-size 400K " + model_path() + " " + prefix, true);
    ASSERT_EQ(r.status, 0) << r.out;
    const size_t at = r.out.find("n_split: ");
    ASSERT_NE(at, std::string::npos) << r.out;
    const int n = std::stoi(r.out.substr(at + 9));
    EXPECT_GE(n, 3);  // about 1.2 MB of tensors, 400 KB a part
    EXPECT_EQ(n_files(), 0u);
    r = run_cli("split --split-max-size 400K " + model_path() + " " + prefix, true);
    ASSERT_EQ(r.status, 0) << r.out;
    EXPECT_EQ(n_files(), static_cast<size_t>(n));
    size_t n_tensors = 0;
    for (int i = 0; i < n; ++i) {
        char p[512];
        llama_split_path(p, sizeof p, prefix.c_str(), i, n);
        uint64_t bytes = 0;
        auto part = lctx::gguf::File::open(p);
        for (const lctx::gguf::TensorInfo &t : part->tensors()) bytes += (t.nbytes + 31) / 32 * 32;
        n_tensors += part->tensors().size();
        if (part->tensors().size() > 1) {  // one larger tensor may stand alone
            EXPECT_LE(bytes, 400000u) << p;
        }
    }
    EXPECT_EQ(n_tensors, lctx::gguf::File::open(model_path())->tensors().size());
}

TEST_F(SplitCli, RefusesBadOptionsAndMissingParts) {
    const std::string prefix = path("bad");
    lctx::testing::CliResult r = run_cli("split --split-max-size 12X " + model_path() + " " + prefix, true);
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.out.find("--split-max-size: '12X' is not a positive size"), std::string::npos) << r.out;
    r = run_cli("split --split-max-size 99999999999G " + model_path() + " " + prefix,
                true);  // past 2^64 bytes
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.out.find("is not a positive size"), std::string::npos) << r.out;
    r = run_cli("info -m " + path("missing.gguf"), true);
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.out.find("lctx info: " + path("missing.gguf") + ": cannot open"), std::string::npos) << r.out;
    r = run_cli("split --split-max-tensors 0 " + model_path() + " " + prefix, true);
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.out.find("--split-max-tensors: must be at least 1"), std::string::npos) << r.out;
    r = run_cli("split --split-max-tensors 4 --split-max-size 1M " + model_path() + " " + prefix, true);
    EXPECT_EQ(r.status, 1);
    r = run_cli("split --split --merge " + model_path() + " " + prefix, true);
    EXPECT_EQ(r.status, 1);
    r = run_cli("split --merge " + model_path() + " " + path("m.gguf"), true);
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.out.find("not a split model"), std::string::npos) << r.out;
    EXPECT_EQ(n_files(), 0u);

    ASSERT_EQ(run_cli("split --split-max-tensors 20 " + model_path() + " " + prefix).status, 0);
    char second[512], first[512];
    llama_split_path(first, sizeof first, prefix.c_str(), 0, 3);
    llama_split_path(second, sizeof second, prefix.c_str(), 1, 3);
    fs::remove(second);
    r = run_cli("split --merge " + std::string(first) + " " + path("m.gguf"), true);
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.out.find("cannot open part 2 of 3 (" + std::string(second) + ")"), std::string::npos)
        << r.out;
    EXPECT_FALSE(fs::exists(path("m.gguf")));
    r = run_cli("info -m " + std::string(first), true);
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.out.find("lctx info: cannot open part 2 of 3"), std::string::npos) << r.out;
    r = run_cli("split --merge " + std::string(first) + " /dev/null", true);
    EXPECT_EQ(r.status, 1);
}

TEST_F(SplitCli, InfoOnAModel) {
    llama_log_set([](enum ggml_log_level, const char *, void *) {}, nullptr);
    llama_model *m = llama_model_load_from_file(model_path().c_str(), llama_model_default_params());
    ASSERT_NE(m, nullptr);
    auto file = lctx::gguf::File::open(model_path());
    const json d = info_json("-m " + model_path() + " --all --tensors");
    ASSERT_FALSE(d.is_discarded());
    EXPECT_EQ(d["architecture"], "llama");
    EXPECT_EQ(d["n_params"].get<uint64_t>(), llama_model_n_params(m));
    EXPECT_EQ(d["tensor_bytes"].get<uint64_t>(), llama_model_size(m));
    EXPECT_EQ(d["n_tensors"].get<size_t>(), file->tensors().size());
    EXPECT_EQ(d["context_length"].get<int32_t>(), llama_model_n_ctx_train(m));
    EXPECT_EQ(d["hparams"]["block_count"].get<int32_t>(), llama_model_n_layer(m));
    EXPECT_EQ(d["hparams"]["embedding_length"].get<int32_t>(), llama_model_n_embd(m));
    // Every RoPE key the file has (stories260K: the dimension count), as the C API reads it.
    ASSERT_TRUE(d["rope"].contains("dimension_count"));
    for (const auto &[k, v] : d["rope"].items()) {
        char buf[64];
        ASSERT_GT(llama_model_meta_val_str(m, ("llama.rope." + k).c_str(), buf, sizeof buf), 0) << k;
        EXPECT_DOUBLE_EQ(v.get<double>(), std::stod(buf)) << k;
    }
    EXPECT_EQ(d["rope_used"]["n_rot"].get<int32_t>(),
              llama_model_n_embd(m) / llama_model_n_head(m));  // all of it
    EXPECT_EQ(d["rope_used"]["type"], llama_model_rope_type(m) == LLAMA_ROPE_TYPE_NEOX ? "neox" : "norm");
    EXPECT_FLOAT_EQ(d["rope_used"]["freq_scale"].get<float>(), llama_model_rope_freq_scale_train(m));
    EXPECT_FLOAT_EQ(d["rope_used"]["freq_base"].get<float>(), 10000.0f);  // the default: the file has no key
    EXPECT_FALSE(d["rope"].contains("freq_base"));
    // The type mixture counts every tensor once, by its type.
    size_t typed = 0;
    for (const json &t : d["types"]) {
        size_t n = 0;
        for (const lctx::gguf::TensorInfo &ti : file->tensors()) n += lctx::type_name(ti.type) == t["type"];
        EXPECT_EQ(t["tensors"].get<size_t>(), n) << t;
        typed += n;
    }
    EXPECT_EQ(typed, file->tensors().size());
    const llama_vocab *v = llama_model_get_vocab(m);
    EXPECT_EQ(d["vocab"]["n_tokens"].get<int32_t>(), llama_vocab_n_tokens(v));
    EXPECT_EQ(d["vocab"]["special"]["bos"]["id"].get<int32_t>(), llama_vocab_bos(v));
    EXPECT_EQ(d["vocab"]["special"]["eos"]["id"].get<int32_t>(), llama_vocab_eos(v));
    EXPECT_EQ(d["vocab"]["special"]["bos"]["text"], llama_vocab_get_text(v, llama_vocab_bos(v)));
    EXPECT_EQ(d["metadata"].size(), file->metadata().size());
    EXPECT_EQ(d["tensors"].size(), file->tensors().size());
    EXPECT_EQ(d["tensors"][0]["name"], file->tensors()[0].name);
    llama_model_free(m);

    const lctx::testing::CliResult r = run_cli("info " + model_path());
    EXPECT_EQ(r.status, 0);
    EXPECT_NE(r.out.find("architecture:   llama\n"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("(" + std::to_string(d["n_params"].get<uint64_t>()) + ")"), std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("chat template:  (none)"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("metadata ("), std::string::npos);  // only with --all
}

TEST_F(SplitCli, InfoNamesTheChatTemplatesBuiltInFormat) {
    lctx::testing::Rewrite add;
    add.add = [](lctx::gguf::Writer &w) {
        w.set_string(
            "tokenizer.chat_template",
            "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}");
    };
    const std::string with = lctx::testing::rewrite_gguf(model_path(), add, "info-chatml");
    const json d = info_json(with);
    fs::remove(with);
    EXPECT_EQ(d["chat_template"]["present"], true);
    EXPECT_EQ(d["chat_template"]["builtin"], "chatml");
}

TEST_F(SplitCli, InfoOnAVocabularyOnlyFile) {
    auto file = lctx::gguf::File::open(vocab_path());
    const json d = info_json("-m " + vocab_path());
    ASSERT_FALSE(d.is_discarded());
    EXPECT_EQ(d["n_tensors"], 0);
    EXPECT_EQ(d["n_params"], 0);
    EXPECT_EQ(d["vocab"]["n_tokens"].get<size_t>(), file->get_string_array("tokenizer.ggml.tokens")->size());
    EXPECT_EQ(d["vocab"]["type"], "SPM");
    // This one keeps its model's hyper-parameters: the rotation a load would use is the file's.
    EXPECT_EQ(d["rope_used"]["n_rot"], d["rope"]["dimension_count"]);
    // An architecture lctx cannot run: described all the same, with no rotation to report.
    const std::string falcon = std::string(LCTX_FIXTURES_DIR) + "/vocab/ggml-vocab-falcon.gguf";
    const json f = info_json("-m " + falcon);
    EXPECT_EQ(f["architecture"], "falcon");
    EXPECT_TRUE(f["rope_used"].is_null());
    EXPECT_EQ(f["vocab"]["type"], "BPE");
    EXPECT_EQ(d["architecture"], file->get_string("general.architecture").value());
    const lctx::testing::CliResult r = run_cli("info --all " + vocab_path());
    EXPECT_EQ(r.status, 0);
    EXPECT_NE(r.out.find("types:          (no tensors)"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("tokenizer.ggml.tokens"), std::string::npos) << r.out;
}

TEST_F(SplitCli, InfoOnASplitModel) {
    const std::string prefix = path("in");
    ASSERT_EQ(run_cli("split --split-max-tensors 20 " + model_path() + " " + prefix).status, 0);
    char first[512];
    llama_split_path(first, sizeof first, prefix.c_str(), 0, 3);
    const json whole = info_json(model_path() + " --tensors");
    const json split = info_json(std::string(first) + " --tensors");
    ASSERT_FALSE(split.is_discarded());
    EXPECT_EQ(split["parts"].size(), 3u);
    EXPECT_EQ(split["parts"][0], first);
    for (const char *k : {"architecture", "n_params", "n_tensors", "tensor_bytes", "types", "context_length",
                          "rope", "vocab", "chat_template"})
        EXPECT_EQ(split[k], whole[k]) << k;
    ASSERT_EQ(split["tensors"].size(), whole["tensors"].size());
    for (size_t i = 0; i < whole["tensors"].size(); ++i) {
        EXPECT_EQ(split["tensors"][i]["name"], whole["tensors"][i]["name"]);
        EXPECT_EQ(split["tensors"][i]["part"].get<size_t>(), i / 20);
    }
    const lctx::testing::CliResult r = run_cli(std::string("info ") + first);
    EXPECT_NE(r.out.find(", 3 parts)"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace split_cli_test
