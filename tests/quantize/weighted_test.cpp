// Importance weights: the weighted quantizers lower the importance-weighted error against the reference ones,
// types without one ignore the weights, the imatrix files of llama-imatrix read back, and a model quantized
// with an importance matrix loads and runs.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "context/context.h"
#include "gguf/gguf.h"
#include "model/model.h"
#include "quantize/file_types.h"
#include "quantize/imatrix.h"
#include "quantize/model_quantizer.h"
#include "quantize/row_quantizer.h"
#include "quantize/weighted_quants.h"
#include "util/error.h"

namespace lctx::quantize::weighted_test {
namespace {

namespace fs = std::filesystem;

std::string temp_file(const std::string &name) {
    return (fs::temp_directory_path() / ("lctx_qw_" + std::to_string(getpid()) + "_" + name)).string();
}

struct Data {
    int64_t n = 512, rows = 64;
    std::vector<float> x, imp;
};

// Rows with a few outliers; importance spread over two orders of magnitude, as activations' squares are.
Data make_data(uint32_t seed) {
    Data d;
    std::mt19937 rng(seed);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    d.x.resize(static_cast<size_t>(d.n * d.rows));
    for (float &v : d.x) v = nd(rng) * (rng() % 50 == 0 ? 6.0f : 1.0f);
    d.imp.resize(static_cast<size_t>(d.n));
    for (float &v : d.imp) v = std::exp(2.0f * nd(rng));
    return d;
}

// sum_j importance_j (x_j - y_j)^2 over every row; with row_term, each weight times sqrt(sigma^2 + x_j^2)
// (sigma^2: the row's mean square), the weights the quantizers minimize with.
double importance_error(GgmlType type, const Data &d, const std::vector<uint8_t> &q, bool row_term = false) {
    const size_t rb = row_size(type, d.n);
    std::vector<float> y(static_cast<size_t>(d.n));
    double e = 0;
    for (int64_t r = 0; r < d.rows; ++r) {
        const float *x = d.x.data() + r * d.n;
        double s2 = 0;
        for (int64_t j = 0; j < d.n; ++j) s2 += static_cast<double>(x[j]) * x[j];
        s2 /= static_cast<double>(d.n);
        dequantize_row(type, q.data() + static_cast<size_t>(r) * rb, y.data(), d.n);
        for (int64_t j = 0; j < d.n; ++j) {
            const double diff = x[j] - y[static_cast<size_t>(j)];
            const double w = d.imp[static_cast<size_t>(j)] * (row_term ? std::sqrt(s2 + x[j] * x[j]) : 1.0);
            e += w * diff * diff;
        }
    }
    return e;
}

class WeightedType : public ::testing::TestWithParam<GgmlType> {};

TEST_P(WeightedType, LowersTheImportanceWeightedError) {
    const GgmlType type = GetParam();
    ASSERT_NE(weighted_quantizer(type), nullptr);
    for (uint32_t seed : {1u, 2u, 3u}) {
        const Data d = make_data(seed);
        std::vector<uint8_t> plain(row_size(type, d.n) * static_cast<size_t>(d.rows)), weighted(plain.size());
        quantize_rows(type, d.x.data(), plain.data(), d.rows, d.n, nullptr, 1);
        quantize_rows(type, d.x.data(), weighted.data(), d.rows, d.n, d.imp.data(), 2);
        const double ep = importance_error(type, d, plain), ew = importance_error(type, d, weighted);
        std::printf("[ weighted/plain ] %s seed %u: %.3f\n", type_name(type), seed, ew / ep);
        EXPECT_LT(ew, 0.97 * ep) << type_name(type) << " seed " << seed << ": weighted " << ew << ", plain "
                                 << ep;
        // On the weights it minimizes it is never worse than the reference (that is always a candidate), even
        // with uniform importance.
        EXPECT_LE(importance_error(type, d, weighted, true), importance_error(type, d, plain, true) * 1.0001);
        Data u = d;
        u.imp.assign(static_cast<size_t>(d.n), 1.0f);
        quantize_rows(type, d.x.data(), weighted.data(), d.rows, d.n, u.imp.data(), 1);
        EXPECT_LE(importance_error(type, u, weighted, true), importance_error(type, u, plain, true) * 1.0001);
    }
}

INSTANTIATE_TEST_SUITE_P(Types, WeightedType,
                         ::testing::Values(GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1,
                                           GgmlType::IQ4_NL, GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::Q4_K,
                                           GgmlType::Q5_K, GgmlType::Q6_K, GgmlType::IQ4_XS),
                         [](const ::testing::TestParamInfo<GgmlType> &i) {
                             return std::string(type_name(i.param));
                         });

TEST(Weighted, TypesWithoutAWeightedQuantizerIgnoreTheWeights) {
    const Data d = make_data(7);
    for (GgmlType type : {GgmlType::Q8_0, GgmlType::F16, GgmlType::BF16}) {
        if (takes_importance(type)) continue;
        std::vector<uint8_t> a(row_size(type, d.n) * static_cast<size_t>(d.rows)), b(a.size());
        quantize_rows(type, d.x.data(), a.data(), d.rows, d.n, nullptr, 1);
        quantize_rows(type, d.x.data(), b.data(), d.rows, d.n, d.imp.data(), 1);
        EXPECT_EQ(a, b) << type_name(type);
    }
}

template <typename T>
void put(std::ofstream &o, T v) {
    o.write(reinterpret_cast<const char *>(&v), sizeof v);
}

void write_legacy(const std::string &path,
                  const std::vector<std::pair<std::string, std::vector<float>>> &entries, int ncall,
                  bool trailer) {
    std::ofstream o(path, std::ios::binary);
    put<int32_t>(o, static_cast<int32_t>(entries.size()));
    for (const auto &[name, v] : entries) {
        put<int32_t>(o, static_cast<int32_t>(name.size()));
        o.write(name.data(), static_cast<std::streamsize>(name.size()));
        put<int32_t>(o, ncall);
        put<int32_t>(o, static_cast<int32_t>(v.size()));
        o.write(reinterpret_cast<const char *>(v.data()),
                static_cast<std::streamsize>(v.size() * sizeof(float)));
    }
    if (trailer) {
        put<int32_t>(o, 17);
        const std::string ds = "wiki.train.raw";
        put<int32_t>(o, static_cast<int32_t>(ds.size()));
        o.write(ds.data(), static_cast<std::streamsize>(ds.size()));
    }
}

TEST(Imatrix, ReadsTheLegacyFormatDividedByCalls) {
    const std::string p = temp_file("legacy.dat");
    write_legacy(p, {{"blk.0.ffn_up.weight", {2, 4, 6}}, {"output.weight", {8}}}, 2, true);
    const ImportanceMatrix m = load_imatrix(p);
    ASSERT_EQ(m.values.size(), 2u);
    EXPECT_EQ(m.values.at("blk.0.ffn_up.weight"), (std::vector<float>{1, 2, 3}));
    EXPECT_EQ(m.values.at("output.weight"), (std::vector<float>{4}));
    EXPECT_EQ(m.chunks, 17);
    EXPECT_EQ(m.dataset, "wiki.train.raw");
    write_legacy(p, {{"a.weight", {1, 2}}}, 1, false);  // older files end after the entries
    EXPECT_EQ(load_imatrix(p).values.at("a.weight"), (std::vector<float>{1, 2}));
    fs::resize_file(p, 20);
    EXPECT_THROW(load_imatrix(p), Error);  // cut inside an entry
    write_legacy(p, {{"a.weight", {1, -2}}}, 1, false);
    EXPECT_THROW(load_imatrix(p), Error);  // negative importance
    EXPECT_THROW(load_imatrix(temp_file("missing.dat")), Error);
    fs::remove(p);
}

TEST(Imatrix, ReadsTheGgufFormat) {
    gguf::Writer w;
    w.set_u32("imatrix.chunk_count", 5);
    w.set_string_array("imatrix.datasets", {"data.txt"});
    const std::vector<float> sums = {3, 6, 9, 12}, counts = {3, 6};  // two experts of 2 columns
    w.add_tensor("blk.0.ffn_up_exps.weight.in_sum2", GgmlType::F32, {2, 2}, sums.data(), sums.size() * 4);
    w.add_tensor("blk.0.ffn_up_exps.weight.counts", GgmlType::F32, {1, 2}, counts.data(), counts.size() * 4);
    const std::string p = temp_file("im.gguf");
    w.write_file(p);
    const ImportanceMatrix m = load_imatrix(p);
    EXPECT_EQ(m.values.at("blk.0.ffn_up_exps.weight"), (std::vector<float>{1, 2, 1.5f, 2}));
    EXPECT_EQ(m.chunks, 5);
    EXPECT_EQ(m.dataset, "data.txt");
    fs::remove(p);
}

// An importance matrix for every matrix of the synthetic llama; the quantized model loads and runs, the
// weighted tensors differ from the unweighted ones, Q2_K_S (which needs one) works with it only.
TEST(Imatrix, QuantizedModelLoadsAndRuns) {
    const std::string in = std::string(LCTX_FIXTURES_DIR) + "/golden/models/llama-F16.gguf";
    std::unique_ptr<gguf::File> f = gguf::File::open(in);
    std::unordered_map<std::string, std::vector<float>> im;
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> u(0.01f, 10.0f);
    for (const gguf::TensorInfo &t : f->tensors()) {
        if (t.ne.size() < 2) continue;
        std::vector<float> v(static_cast<size_t>(t.ne[0]));
        for (float &x : v) x = u(rng);
        im[t.name] = v;
    }
    const std::string out = temp_file("im-q4_0.gguf"), plain = temp_file("plain-q4_0.gguf");
    Options o;
    o.ftype = kFtypeQ4_0;
    quantize_model(in, plain, o);
    o.imatrix = &im;
    quantize_model(in, out, o);
    {
        std::unique_ptr<gguf::File> a = gguf::File::open(out), b = gguf::File::open(plain);
        const gguf::TensorInfo *ta = a->find_tensor("blk.0.attn_q.weight"),
                               *tb = b->find_tensor("blk.0.attn_q.weight");
        ASSERT_TRUE(ta && tb);
        EXPECT_NE(std::memcmp(a->tensor_data(*ta), b->tensor_data(*tb), ta->nbytes), 0);
        std::unique_ptr<Model> m = Model::load(out);
        ContextParams cp;
        cp.n_ctx = 16;
        Context ctx(*m, cp);
        const int32_t tok = 1;
        Batch bt;
        bt.n_tokens = 1;
        bt.token = &tok;
        ASSERT_EQ(ctx.decode(bt), DecodeStatus::Ok);
        const float *logits = ctx.logits_ith(0);
        ASSERT_NE(logits, nullptr);
        for (uint32_t i = 0; i < m->hparams().n_vocab; ++i) ASSERT_TRUE(std::isfinite(logits[i]));
    }
    Options s;
    s.ftype = kFtypeQ2_K_S;
    EXPECT_THROW(quantize_model(in, out, s), Error);
    s.imatrix = &im;
    EXPECT_NO_THROW(quantize_model(in, out, s));
    // An entry whose size does not match its tensor is refused.
    im["blk.0.attn_q.weight"].resize(3);
    EXPECT_THROW(quantize_model(in, out, o), Error);
    fs::remove(out);
    fs::remove(plain);
}

}  // namespace
}  // namespace lctx::quantize::weighted_test
