// Split models: a fixture model split into parts (by tensor count and by size) loads through
// llama_model_load_from_file (the first part finds the others by name) and llama_model_load_from_splits,
// and gives exactly the logits of the unsplit file; merging the parts gives the original file back byte
// for byte; every malformed or mismatched set of parts is refused with a message naming the problem.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "gguf/gguf_split.h"
#include "gguf_rewrite.h"
#include "llama.h"
#include "model/model.h"

namespace fs = std::filesystem;

namespace split_model_test {
using namespace lctx;

namespace {

std::string fixture_model(const char *name) {
    return std::string(LCTX_FIXTURES_DIR) + "/golden/models/" + name;
}

// The shipped model, models/stories260K.gguf (as in the other suites).
std::string models_dir_model() {
    return std::string(LCTX_MODELS_DIR) + "/stories260K.gguf";
}

std::vector<char> read_all(const std::string &path) {
    std::ifstream f(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

// A fresh temporary directory per test, removed at the end.
class SplitTest : public ::testing::Test {
  protected:
    void SetUp() override {
        dir_ = fs::temp_directory_path() / ("lctx_split_" + std::to_string(::getpid()) + "_" +
                                            ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::remove_all(dir_);
        fs::create_directories(dir_);
        llama_log_set(
            [](enum ggml_log_level level, const char *text, void *user) {
                if (level == GGML_LOG_LEVEL_ERROR) *static_cast<std::string *>(user) += text;
            },
            &errors_);
    }
    void TearDown() override {
        llama_log_set(nullptr, nullptr);
        fs::remove_all(dir_);
    }
    std::string path(const std::string &name) const { return (dir_ / name).string(); }

    // Splits `src` under prefix `name`; returns the parts' paths.
    std::vector<std::string> split(const std::string &src, const std::string &name,
                                   gguf::SplitLimits limits) {
        auto f = gguf::open_model(src);
        const std::vector<gguf::SplitPart> parts = gguf::plan_split(*f, path(name), limits);
        gguf::write_split(*f, parts);
        std::vector<std::string> paths;
        for (const gguf::SplitPart &p : parts) paths.push_back(p.path);
        return paths;
    }

    fs::path dir_;
    std::string errors_;
};

llama_model *load(const std::string &path) {
    return llama_model_load_from_file(path.c_str(), llama_model_default_params());
}

llama_model *load_splits(const std::vector<std::string> &paths) {
    std::vector<const char *> c;
    for (const std::string &p : paths) c.push_back(p.c_str());
    return llama_model_load_from_splits(c.data(), c.size(), llama_model_default_params());
}

// The logits of every position of a fixed token sequence.
std::vector<float> logits_of(llama_model *model) {
    llama_context_params p = llama_context_default_params();
    p.n_ctx = 64;
    p.n_batch = 32;
    p.n_ubatch = 8;
    p.n_threads = 1;
    p.n_threads_batch = 1;
    llama_context *ctx = llama_init_from_model(model, p);
    EXPECT_NE(ctx, nullptr);
    if (!ctx) return {};
    const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
    std::vector<llama_token> tokens;
    for (int i = 0; i < 20; ++i) tokens.push_back((1 + i * 37) % n_vocab);
    llama_batch b = llama_batch_init(static_cast<int32_t>(tokens.size()), 0, 1);
    for (size_t i = 0; i < tokens.size(); ++i) {
        b.token[i] = tokens[i];
        b.pos[i] = static_cast<llama_pos>(i);
        b.n_seq_id[i] = 1;
        b.seq_id[i][0] = 0;
        b.logits[i] = true;
    }
    b.n_tokens = static_cast<int32_t>(tokens.size());
    EXPECT_EQ(llama_decode(ctx, b), 0);
    std::vector<float> out;
    for (size_t i = 0; i < tokens.size(); ++i) {
        const float *l = llama_get_logits_ith(ctx, static_cast<int32_t>(i));
        out.insert(out.end(), l, l + n_vocab);
    }
    llama_batch_free(b);
    llama_free(ctx);
    return out;
}

void expect_same_logits(const std::string &whole, llama_model *split_model) {
    llama_model *ref = load(whole);
    ASSERT_NE(ref, nullptr);
    ASSERT_NE(split_model, nullptr);
    const std::vector<float> a = logits_of(ref), b = logits_of(split_model);
    ASSERT_EQ(a.size(), b.size());
    ASSERT_FALSE(a.empty());
    for (size_t i = 0; i < a.size(); ++i)
        ASSERT_EQ(a[i], b[i]) << "logit " << i;  // the same bytes, the same math
    EXPECT_EQ(llama_model_n_params(ref), llama_model_n_params(split_model));
    EXPECT_EQ(llama_model_size(ref), llama_model_size(split_model));
    llama_model_free(ref);
}

TEST_F(SplitTest, ByTensorCountLoadsThroughBothPathsWithIdenticalLogits) {
    const std::string src = fixture_model("llama-F16.gguf");
    const size_t n_tensors = gguf::File::open(src)->tensors().size();
    gguf::SplitLimits limits;
    limits.max_tensors = static_cast<int>((n_tensors + 2) / 3);
    const std::vector<std::string> parts = split(src, "m", limits);
    ASSERT_EQ(parts.size(), 3u);
    EXPECT_EQ(parts[0], path("m-00001-of-00003.gguf"));

    auto joined = gguf::open_model(parts[0]);
    EXPECT_EQ(joined->n_parts(), 3u);
    EXPECT_EQ(joined->tensors().size(), n_tensors);
    // Every part is a complete GGUF with the split keys, the first one with the model's metadata.
    for (int i = 0; i < 3; ++i) {
        auto f = gguf::File::open(parts[static_cast<size_t>(i)]);
        const auto info = gguf::split_info(*f);
        ASSERT_TRUE(info);
        EXPECT_EQ(info->no, i);
        EXPECT_EQ(info->count, 3);
        EXPECT_EQ(info->tensors_count, static_cast<int64_t>(n_tensors));
        EXPECT_EQ(f->find("general.architecture") != nullptr, i == 0);
        EXPECT_EQ(f->find(gguf::kKeySplitNo)->type, gguf::ValueType::UINT16);
        EXPECT_EQ(f->find(gguf::kKeySplitTensorsCount)->type, gguf::ValueType::INT32);
    }

    llama_model *by_name = load(parts[0]);
    expect_same_logits(src, by_name);
    llama_model_free(by_name);
    llama_model *by_paths = load_splits(parts);
    expect_same_logits(src, by_paths);
    llama_model_free(by_paths);
    EXPECT_EQ(errors_, "");
}

TEST_F(SplitTest, BySizeKeepsEachPartWithinTheLimit) {
    const std::string src = models_dir_model();
    auto f = gguf::File::open(src);
    uint64_t total = 0;
    for (const gguf::TensorInfo &t : f->tensors()) total += (t.nbytes + 31) / 32 * 32;
    gguf::SplitLimits limits;
    limits.max_bytes = total / 2 + 1;
    const std::vector<std::string> parts = split(src, "s", limits);
    ASSERT_GE(parts.size(), 2u);
    auto joined = gguf::open_model(parts[0]);
    std::vector<uint64_t> bytes(joined->n_parts(), 0);
    for (const gguf::TensorInfo &t : joined->tensors()) bytes.at(t.part) += (t.nbytes + 31) / 32 * 32;
    for (size_t p = 0; p < bytes.size(); ++p) {
        EXPECT_GT(bytes[p], 0u) << "part " << p;
        EXPECT_LE(bytes[p], limits.max_bytes) << "part " << p;
    }
    llama_model *m = load_splits(parts);
    expect_same_logits(src, m);
    llama_model_free(m);
}

TEST_F(SplitTest, OnePartAndUnsplitFilesLoadThroughBothPaths) {
    const std::string src = models_dir_model();
    const std::vector<std::string> parts = split(src, "one", gguf::SplitLimits{});  // 128 tensors a part
    ASSERT_EQ(parts.size(), 1u);
    EXPECT_EQ(parts[0], path("one-00001-of-00001.gguf"));
    for (llama_model *m : {load(parts[0]), load_splits(parts), load_splits({src})}) {
        expect_same_logits(src, m);
        llama_model_free(m);
    }
    EXPECT_EQ(errors_, "");
}

// Without repacking, every weight view points into the mapping of the part that holds the tensor.
TEST_F(SplitTest, WeightsStayInTheirPartsMappings) {
    gguf::SplitLimits limits;
    limits.max_tensors = 10;
    const std::vector<std::string> parts = split(models_dir_model(), "map", limits);
    ASSERT_GE(parts.size(), 3u);
    ModelLoadOptions opts;
    opts.repack = false;
    const std::unique_ptr<Model> m = Model::load_parts(parts, opts);
    const gguf::File &f = m->file();
    ASSERT_EQ(f.n_parts(), parts.size());
    auto part_of = [&](const uint8_t *p) {
        for (size_t i = 0; i < f.n_parts(); ++i)
            if (p >= f.part(i).bytes() && p < f.part(i).bytes() + f.part(i).size())
                return static_cast<int>(i);
        return -1;
    };
    EXPECT_EQ(part_of(m->weights().token_embd.data),
              static_cast<int>(f.find_tensor("token_embd.weight")->part));
    const LayerWeights &last = m->weights().layers.back();
    const std::string blk = "blk." + std::to_string(m->weights().layers.size() - 1) + ".";
    EXPECT_EQ(part_of(last.ffn_down.data), static_cast<int>(f.find_tensor(blk + "ffn_down.weight")->part));
    EXPECT_EQ(part_of(last.ffn_down.data),
              static_cast<int>(parts.size()) - 1);  // the last tensors, the last part
    EXPECT_EQ(last.ffn_down.data, f.tensor_data(*f.find_tensor(blk + "ffn_down.weight")));
}

TEST_F(SplitTest, MergeGivesTheOriginalBytesBack) {
    for (const std::string &src : {fixture_model("llama-F16.gguf"), models_dir_model()}) {
        gguf::SplitLimits limits;
        limits.max_tensors = 7;
        const std::vector<std::string> parts = split(src, "g", limits);
        ASSERT_GE(parts.size(), 2u);
        const std::string out = path("merged.gguf");
        gguf::write_merged(*gguf::open_model(parts[0]), out);
        EXPECT_TRUE(read_all(out) == read_all(src)) << src;
        for (const std::string &p : parts) fs::remove(p);
    }
}

// Rewrites part `path` in place through testing::rewrite_gguf (keys set, tensors dropped or added).
void rewrite_part(const std::string &path, const lctx::testing::Rewrite &r) {
    const std::string tmp = lctx::testing::rewrite_gguf(path, r, "split-part");
    fs::rename(tmp, path);  // a new file: a mapping of the old one stays intact
}

class SplitErrors : public SplitTest {
  protected:
    void SetUp() override {
        SplitTest::SetUp();
        const std::string src = fixture_model("llama-F16.gguf");
        gguf::SplitLimits limits;
        limits.max_tensors = static_cast<int>((gguf::File::open(src)->tensors().size() + 2) / 3);
        parts_ = split(src, "m", limits);
        ASSERT_EQ(parts_.size(), 3u);
    }
    // Both loaders refuse `paths` (load_from_file gets the first) with a message holding `what`.
    void expect_refused(const std::vector<std::string> &paths, const std::string &what, bool by_name = true) {
        if (by_name) {
            errors_.clear();
            EXPECT_EQ(load(paths[0]), nullptr);
            EXPECT_NE(errors_.find(what), std::string::npos) << "load_from_file said: " << errors_;
        }
        errors_.clear();
        EXPECT_EQ(load_splits(paths), nullptr);
        EXPECT_NE(errors_.find(what), std::string::npos) << "load_from_splits said: " << errors_;
    }
    std::vector<std::string> parts_;
};

TEST_F(SplitErrors, MissingPart) {
    fs::remove(parts_[1]);
    errors_.clear();
    EXPECT_EQ(load(parts_[0]), nullptr);
    EXPECT_NE(errors_.find("cannot open part 2 of 3 (" + parts_[1] + ")"), std::string::npos) << errors_;
    EXPECT_NE(errors_.find("No such file"), std::string::npos) << errors_;
    expect_refused(parts_, "cannot open part 2 of 3", false);
}

TEST_F(SplitErrors, PartsOutOfOrder) {
    expect_refused({parts_[0], parts_[2], parts_[1]}, "split.no is 2, expected 1", false);
}

TEST_F(SplitErrors, PartOfASplitWithAnotherCount) {
    const std::vector<std::string> other = split(fixture_model("llama-F16.gguf"), "o", gguf::SplitLimits{});
    ASSERT_EQ(other.size(), 1u);  // 128 tensors a part: one part
    // Part 2 replaced by a file of another split (count 1).
    fs::copy_file(other[0], parts_[1], fs::copy_options::overwrite_existing);
    expect_refused(parts_, "split.count is 1, but the first part's is 3");
}

TEST_F(SplitErrors, AFileWithoutSplitKeysAsAPart) {
    fs::copy_file(fixture_model("llama-F16.gguf"), parts_[2], fs::copy_options::overwrite_existing);
    expect_refused(parts_, "has no split.count: not a part of a split model");
}

TEST_F(SplitErrors, LoadingALaterPart) {
    errors_.clear();
    EXPECT_EQ(load(parts_[1]), nullptr);
    EXPECT_NE(errors_.find("is part 2 of 3 of a split model"), std::string::npos) << errors_;
    EXPECT_NE(errors_.find("load its first part"), std::string::npos) << errors_;
    errors_.clear();
    EXPECT_EQ(load_splits({parts_[1], parts_[0], parts_[2]}), nullptr);
    EXPECT_NE(errors_.find("is part 2 of 3"), std::string::npos) << errors_;
}

TEST_F(SplitErrors, FirstPartUnderAnotherNameNeedsExplicitPaths) {
    const std::string renamed = path("renamed.gguf");
    fs::rename(parts_[0], renamed);
    errors_.clear();
    EXPECT_EQ(load(renamed), nullptr);
    EXPECT_NE(errors_.find("its name does not end in -00001-of-00003.gguf"), std::string::npos) << errors_;
    llama_model *m = load_splits({renamed, parts_[1], parts_[2]});
    EXPECT_NE(m, nullptr) << errors_;
    llama_model_free(m);
}

TEST_F(SplitErrors, WrongNumberOfPaths) {
    expect_refused({parts_[0], parts_[1]}, "split.count is 3, but 2 files were given", false);
    expect_refused({parts_[0]}, "split.count is 3, but 1 file was given", false);
    const std::string whole = fixture_model("llama-F16.gguf");
    expect_refused({whole, parts_[1]}, "not a split model (no split.count), but 2 files were given", false);
    errors_.clear();
    const char *none[] = {nullptr};
    EXPECT_EQ(llama_model_load_from_splits(none, 0, llama_model_default_params()), nullptr);
    EXPECT_EQ(llama_model_load_from_splits(none, 1, llama_model_default_params()), nullptr);
    EXPECT_NE(errors_.find("paths[0] is NULL"), std::string::npos) << errors_;
}

TEST_F(SplitErrors, TensorInTwoParts) {
    auto first = gguf::File::open(parts_[0]);
    const gguf::TensorInfo &dup = first->tensors()[0];
    // Part 3 gets a copy of part 1's first tensor, and every part a count that includes it.
    lctx::testing::Rewrite add;
    add.add = [&](gguf::Writer &w) {
        w.add_tensor(dup.name, dup.type, dup.ne, first->tensor_data(dup), dup.nbytes);
    };
    rewrite_part(parts_[2], add);
    for (const std::string &p : parts_) {
        lctx::testing::Rewrite count;
        count.add = [&](gguf::Writer &w) {
            w.set(gguf::kKeySplitTensorsCount,
                  gguf::Value::from_int(
                      gguf::ValueType::INT32,
                      static_cast<int64_t>(first->find(gguf::kKeySplitTensorsCount)->scalar.i64 + 1)));
        };
        rewrite_part(p, count);
    }
    expect_refused(parts_, "tensor '" + dup.name + "' is in two parts of the split model: " + parts_[0] +
                               " and " + parts_[2]);
}

TEST_F(SplitErrors, MissingTensor) {
    auto third = gguf::File::open(parts_[2]);
    const std::string dropped = third->tensors().back().name;
    rewrite_part(parts_[2], lctx::testing::dropping({dropped}));
    const int64_t n = gguf::split_info(*third)->tensors_count;
    expect_refused(parts_, "split.tensors.count is " + std::to_string(n) + ", but the 3 parts hold " +
                               std::to_string(n - 1) + " tensors");
}

TEST_F(SplitErrors, TensorCountsThatDisagree) {
    lctx::testing::Rewrite count;
    count.add = [](gguf::Writer &w) {
        w.set(gguf::kKeySplitTensorsCount, gguf::Value::from_int(gguf::ValueType::INT32, 5));
    };
    rewrite_part(parts_[1], count);
    expect_refused(parts_, "split.tensors.count is 5, but the first part's is");
}

TEST_F(SplitErrors, SplitKeysOutOfRange) {
    lctx::testing::Rewrite bad_no;
    bad_no.add = [](gguf::Writer &w) {
        w.set(gguf::kKeySplitNo, gguf::Value::from_uint(gguf::ValueType::UINT16, 7));
    };
    rewrite_part(parts_[0], bad_no);
    expect_refused(parts_, "split.no is 7, outside 0..2");
    lctx::testing::Rewrite edge_no;  // the edge: split.no == split.count
    edge_no.add = [](gguf::Writer &w) {
        w.set(gguf::kKeySplitNo, gguf::Value::from_uint(gguf::ValueType::UINT16, 3));
    };
    rewrite_part(parts_[0], edge_no);
    expect_refused(parts_, "split.no is 3, outside 0..2");
    lctx::testing::Rewrite bad_type;
    bad_type.add = [](gguf::Writer &w) { w.set(gguf::kKeySplitCount, gguf::Value::from_string("three")); };
    rewrite_part(parts_[0], bad_type);
    expect_refused(parts_, "split.count");
}

// Writing: outputs are regular files written whole; a failure leaves none of the parts behind.
TEST_F(SplitTest, WritesRefuseNonRegularOutputsAndLeaveNothingBehind) {
    auto f = gguf::open_model(models_dir_model());
    gguf::SplitLimits limits;
    limits.max_tensors = 10;
    const std::vector<gguf::SplitPart> parts = gguf::plan_split(*f, path("w"), limits);
    ASSERT_GE(parts.size(), 3u);
    fs::create_directory(parts[2].path);  // the third part's name is taken by a directory
    try {
        gguf::write_split(*f, parts);
        ADD_FAILURE() << "a directory in the way was written over";
    } catch (const gguf::GgufError &e) {
        EXPECT_NE(std::string(e.what()).find("not a regular file"), std::string::npos) << e.what();
    }
    size_t n_files = 0;
    for (const fs::directory_entry &e : fs::directory_iterator(dir_)) n_files += e.is_regular_file();
    EXPECT_EQ(n_files, 0u) << "parts or temporary files were left behind";

    fs::remove(parts[2].path);
    gguf::write_split(*f, parts);
    // The parts get a plain file's mode (0666 less the umask), not the temporary file's 0600.
    const mode_t mask = ::umask(0);
    ::umask(mask);
    for (const gguf::SplitPart &p : parts)
        EXPECT_EQ(static_cast<unsigned>(fs::status(p.path).permissions()),
                  static_cast<unsigned>(0666 & ~mask))
            << p.path;
    auto joined = gguf::open_model(parts[0].path);
    try {
        gguf::write_merged(*joined, "/dev/null");
        ADD_FAILURE() << "wrote over /dev/null";
    } catch (const gguf::GgufError &e) {
        EXPECT_NE(std::string(e.what()).find("/dev/null: exists and is not a regular file"),
                  std::string::npos)
            << e.what();
    }
    try {
        gguf::write_merged(*gguf::open_model(models_dir_model()), path("x.gguf"));
        ADD_FAILURE() << "merged a file that is not split";
    } catch (const gguf::GgufError &e) {
        EXPECT_NE(std::string(e.what()).find("not a split model"), std::string::npos) << e.what();
    }
    EXPECT_FALSE(fs::exists(path("x.gguf")));
}

TEST_F(SplitTest, PlanRefusesImpossibleLimits) {
    auto f = gguf::open_model(models_dir_model());
    gguf::SplitLimits limits;
    limits.max_tensors = 0;
    EXPECT_THROW(gguf::plan_split(*f, path("z"), limits), gguf::GgufError);
    // A vocabulary-only file has no tensors to split.
    auto vocab = gguf::open_model(std::string(LCTX_FIXTURES_DIR) + "/vocab/ggml-vocab-llama-spm.gguf");
    EXPECT_THROW(gguf::plan_split(*vocab, path("z"), gguf::SplitLimits{}), gguf::GgufError);
}

}  // namespace
}  // namespace split_model_test
