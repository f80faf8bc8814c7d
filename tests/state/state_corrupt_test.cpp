// Corrupt and foreign state is refused (0 / false) and leaves the context exactly as it was: the bytes of
// llama_state_get_data before and after the refused load are identical.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <memory>

#include "capi/capi_test_util.h"
#include "state/state_layout.h"

namespace state_corrupt_test {
using namespace capi_test;
using namespace state_test;

namespace {

std::string temp_path(const char *name) {
    return ::testing::TempDir() + "lctx_corrupt_" + name;
}

void write_file(const std::string &path, const std::vector<uint8_t> &bytes) {
    std::ofstream f(path, std::ios::binary);
    f.write(reinterpret_cast<const char *>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

class StateCorrupt : public ::testing::Test {
  protected:
    void SetUp() override {
        ASSERT_NE(model(), nullptr);
        // Refusals log their reason: kept, for the tests that check it names the problem.
        llama_log_set(
            [](ggml_log_level, const char *text, void *log) { *static_cast<std::string *>(log) += text; },
            &log_);
        // The source: the fixture run on sequence 0 of a 2-sequence context.
        CtxOptions o;
        o.n_seq_max = 2;
        src_ = make_ctx(o);
        ASSERT_NE(src_, nullptr);
        fixture_run(src_);
        good_ = state_bytes(src_);
        good_seq_ = seq_state_bytes(src_, 0);
        layout_ = parse_layout(good_.data(), good_.size(), false);
        seq_layout_ = parse_layout(good_seq_.data(), good_seq_.size(), true);

        // The target holds a different state of its own, which every refused load must leave intact.
        dst_ = make_ctx(o);
        ASSERT_NE(dst_, nullptr);
        ASSERT_EQ(decode_seq(dst_, tokenize("The cat sat on the mat."), 0, 1), 0);
        before_ = state_bytes(dst_);
    }
    void TearDown() override {
        llama_free(src_);
        llama_free(dst_);
        llama_log_set(nullptr, nullptr);
    }

    // Loads the bytes from an exactly sized heap copy (so a read past the end is caught by sanitizers).
    size_t load(const std::vector<uint8_t> &bytes, size_t n) {
        std::unique_ptr<uint8_t[]> copy(new uint8_t[n ? n : 1]);
        std::memcpy(copy.get(), bytes.data(), n);
        return llama_state_set_data(dst_, copy.get(), n);
    }
    size_t load_seq(const std::vector<uint8_t> &bytes, size_t n, llama_seq_id dest) {
        std::unique_ptr<uint8_t[]> copy(new uint8_t[n ? n : 1]);
        std::memcpy(copy.get(), bytes.data(), n);
        return llama_state_seq_set_data(dst_, copy.get(), n, dest);
    }
    // `reason`, when given, must be in what the refusal logs.
    void expect_refused(const std::vector<uint8_t> &bytes, const char *what, const std::string &reason = "") {
        log_.clear();
        EXPECT_EQ(load(bytes, bytes.size()), 0u) << what;
        EXPECT_EQ(state_bytes(dst_), before_) << what;
        if (!reason.empty()) {
            EXPECT_NE(log_.find(reason), std::string::npos) << what << ": " << log_;
        }
    }
    void expect_seq_refused(const std::vector<uint8_t> &bytes, const char *what,
                            const std::string &reason = "") {
        log_.clear();
        EXPECT_EQ(load_seq(bytes, bytes.size(), 0), 0u) << what;
        EXPECT_EQ(state_bytes(dst_), before_) << what;
        if (!reason.empty()) {
            EXPECT_NE(log_.find(reason), std::string::npos) << what << ": " << log_;
        }
    }

    llama_context *src_ = nullptr, *dst_ = nullptr;
    std::vector<uint8_t> good_, good_seq_, before_;
    Layout layout_, seq_layout_;
    std::string log_;
};

// `bytes` (layout `l`) as a model of one layer less would have saved it: the last layer's K and V blocks left
// out and n_layer one less, every other byte as it was.
std::vector<uint8_t> without_last_layer(const std::vector<uint8_t> &bytes, const Layout &l) {
    const uint32_t n = l.n_layer;
    std::vector<uint8_t> out(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(l.k_type_off[n - 1]));
    out.insert(out.end(), bytes.begin() + static_cast<std::ptrdiff_t>(l.v_type_off[0]),
               bytes.begin() + static_cast<std::ptrdiff_t>(l.v_type_off[n - 1]));
    out.insert(out.end(), bytes.begin() + static_cast<std::ptrdiff_t>(l.end), bytes.end());
    poke<uint32_t>(out, l.n_layer_off, n - 1);
    return out;
}

TEST_F(StateCorrupt, ValidStateLoads) {
    // The control case: the untouched bytes load, so the refusals below are due to the corruption.
    EXPECT_EQ(load(good_, good_.size()), good_.size());
    EXPECT_EQ(state_bytes(dst_), good_);
}

TEST_F(StateCorrupt, TruncatedAtManyLengthsIsRefused) {
    std::vector<size_t> lengths;
    for (size_t n = 0; n < 256; ++n) lengths.push_back(n);
    for (size_t n = 256; n < good_.size(); n += 61) lengths.push_back(n);
    for (size_t off : {layout_.cell_count_off, layout_.v_trans_off, layout_.n_layer_off,
                       layout_.k_data_off[0], layout_.v_data_off[0], layout_.v_data_off.back()}) {
        lengths.push_back(off);
        lengths.push_back(off + 1);
    }
    lengths.push_back(good_.size() - 1);
    for (size_t n : lengths) {
        ASSERT_LT(n, good_.size());
        EXPECT_EQ(load(good_, n), 0u) << "truncated to " << n << " bytes";
    }
    EXPECT_EQ(state_bytes(dst_), before_);
}

TEST_F(StateCorrupt, TruncatedSequenceStateIsRefused) {
    for (size_t n = 0; n < good_seq_.size(); n += (n < 200 ? 1 : 37))
        EXPECT_EQ(load_seq(good_seq_, n, 0), 0u) << "truncated to " << n << " bytes";
    EXPECT_EQ(state_bytes(dst_), before_);
    EXPECT_EQ(load_seq(good_seq_, good_seq_.size(), 0), good_seq_.size());  // control
}

TEST_F(StateCorrupt, ForeignArchitectureIsRefused) {
    std::vector<uint8_t> bad = good_;
    ASSERT_EQ(layout_.arch, "llama");
    bad[layout_.arch_len_off + 4 + 4] = 'b';  // "llamb"
    expect_refused(bad, "foreign arch");
    bad = good_;
    poke<uint32_t>(bad, layout_.arch_len_off, 4);  // "llam", and every later field shifts
    expect_refused(bad, "shorter arch");
    bad = good_;
    poke<uint32_t>(bad, layout_.arch_len_off, 0xFFFFFFF0u);
    expect_refused(bad, "huge arch length");
}

TEST_F(StateCorrupt, OtherLayerCountIsRefused) {
    const std::string n = std::to_string(layout_.n_layer);
    std::vector<uint8_t> bad = good_;
    poke<uint32_t>(bad, layout_.n_layer_off, layout_.n_layer - 1);
    expect_refused(bad, "fewer layers",
                   "state has " + std::to_string(layout_.n_layer - 1) + " layers, this model has " + n);
    poke<uint32_t>(bad, layout_.n_layer_off, layout_.n_layer + 1);
    expect_refused(bad, "more layers",
                   "state has " + std::to_string(layout_.n_layer + 1) + " layers, this model has " + n);
}

// A state saved by a model of one layer less (the same architecture, every block well formed) is refused
// before anything changes, naming both layer counts: whole-context and sequence states alike.
TEST_F(StateCorrupt, WellFormedStateOfFewerLayersIsRefused) {
    ASSERT_GE(layout_.n_layer, 2u);
    const std::string reason = "state has " + std::to_string(layout_.n_layer - 1) +
                               " layers, this model has " + std::to_string(layout_.n_layer);
    const std::vector<uint8_t> fewer = without_last_layer(good_, layout_);
    const Layout l = parse_layout(fewer.data(), fewer.size(), false);  // well formed for n_layer - 1
    EXPECT_EQ(l.n_layer, layout_.n_layer - 1);
    EXPECT_EQ(l.end, fewer.size());
    expect_refused(fewer, "whole-context state of fewer layers", reason);
    const std::vector<uint8_t> fewer_seq = without_last_layer(good_seq_, seq_layout_);
    const Layout ls = parse_layout(fewer_seq.data(), fewer_seq.size(), true);
    EXPECT_EQ(ls.n_layer, seq_layout_.n_layer - 1);
    EXPECT_EQ(ls.end, fewer_seq.size());
    expect_seq_refused(fewer_seq, "sequence state of fewer layers", reason);
}

TEST_F(StateCorrupt, OtherVLayoutIsRefused) {
    std::vector<uint8_t> bad = good_;
    poke<uint32_t>(bad, layout_.v_trans_off, 0);
    expect_refused(bad, "v_trans 0");
}

TEST_F(StateCorrupt, OtherKvTypeIsRefused) {
    // A real F32-cache state loaded into the F16 context, and the patched type ids.
    CtxOptions o;
    o.n_seq_max = 2;
    o.type_k = GGML_TYPE_F32;
    o.type_v = GGML_TYPE_F32;
    llama_context *f32 = make_ctx(o);
    ASSERT_NE(f32, nullptr);
    fixture_run(f32);
    expect_refused(state_bytes(f32), "f32 cache state into f16 cache");
    EXPECT_EQ(llama_state_set_data(f32, good_.data(), good_.size()), 0u) << "f16 cache state into f32 cache";
    llama_free(f32);

    std::vector<uint8_t> bad = good_;
    poke<int32_t>(bad, layout_.k_type_off[2], GGML_TYPE_F32);
    expect_refused(bad, "K type of layer 2");
    bad = good_;
    poke<int32_t>(bad, layout_.v_type_off.back(), GGML_TYPE_Q8_0);
    expect_refused(bad, "V type of the last layer");
    bad = good_;
    poke<uint64_t>(bad, layout_.k_row_off[0], layout_.k_row * 2);
    expect_refused(bad, "K row size");
    bad = good_;
    poke<uint32_t>(bad, layout_.v_data_off[0] - 4, 16);  // n_embd_v_gqa of layer 0
    expect_refused(bad, "V channel count");
    bad = good_;
    poke<uint32_t>(bad, layout_.v_data_off[0] - 8, 4);  // v_element_size of layer 0
    expect_refused(bad, "V element size");
}

TEST_F(StateCorrupt, BadSequenceIdInACellIsRefused) {
    std::vector<uint8_t> bad = good_;
    const size_t seq_off = layout_.cell_nseq_off[3] + 4;  // first sequence id of cell 3
    poke<int32_t>(bad, seq_off, LCTX_MAX_SEQ);            // no cell can hold it
    expect_refused(bad, "seq id LCTX_MAX_SEQ");
    poke<int32_t>(bad, seq_off, -1);
    expect_refused(bad, "seq id -1");
    bad = good_;
    poke<uint32_t>(bad, layout_.cell_nseq_off[0], 0);
    expect_refused(bad, "cell without sequences");
    poke<uint32_t>(bad, layout_.cell_nseq_off[0], 1000000);
    expect_refused(bad, "cell with a million sequences");
    bad = good_;
    poke<int32_t>(bad, layout_.cell_pos_off[5], -7);
    expect_refused(bad, "negative position");
    poke<int32_t>(bad, layout_.cell_pos_off[5], -1);  // the edge: -1 marks an empty cell
    expect_refused(bad, "position -1");
}

TEST_F(StateCorrupt, CellCountAboveKvSizeIsRefused) {
    std::vector<uint8_t> bad = good_;
    poke<uint32_t>(bad, layout_.cell_count_off, llama_n_ctx(dst_) + 1);
    expect_refused(bad, "cell_count > n_ctx");
    poke<uint32_t>(bad, layout_.cell_count_off, 0xFFFFFFFFu);
    expect_refused(bad, "cell_count 2^32-1");

    // A real 40-cell state into a context of 32 cells.
    CtxOptions small;
    small.n_ctx = 32;
    small.n_seq_max = 2;
    llama_context *big_src = make_ctx();
    ASSERT_NE(big_src, nullptr);
    std::vector<llama_token> forty(40, 300);
    ASSERT_EQ(decode_seq(big_src, forty, 0, 0), 0);
    const std::vector<uint8_t> big = state_bytes(big_src);
    llama_context *tiny = make_ctx(small);
    ASSERT_NE(tiny, nullptr);
    const std::vector<uint8_t> tiny_before = state_bytes(tiny);
    EXPECT_EQ(llama_state_set_data(tiny, big.data(), big.size()), 0u);
    EXPECT_EQ(state_bytes(tiny), tiny_before);
    llama_free(big_src);
    llama_free(tiny);
}

// A sequence state that does not fit is refused before anything changes: the cells the destination
// sequence already holds (which the restore would replace) survive the refusal.
TEST_F(StateCorrupt, SequenceStateWithoutRoomLeavesTheDestinationAsItWas) {
    CtxOptions big, small;
    big.n_ctx = 64;
    big.n_seq_max = 2;
    small.n_ctx = 32;
    small.n_seq_max = 2;
    llama_context *src = make_ctx(big);
    llama_context *dst = make_ctx(small);
    ASSERT_NE(src, nullptr);
    ASSERT_NE(dst, nullptr);
    ASSERT_EQ(decode_seq(src, std::vector<llama_token>(20, 300), 0, 0), 0);
    const std::vector<uint8_t> twenty = seq_state_bytes(src, 0);
    ASSERT_EQ(decode_seq(dst, std::vector<llama_token>(4, 301), 0, 0), 0);   // the destination: 4 cells
    ASSERT_EQ(decode_seq(dst, std::vector<llama_token>(16, 302), 0, 1), 0);  // 12 free + 4 of seq 0 < 20
    const std::vector<uint8_t> before = state_bytes(dst);
    EXPECT_EQ(llama_state_seq_set_data(dst, twenty.data(), twenty.size(), 0), 0u);
    EXPECT_EQ(state_bytes(dst), before);
    llama_free(src);
    llama_free(dst);
}

TEST_F(StateCorrupt, BadOutputsAreRefused) {
    std::vector<uint8_t> bad = good_;
    poke<int32_t>(bad, layout_.n_outputs_off + 4, 64);  // output_pos[0] = n_batch
    expect_refused(bad, "output position >= n_batch");
    bad = good_;
    poke<uint64_t>(bad, layout_.logits_count_off, layout_.n_logits - 1);
    expect_refused(bad, "partial logits row");
    bad = good_;
    poke<uint32_t>(bad, layout_.n_outputs_off, 100000);
    expect_refused(bad, "n_outputs > n_batch");
}

// Each output of a state belongs to its own batch index: a state that maps two outputs to one index (no
// save writes one) is refused before anything changes, naming the index. The state of a batch with two
// outputs loads as it is (the control).
TEST_F(StateCorrupt, TwoOutputsOfOneBatchIndexAreRefused) {
    CtxOptions o;
    o.n_seq_max = 2;
    llama_context *two = make_ctx(o);
    ASSERT_NE(two, nullptr);
    const std::vector<llama_token> tokens = tokenize("One day, a little dog");
    ASSERT_GE(tokens.size(), 3u);
    llama_batch b = llama_batch_init(static_cast<int32_t>(tokens.size()), 0, 1);
    b.n_tokens = static_cast<int32_t>(tokens.size());
    for (size_t i = 0; i < tokens.size(); ++i) {
        b.token[i] = tokens[i];
        b.pos[i] = static_cast<llama_pos>(i);
        b.n_seq_id[i] = 1;
        b.seq_id[i][0] = 0;
        b.logits[i] = i + 2 >= tokens.size();  // the last two
    }
    ASSERT_EQ(llama_decode(two, b), 0);
    llama_batch_free(b);
    const std::vector<uint8_t> good = state_bytes(two);
    llama_free(two);
    const Layout l = parse_layout(good.data(), good.size(), false);
    ASSERT_EQ(l.n_outputs, 2u);
    const size_t ids = l.n_outputs_off + sizeof(uint32_t);
    const int32_t first = peek<int32_t>(good, ids), second = peek<int32_t>(good, ids + sizeof(int32_t));
    ASSERT_NE(first, second);
    std::vector<uint8_t> bad = good;
    poke<int32_t>(bad, ids + sizeof(int32_t), first);
    expect_refused(bad, "second output on the first's index",
                   "state maps two outputs to batch index " + std::to_string(first));
    bad = good;
    poke<int32_t>(bad, ids, second);
    expect_refused(bad, "first output on the second's index",
                   "state maps two outputs to batch index " + std::to_string(second));
    EXPECT_EQ(load(good, good.size()), good.size());
    EXPECT_EQ(state_bytes(dst_), good);
}

TEST_F(StateCorrupt, SequenceStateWithSequenceIdsIsRefused) {
    std::vector<uint8_t> bad = good_seq_;
    poke<uint32_t>(bad, seq_layout_.cell_nseq_off[0], 1);
    expect_seq_refused(bad, "n_seq_id 1 in a sequence file");
    EXPECT_EQ(load_seq(good_seq_, good_seq_.size(), LCTX_MAX_SEQ), 0u) << "dest outside [0, LCTX_MAX_SEQ)";
    EXPECT_EQ(load_seq(good_seq_, good_seq_.size(), -1), 0u) << "negative dest";
    EXPECT_EQ(state_bytes(dst_), before_);
    bad = good_seq_;
    poke<int32_t>(bad, seq_layout_.k_type_off[0], GGML_TYPE_F32);
    expect_seq_refused(bad, "K type in a sequence file");
}

TEST_F(StateCorrupt, BadSessionFilesAreRefused) {
    const std::vector<llama_token> tokens = fixture_tokens();
    const std::string path = temp_path("session.bin");
    ASSERT_TRUE(llama_state_save_file(src_, path.c_str(), tokens.data(), tokens.size()));
    std::vector<uint8_t> file;
    {
        std::ifstream f(path, std::ios::binary);
        file.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
    }
    std::vector<llama_token> out(64);
    size_t n = 0;
    auto refused = [&](const std::vector<uint8_t> &bytes, const char *what) {
        write_file(path, bytes);
        EXPECT_FALSE(llama_state_load_file(dst_, path.c_str(), out.data(), out.size(), &n)) << what;
        EXPECT_EQ(state_bytes(dst_), before_) << what;
    };
    std::vector<uint8_t> bad = file;
    poke<uint32_t>(bad, 0, 0x6767736fu);
    refused(bad, "wrong magic");
    bad = file;
    poke<uint32_t>(bad, 4, 8);
    refused(bad, "wrong version");
    bad = file;
    bad.push_back(0);
    refused(bad, "trailing byte");
    for (size_t len :
         {size_t{0}, size_t{3}, size_t{11}, size_t{40}, size_t{200}, file.size() / 2, file.size() - 1})
        refused(std::vector<uint8_t>(file.begin(), file.begin() + len), "truncated file");
    bad = file;
    poke<uint32_t>(bad, 8, 1000);
    refused(bad, "token count above the capacity");
    poke<uint32_t>(bad, 8, 40);
    refused(bad, "token count that eats into the state");
    EXPECT_FALSE(llama_state_load_file(dst_, (path + ".missing").c_str(), out.data(), out.size(), &n));

    // A sequence file is not a session file, and the other way round.
    write_file(path, file);
    EXPECT_EQ(llama_state_seq_load_file(dst_, path.c_str(), 0, out.data(), out.size(), &n), 0u);
    EXPECT_EQ(state_bytes(dst_), before_);
    EXPECT_FALSE(llama_state_load_file(dst_, state_fixture("seq0.bin").c_str(), out.data(), out.size(), &n));
    EXPECT_EQ(state_bytes(dst_), before_);

    write_file(path, file);  // control: the intact file loads
    EXPECT_TRUE(llama_state_load_file(dst_, path.c_str(), out.data(), out.size(), &n));
    EXPECT_EQ(n, tokens.size());
    std::remove(path.c_str());
}

TEST_F(StateCorrupt, SequenceFileWithTrailingDataIsRefused) {
    const std::string path = temp_path("seq.bin");
    ASSERT_GT(llama_state_seq_save_file(src_, path.c_str(), 0, nullptr, 0), 0u);
    std::vector<uint8_t> file;
    {
        std::ifstream f(path, std::ios::binary);
        file.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
    }
    file.push_back(7);
    write_file(path, file);
    size_t n = 0;
    EXPECT_EQ(llama_state_seq_load_file(dst_, path.c_str(), 0, nullptr, 0, &n), 0u);
    EXPECT_EQ(state_bytes(dst_), before_);
    std::remove(path.c_str());
}

}  // namespace
}  // namespace state_corrupt_test
