// Encoders against llama.cpp itself (when its peer is installed): lctx's pooled embedding (or rank score) of
// a text on small synthetic bert, nomic-bert and reranker models equals the one lctx-peer-bench --embed
// prints. The golden cases cover bert only; this covers what they do not: nomic-bert's rotary positions,
// fused q|k|v and SwiGLU, and a reranker's head, against llama.cpp's own graph.
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <ostream>

#include "../../tools/lctx/bench_peer.h"
#include "../../tools/lctx/synth_model.h"
#include "context/context.h"
#include "model/model.h"
#include "vocab/vocab.h"

namespace lctx::peer_embed_test {
namespace {

std::string peer_exe() {
    std::error_code ec;
    const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    const std::filesystem::path p = exe.parent_path() / "lctx-peer-bench";
    return !ec && std::filesystem::exists(p, ec) ? p.string() : "";
}

std::string run(const std::string &cmd) {
    std::string out;
    FILE *p = popen(cmd.c_str(), "r");
    if (!p) return out;
    std::array<char, 4096> buf;
    size_t n;
    while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
    pclose(p);
    return out;
}

struct Case {
    const char *shape;
    PoolingType pooling;
};

void PrintTo(const Case &c, std::ostream *os) {
    *os << c.shape << " pooling " << static_cast<int>(c.pooling);
}

class PeerEmbedding : public ::testing::TestWithParam<Case> {};

// F32 weights: what differs is the summation order, and where it moves a GELU input to the neighbouring half,
// a text's rows by up to ~5e-4 (tests/model/golden_embd_test.cpp); nomic-bert has no GELU (SwiGLU).
TEST_P(PeerEmbedding, MatchesLlamaCpp) {
    const char *home = std::getenv("HOME");
    std::string lib = bench::default_peer_dir();
    if (lib.empty()) lib = std::string(home ? home : "") + "/.cache/lctx/peer";
    lib = bench::resolve_peer_lib_dir(lib);
    const std::string exe = peer_exe();
    if (lib.empty() || exe.empty())
        GTEST_SKIP() << "peer not installed (scripts/install-peer.sh) or not built";

    const Case &c = GetParam();
    const synth::Shape *shape = synth::find_shape(c.shape);
    ASSERT_NE(shape, nullptr);
    synth::TypeChoice type;
    ASSERT_TRUE(synth::parse_type("F32", &type));
    synth::Options opts;
    opts.vocab_path = std::string(LCTX_FIXTURES_DIR) + "/vocab/" + shape->vocab_file;
    opts.n_threads = 1;
    const std::string path = (std::filesystem::temp_directory_path() /
                              ("lctx_peer_embd_" + std::to_string(getpid()) + "_" + c.shape + ".gguf"))
                                 .string();
    synth::write_model(*shape, type, path, opts);
    const std::string text = "The quick brown fox jumps over the lazy dog, then runs far into the forest.";
    const std::string out =
        run(exe + " --lib '" + lib + "' -m '" + path + "' --embed '" + text + "' --pooling " +
            std::to_string(static_cast<int>(c.pooling)) + " 2>/dev/null");
    auto model = Model::load(path);
    std::filesystem::remove(path);
    const nlohmann::json j = nlohmann::json::parse(out, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << out;
    ASSERT_TRUE(j.contains("rows")) << out;
    const std::vector<float> want = j["rows"][0].get<std::vector<float>>();

    ContextParams cp;
    cp.n_ctx = 64;
    cp.n_batch = cp.n_ubatch = 64;
    cp.embeddings = true;
    cp.pooling = c.pooling;
    Context ctx(*model, cp);
    const std::vector<int32_t> ids = model->vocab().tokenize(text, true, false);
    ASSERT_EQ(static_cast<int>(ids.size()), j["n_tokens"].get<int>());
    Batch b;
    b.n_tokens = static_cast<int32_t>(ids.size());
    b.token = ids.data();
    ASSERT_EQ(ctx.encode(b), DecodeStatus::Ok);
    const float *got = ctx.embeddings_seq(0);
    ASSERT_NE(got, nullptr);
    ASSERT_EQ(want.size(), c.pooling == PoolingType::Rank ? 1u : model->hparams().n_embd);
    float max_diff = 0;
    for (size_t k = 0; k < want.size(); ++k) max_diff = std::max(max_diff, std::fabs(got[k] - want[k]));
    std::printf("[ %s ] max |diff| to llama.cpp = %.3g\n", c.shape, max_diff);
    EXPECT_LE(max_diff, 2e-3f);
}

INSTANTIATE_TEST_SUITE_P(
    Encoders, PeerEmbedding,
    ::testing::Values(Case{"bert-tiny", PoolingType::Mean}, Case{"nomic-bert-tiny", PoolingType::Mean},
                      Case{"nomic-bert-tiny", PoolingType::Cls}, Case{"bert-rerank-tiny", PoolingType::Rank}),
    [](const ::testing::TestParamInfo<Case> &i) {
        std::string n = std::string(i.param.shape) + "_" + std::to_string(static_cast<int>(i.param.pooling));
        for (char &ch : n)
            if (ch == '-') ch = '_';
        return n;
    });

}  // namespace
}  // namespace lctx::peer_embed_test
