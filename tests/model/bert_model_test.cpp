// The bert family beyond its golden cases: what it reads from the file, sequences of one batch that never see
// each other, the batches it refuses (positions beyond its learned ones, logits it has no matrix for, a
// sequence cut across micro-batches), and rank pooling against the classification head computed in double
// from the weights of a synthetic reranker.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "../../tools/lctx/synth_model.h"
#include "context/context.h"
#include "gguf/gguf.h"
#include "model/cls_head.h"
#include "model/model.h"
#include "tensor/types.h"
#include "vocab/vocab.h"

namespace lctx::bert_model_test {
namespace {

const std::string kBert = std::string(LCTX_FIXTURES_DIR) + "/golden/models/bert.gguf";

struct Seqs {
    std::vector<int32_t> tok, pos, sid, nseq;
    std::vector<int32_t *> sids;
    std::vector<int8_t> want;
    std::vector<size_t> len;
    Batch batch() {
        sids.resize(sid.size());
        for (size_t i = 0; i < sid.size(); ++i) sids[i] = &sid[i];
        nseq.assign(tok.size(), 1);
        want.assign(tok.size(), 1);
        Batch b;
        b.n_tokens = static_cast<int32_t>(tok.size());
        b.token = tok.data();
        b.pos = pos.data();
        b.n_seq_id = nseq.data();
        b.seq_id = sids.data();
        b.logits = want.data();
        return b;
    }
};

// The token sequences back to back, sequence i in seq0 + i at positions 0...
Seqs tokens_batch(const std::vector<std::vector<int32_t>> &seqs, int32_t seq0 = 0) {
    Seqs s;
    for (size_t i = 0; i < seqs.size(); ++i) {
        for (size_t k = 0; k < seqs[i].size(); ++k) {
            s.tok.push_back(seqs[i][k]);
            s.pos.push_back(static_cast<int32_t>(k));
            s.sid.push_back(seq0 + static_cast<int32_t>(i));
        }
        s.len.push_back(seqs[i].size());
    }
    return s;
}

// The texts, tokenized, back to back (tokens_batch).
Seqs texts_batch(const Model &m, const std::vector<std::string> &texts, int32_t seq0 = 0) {
    std::vector<std::vector<int32_t>> seqs;
    for (const std::string &t : texts) seqs.push_back(m.vocab().tokenize(t, true, false));
    return tokens_batch(seqs, seq0);
}

ContextParams embd_params(PoolingType pooling, uint32_t n_ubatch = 128) {
    ContextParams p;
    p.n_ctx = 256;
    p.n_batch = 256;
    p.n_ubatch = n_ubatch;
    p.n_seq_max = 4;
    p.embeddings = true;
    p.pooling = pooling;
    p.type_k = p.type_v = GgmlType::F32;
    return p;
}

const std::vector<std::string> kTexts = {"hello world", "The quick brown fox jumps over the lazy dog.",
                                         "an encoder sees the whole sequence"};

TEST(Bert, ReadsItsHyperParameters) {
    auto m = Model::load(kBert);
    const HParams &hp = m->hparams();
    EXPECT_EQ(hp.arch, Arch::Bert);
    EXPECT_FALSE(hp.causal_attn);
    EXPECT_EQ(hp.pooling_type, 2);  // CLS
    EXPECT_TRUE(hp.abs_pos_embd);
    EXPECT_EQ(hp.n_token_types, 2u);
    EXPECT_FLOAT_EQ(hp.norm_eps, 1e-12f);
    EXPECT_FALSE(has_cls_head(m->weights()));
    EXPECT_EQ(m->description().rfind("bert ", 0), 0u) << m->description();
}

// Each text pooled alone (one per batch) equals the same text among others in one batch: a token never
// attends to another sequence.
TEST(Bert, SequencesOfOneBatchAreIndependent) {
    auto m = Model::load(kBert);
    for (PoolingType pooling : {PoolingType::Mean, PoolingType::Cls, PoolingType::Last}) {
        Context together(*m, embd_params(pooling));
        Seqs all = texts_batch(*m, kTexts);
        ASSERT_EQ(together.decode(all.batch()), DecodeStatus::Ok);
        for (size_t i = 0; i < kTexts.size(); ++i) {
            Context alone(*m, embd_params(pooling));
            Seqs one = texts_batch(*m, {kTexts[i]});
            ASSERT_EQ(alone.decode(one.batch()), DecodeStatus::Ok);
            const float *a = together.embeddings_seq(static_cast<int32_t>(i));
            const float *b = alone.embeddings_seq(0);
            ASSERT_TRUE(a && b);
            for (uint32_t k = 0; k < m->hparams().n_embd; ++k)
                EXPECT_EQ(a[k], b[k]) << "pooling " << static_cast<int>(pooling) << " text " << i;
        }
    }
}

// Sequences of mixed lengths, so that the attention's work items hold rows of two or three of them: each
// vector is the bits of its sequence alone, wherever the sequence starts in the batch (before, an item across
// sequences took the dot products where one sequence's item took the turned key blocks on AVX-512, and a
// vector moved in its last bits with its place).
TEST(Bert, AVectorIsTheSameWhereverItsSequenceStarts) {
    auto m = Model::load(kBert);
    const std::vector<int> lens = {5, 23, 40, 17, 9, 31};
    std::vector<std::vector<int32_t>> seqs;
    uint32_t state = 7;
    for (int len : lens) {
        std::vector<int32_t> t(len);
        for (int32_t &id : t) {
            state = state * 1664525u + 1013904223u;
            id = static_cast<int32_t>((state >> 8) % m->hparams().n_vocab);
        }
        seqs.push_back(t);
    }
    ContextParams p = embd_params(PoolingType::Mean);
    p.n_seq_max = 8;
    Context together(*m, p);
    Seqs all = tokens_batch(seqs);
    ASSERT_EQ(together.decode(all.batch()), DecodeStatus::Ok);
    for (size_t i = 0; i < seqs.size(); ++i) {
        Context alone(*m, p);
        Seqs one = tokens_batch({seqs[i]});
        ASSERT_EQ(alone.decode(one.batch()), DecodeStatus::Ok);
        const float *a = together.embeddings_seq(static_cast<int32_t>(i));
        const float *b = alone.embeddings_seq(0);
        ASSERT_TRUE(a && b);
        for (uint32_t k = 0; k < m->hparams().n_embd; ++k)
            ASSERT_EQ(a[k], b[k]) << "sequence " << i << ", " << k;
    }
}

// An encoder's layers attend their K and V rows where the projections put them (model/blocks.h keep_kv): the
// encoder's cells hold no keys or values afterwards (their pages never written, so never committed), and the
// embeddings are those of the golden tests.
TEST(Bert, AnEncoderPassStoresNoKeysOrValues) {
    auto m = Model::load(kBert);
    Context ctx(*m, embd_params(PoolingType::Mean));
    Seqs all = texts_batch(*m, kTexts);
    ASSERT_EQ(ctx.decode(all.batch()), DecodeStatus::Ok);
    ASSERT_NE(ctx.embeddings_seq(0), nullptr);
    const KvCache *cells = ctx.encoder_cells();
    ASSERT_NE(cells, nullptr);
    const KvView &v = cells->view();
    for (uint32_t il = 0; il < m->hparams().n_layer; ++il) {
        bool zero = true;
        for (size_t i = 0; i < v.size * v.k_row_bytes && zero; ++i) zero = v.k[il][i] == 0;
        const size_t v_bytes =
            v.v_trans ? v.size * v.v_elem_bytes * m->hparams().n_embd_v_gqa() : v.size * v.v_row_bytes;
        for (size_t i = 0; i < v_bytes && zero; ++i) zero = v.v[il][i] == 0;
        EXPECT_TRUE(zero) << "layer " << il;
    }
}

TEST(Bert, RefusesPositionsBeyondItsLearnedOnes) {
    auto m = Model::load(kBert);
    Context ctx(*m, embd_params(PoolingType::Mean));
    Seqs s = texts_batch(*m, {"hello world"});
    for (int32_t &p : s.pos) p += static_cast<int32_t>(m->hparams().n_ctx_train) - 2;  // the last reach 128
    EXPECT_EQ(ctx.decode(s.batch()), DecodeStatus::Error);
    EXPECT_EQ(ctx.kv().used(), 0u);
    EXPECT_EQ(ctx.encode(s.batch()), DecodeStatus::Error);
    EXPECT_EQ(ctx.embeddings_seq(0), nullptr);  // nothing was pooled
}

TEST(Bert, RefusesLogitsItHasNoMatrixFor) {
    auto m = Model::load(kBert);
    ContextParams p = embd_params(PoolingType::None);
    p.embeddings = false;
    Context ctx(*m, p);
    Seqs s = texts_batch(*m, {"hello world"});
    EXPECT_EQ(ctx.decode(s.batch()), DecodeStatus::Error);
    ctx.set_embeddings(true);
    EXPECT_EQ(ctx.decode(s.batch()), DecodeStatus::Ok);
}

// Non-causal: the whole batch is one micro-batch (b4748 asserts n_ubatch >= n_tokens); more is refused,
// never computed.
TEST(Bert, RefusesASequenceLongerThanAMicroBatch) {
    auto m = Model::load(kBert);
    Context ctx(*m, embd_params(PoolingType::Mean, /*n_ubatch=*/8));
    Seqs s = texts_batch(*m, {"The quick brown fox jumps over the lazy dog."});
    ASSERT_GT(s.tok.size(), 8u);
    EXPECT_EQ(ctx.decode(s.batch()), DecodeStatus::Error);
    EXPECT_EQ(ctx.kv().used(), 0u);
    // Two short texts of 8 tokens in all fit; three (12) do not, though each would alone.
    Seqs two = texts_batch(*m, {"hello world", "hi there"});
    ASSERT_EQ(two.tok.size(), 8u);
    EXPECT_EQ(ctx.decode(two.batch()), DecodeStatus::Ok);
    Seqs three = texts_batch(*m, {"hello world", "hi there", "good day"});
    EXPECT_EQ(ctx.decode(three.batch()), DecodeStatus::Error);
    EXPECT_EQ(ctx.kv().used(), 0u);
}

TEST(Bert, RankNeedsAClassificationHead) {
    auto m = Model::load(kBert);
    EXPECT_THROW(Context(*m, embd_params(PoolingType::Rank)), Error);
}

std::string temp_model_path(const std::string &tag) {
    return (std::filesystem::temp_directory_path() /
            ("lctx-bert-" + std::to_string(::getpid()) + "-" + tag + ".gguf"))
        .string();
}

// bert.pooling_type holds one of b4748's five pooling types (0 none, 1 mean, 2 cls, 3 last, 4 rank): each
// loads as itself; any other value (b4748 aborts on it when it builds the graph) is refused when the model
// loads, naming the key and the value.
TEST(Bert, PoolingTypeIsOneOfTheFiveOrRefused) {
    auto with_pooling = [](const std::string &tag, const std::function<void(gguf::Writer &)> &set) {
        auto f = gguf::File::open(kBert);
        gguf::Writer w;
        for (const gguf::KeyValue &kv : f->metadata()) w.set(kv.key, kv.value);
        set(w);
        for (const gguf::TensorInfo &t : f->tensors())
            w.add_tensor(t.name, t.type, t.ne, f->tensor_data(t), t.nbytes);
        const std::string path = temp_model_path("pooling-" + tag);
        w.write_file(path);
        return path;
    };
    for (uint32_t type = 0; type <= 4; ++type) {
        const std::string path = with_pooling(std::to_string(type),
                                              [&](gguf::Writer &w) { w.set_u32("bert.pooling_type", type); });
        EXPECT_EQ(Model::load(path)->hparams().pooling_type, static_cast<int32_t>(type));
        std::filesystem::remove(path);
    }
    for (int32_t bad : {5, 6, -1, 1000}) {
        const std::string path = with_pooling("bad" + std::to_string(bad + 1),
                                              [&](gguf::Writer &w) { w.set_i32("bert.pooling_type", bad); });
        try {
            Model::load(path);
            ADD_FAILURE() << "pooling_type " << bad << " loaded";
        } catch (const Error &e) {
            EXPECT_NE(std::string(e.what()).find("pooling_type' = " + std::to_string(bad)), std::string::npos)
                << e.what();
        }
        std::filesystem::remove(path);
    }
}

std::vector<double> tensor_f64(const gguf::File &f, const std::string &name) {
    const gguf::TensorInfo *t = f.find_tensor(name);
    if (!t) throw Error("no tensor " + name);
    size_t n = 1;
    for (int64_t d : t->ne) n *= static_cast<size_t>(d);
    std::vector<float> v(n);
    dequantize_row(t->type, f.tensor_data(*t), v.data(), static_cast<int64_t>(n));
    return std::vector<double>(v.begin(), v.end());
}

// A synthetic reranker (lctx synth's bert-rerank-tiny): the score of each sequence equals
// cls_out . tanh(cls h + cls_b) + cls_out_b computed in double from the file's weights over the CLS state the
// same model pools with cls pooling.
TEST(Bert, RankScoresTheClsStateThroughTheHead) {
    const synth::Shape *shape = synth::find_shape("bert-rerank-tiny");
    ASSERT_NE(shape, nullptr);
    synth::TypeChoice type;
    ASSERT_TRUE(synth::parse_type("F32", &type));
    synth::Options opts;
    opts.vocab_path = std::string(LCTX_FIXTURES_DIR) + "/vocab/ggml-vocab-bert-bge.gguf";
    opts.n_threads = 1;
    const std::string path = temp_model_path("rerank");
    synth::write_model(*shape, type, path, opts);
    auto m = Model::load(path);
    std::filesystem::remove(path);  // the mapping stays valid
    EXPECT_EQ(m->hparams().pooling_type, 4);
    ASSERT_TRUE(has_cls_head(m->weights()));

    Context rank(*m, embd_params(PoolingType::Rank));
    Context cls(*m, embd_params(PoolingType::Cls));
    Seqs s = texts_batch(*m, kTexts);
    ASSERT_EQ(rank.decode(s.batch()), DecodeStatus::Ok);
    ASSERT_EQ(cls.decode(s.batch()), DecodeStatus::Ok);

    const gguf::File &f = m->file();
    const std::vector<double> w = tensor_f64(f, "cls.weight"), b = tensor_f64(f, "cls.bias");
    const std::vector<double> wo = tensor_f64(f, "cls.output.weight"), bo = tensor_f64(f, "cls.output.bias");
    const size_t n = m->hparams().n_embd;
    std::vector<double> scores;
    for (size_t i = 0; i < kTexts.size(); ++i) {
        const float *h = cls.embeddings_seq(static_cast<int32_t>(i));
        ASSERT_NE(h, nullptr);
        double score = bo[0];
        for (size_t r = 0; r < n; ++r) {
            double a = b[r];
            for (size_t c = 0; c < n; ++c) a += w[r * n + c] * h[c];
            score += wo[r] * std::tanh(a);
        }
        const float *got = rank.embeddings_seq(static_cast<int32_t>(i));
        ASSERT_NE(got, nullptr);
        EXPECT_NEAR(got[0], score, 1e-5) << "text " << i;
        scores.push_back(score);
    }
    // The texts' scores differ (the head reads the state, not a constant).
    EXPECT_NE(scores[0], scores[1]);
}

}  // namespace
}  // namespace lctx::bert_model_test
