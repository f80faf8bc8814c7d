// Files quantized by lctx load in llama.cpp (the npm peer library, when installed) and generate the same
// greedy tokens there as in lctx. Skipped only where the peer is absent.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>
#include <unordered_map>

#include "../../tools/lctx/bench_peer.h"
#include "context/context.h"
#include "gguf/gguf.h"
#include "model/model.h"
#include "quantize/file_types.h"
#include "quantize/model_quantizer.h"
#include "vocab/vocab.h"

namespace lctx::quantize::peer_quantize_test {
namespace {

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

// Greedy ids, and at each step the gap between the best and the second-best logit.
std::vector<int32_t> lctx_greedy(const std::string &path, const std::vector<int32_t> &prompt, int n_gen,
                                 std::vector<float> *gaps) {
    std::unique_ptr<Model> m = Model::load(path);
    ContextParams cp;
    cp.n_ctx = static_cast<uint32_t>(prompt.size() + n_gen + 8);
    cp.n_batch = cp.n_ubatch = cp.n_ctx;
    Context ctx(*m, cp);
    std::vector<int32_t> ids;
    std::vector<int32_t> toks = prompt;
    std::vector<int32_t> pos(toks.size());
    for (size_t i = 0; i < pos.size(); ++i) pos[i] = static_cast<int32_t>(i);
    for (int g = 0; g < n_gen; ++g) {
        Batch b;
        b.n_tokens = static_cast<int32_t>(toks.size());
        b.token = toks.data();
        b.pos = pos.data();
        EXPECT_EQ(ctx.decode(b), DecodeStatus::Ok);
        const float *l = ctx.logits_ith(-1);
        if (!l) return ids;
        int32_t best = 0;
        for (int32_t k = 1; k < static_cast<int32_t>(m->hparams().n_vocab); ++k)
            if (l[k] > l[best]) best = k;
        float second = -INFINITY;
        for (int32_t k = 0; k < static_cast<int32_t>(m->hparams().n_vocab); ++k)
            if (k != best) second = std::max(second, l[k]);
        gaps->push_back(l[best] - second);
        ids.push_back(best);
        const int32_t next_pos = pos.back() + 1;
        toks = {best};
        pos = {next_pos};
    }
    return ids;
}

struct PeerCase {
    const char *input;
    const char *type;
    bool imatrix = false;  // quantized with (random) importance weights: the weighted quantizers' blocks
};

// Random importance for every matrix of a model.
std::unordered_map<std::string, std::vector<float>> random_imatrix(const std::string &path) {
    std::unique_ptr<gguf::File> f = gguf::File::open(path);
    std::unordered_map<std::string, std::vector<float>> im;
    std::mt19937 rng(11);
    std::uniform_real_distribution<float> u(0.01f, 10.0f);
    for (const gguf::TensorInfo &t : f->tensors()) {
        if (t.ne.size() < 2) continue;
        std::vector<float> v(static_cast<size_t>(t.ne[0]));
        for (float &x : v) x = u(rng);
        im[t.name] = v;
    }
    return im;
}

class PeerQuantized : public ::testing::TestWithParam<PeerCase> {};

TEST_P(PeerQuantized, LlamaCppLoadsItAndGeneratesTheSameTokens) {
    std::string lib = bench::default_peer_dir();
    if (!lib.empty()) lib = bench::resolve_peer_lib_dir(lib);
    const std::string exe = bench::find_peer_binary();
    if (lib.empty() || exe.empty())
        GTEST_SKIP() << "peer not installed (scripts/install-peer.sh) or not built";
    const PeerCase &c = GetParam();
    const std::string in = std::string(LCTX_FIXTURES_DIR) + "/golden/models/" + c.input;
    const std::string out = (std::filesystem::temp_directory_path() /
                             ("lctx_peer_q_" + std::to_string(getpid()) + "_" + c.type + ".gguf"))
                                .string();
    Options o;
    o.ftype = parse_file_type(c.type)->id;
    const std::unordered_map<std::string, std::vector<float>> im = random_imatrix(in);
    if (c.imatrix) o.imatrix = &im;
    quantize_model(in, out, o);
    const int n_gen = 16;
    const std::string text = "Once upon a time";
    const std::string got = run(exe + " --lib '" + lib + "' -m '" + out + "' --generate '" + text + "' -n " +
                                std::to_string(n_gen) + " 2>/dev/null");
    const nlohmann::json j = nlohmann::json::parse(got, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << "llama.cpp did not load " << out << ": " << got;
    const std::vector<int32_t> prompt = j["prompt_ids"].get<std::vector<int32_t>>();
    const std::vector<int32_t> want = j["ids"].get<std::vector<int32_t>>();
    std::vector<float> gaps;
    const std::vector<int32_t> mine = lctx_greedy(out, prompt, n_gen, &gaps);
    std::filesystem::remove(out);
    ASSERT_EQ(mine.size(), want.size());
    // The same tokens, up to a near-tie: where lctx's two best logits are closer than the two engines' logits
    // may differ (f16 KV cache, other summation order: ~2e-2 each, fixtures/golden/FORMAT.md), either token
    // is right and the streams may part there (on the synthetic llama's random weights they do, once).
    constexpr float kNearTie = 0.05f;
    size_t k = 0;
    while (k < mine.size() && mine[k] == want[k]) ++k;
    if (k < mine.size()) {
        std::printf("[ note ] %s as %s: streams part at token %zu, where lctx's top-2 gap is %.3g\n", c.input,
                    c.type, k, gaps[k]);
        EXPECT_LT(gaps[k], kNearTie) << c.input << " as " << c.type << ": token " << k << " differs (lctx "
                                     << mine[k] << ", llama.cpp " << want[k] << ") with a clear margin";
    }
}

INSTANTIATE_TEST_SUITE_P(
    Types, PeerQuantized,
    ::testing::Values(PeerCase{"stories260K.gguf", "Q4_K_M"}, PeerCase{"stories260K.gguf", "Q6_K"},
                      PeerCase{"stories260K.gguf", "Q2_K"}, PeerCase{"stories260K.gguf", "Q3_K_L"},
                      PeerCase{"stories260K.gguf", "IQ4_XS"}, PeerCase{"stories260K.gguf", "BF16"},
                      PeerCase{"llama-F16.gguf", "Q4_0"}, PeerCase{"llama-F16.gguf", "Q5_1"},
                      PeerCase{"llama-F16.gguf", "Q8_0"}, PeerCase{"llama-F16.gguf", "IQ4_NL"},
                      PeerCase{"stories260K.gguf", "Q4_K_M", true},
                      PeerCase{"stories260K.gguf", "Q2_K", true}, PeerCase{"llama-F16.gguf", "Q4_K_M", true},
                      PeerCase{"llama-F16.gguf", "Q3_K_S", true}),
    [](const ::testing::TestParamInfo<PeerCase> &i) {
        std::string n = std::string(i.param.input).substr(0, 5) + "_" + i.param.type +
                        (i.param.imatrix ? "_imatrix" : "");
        for (char &ch : n)
            if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
        return n;
    });

}  // namespace
}  // namespace lctx::quantize::peer_quantize_test
