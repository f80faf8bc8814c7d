// lctx bench's compute roofline: the arithmetic a prompt token costs (checked against the shapes written
// out by hand), which peak a model's weights are held against, and a probe that gives a believable peak.
#include "../../tools/lctx/bench_roofline.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "../../tools/lctx/bench_core.h"
#include "../../tools/lctx/synth_model.h"
#include "kernels/dot.h"

namespace lctx::bench::bench_roofline_test {
namespace {

const std::string kStories = std::string(LCTX_MODELS_DIR) + "/stories260K.gguf";
const std::string kLlamaQ4 = std::string(LCTX_FIXTURES_DIR) + "/golden/models/llama-Q4_0.gguf";

// A llama layer's matrices from its hyper-parameters: q and o (n_embd x n_embd), k and v (n_embd x
// n_embd_kv), gate, up and down (n_embd x n_ff); plus the output projection (n_embd x n_vocab).
uint64_t llama_macs(const HParams &hp) {
    const uint64_t e = hp.n_embd, kv = hp.n_embd_k_gqa(), ff = hp.n_ff;
    return hp.n_layer * (2 * e * e + 2 * e * kv + 3 * e * ff) + e * hp.n_vocab;
}

TEST(BenchRoofline, OperationsPerTokenFromTheShapes) {
    for (const std::string &path : {kStories, kLlamaQ4}) {
        std::unique_ptr<Model> m = Model::load(path);
        const HParams &hp = m->hparams();
        const ComputeFacts f = compute_facts(*m);
        EXPECT_EQ(f.matmul_macs, llama_macs(hp)) << path;
        EXPECT_EQ(f.attn_macs_per_key,
                  static_cast<uint64_t>(hp.n_layer) * hp.n_head * (hp.n_embd_head_k + hp.n_embd_head_v));
        // One token on an empty cache attends to itself; a prompt of n to (n + 1) / 2 keys on average, plus
        // the depth.
        EXPECT_DOUBLE_EQ(ops_per_prompt_token(f, 1, 0),
                         2.0 * static_cast<double>(f.matmul_macs + f.attn_macs_per_key));
        EXPECT_DOUBLE_EQ(ops_per_prompt_token(f, 511, 100) - ops_per_prompt_token(f, 1, 0),
                         2.0 * static_cast<double>(f.attn_macs_per_key) * (100 + 255));
    }
}

TEST(BenchRoofline, QuantizedWeightsAreHeldAgainstTheInt8Peak) {
    EXPECT_EQ(compute_facts(*Model::load(kStories)).kind, PeakKind::F32Fma);  // all F32
    EXPECT_EQ(compute_facts(*Model::load(kLlamaQ4)).kind, PeakKind::Int8Dot);
}

// BF16 weights run on bf16 dot products where the level has them (vdpbf16ps, AVX-512), F16 ones on f32 FMAs.
TEST(BenchRoofline, Bf16WeightsAreHeldAgainstTheBf16Peak) {
    const synth::Shape *shape = synth::find_shape("tiny");
    ASSERT_NE(shape, nullptr);
    for (const char *type : {"BF16", "F16"}) {
        synth::TypeChoice choice;
        ASSERT_TRUE(synth::parse_type(type, &choice));
        synth::Options opts;
        opts.vocab_path = std::string(LCTX_FIXTURES_DIR) + "/vocab/" + shape->vocab_file;
        const std::string path = (std::filesystem::temp_directory_path() /
                                  ("lctx_roofline_" + std::to_string(getpid()) + "_" + type + ".gguf"))
                                     .string();
        synth::write_model(*shape, choice, path, opts);
        const PeakKind kind = compute_facts(*Model::load(path)).kind;
        std::filesystem::remove(path);
        const bool bf16_dots = kernels::isa_at_least(kernels::isa_active(), kernels::Isa::Avx512);
        EXPECT_EQ(kind, std::string(type) == "BF16" && bf16_dots ? PeakKind::Bf16Dot : PeakKind::F32Fma)
            << type;
    }
}

TEST(BenchRoofline, PeakProbesAreBelievable) {
    for (PeakKind kind : {PeakKind::F32Fma, PeakKind::Int8Dot, PeakKind::Bf16Dot}) {
        const double one = compute_peak(kind, 1);
        EXPECT_GT(one, 1e8) << peak_kind_name(kind);   // 0.1 G/s: slower than any machine this runs on
        EXPECT_LT(one, 1e13) << peak_kind_name(kind);  // 10 T/s from one core: faster than any
    }
}

TEST(BenchRoofline, PromptRowsReportTheirFractionOfThePeak) {
    Result pp;
    pp.engine = "lctx";
    pp.n_prompt = 100;
    pp.samples_ns = {1000000000u};  // 100 t/s
    pp.ops_per_token = 2e9;
    pp.peak_ops = 1e12;  // 100 t/s x 2 G = 20% of it
    pp.peak_kind = peak_kind_name(PeakKind::Int8Dot);
    const nlohmann::json j = to_json(pp, lctx_build_info(), "cpu");
    EXPECT_NEAR(j.value("frac_of_peak", 0.0), 0.2, 1e-12);
    EXPECT_EQ(j.value("peak_kind", ""), "int8 dot");
    EXPECT_NE(markdown({pp}).find("| 20.0% |"), std::string::npos) << markdown({pp});
    Result tg = pp;  // generation is held against the bandwidth, not the compute peak
    tg.n_prompt = 0;
    tg.n_gen = 100;
    EXPECT_FALSE(to_json(tg, lctx_build_info(), "cpu").contains("frac_of_peak"));
}

}  // namespace
}  // namespace lctx::bench::bench_roofline_test
