// Vocabulary behaviour beyond the reference id lists: specials, pieces, detokenization, round trips,
// bad input, and load errors.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>

#include "util/error.h"
#include "vocab/vocab_test_util.h"

namespace lctx::test::vocab_behaviour_test {
namespace {

const char *const kSpmSets[] = {"llama-spm", "phi-3"};
const char *const kBpeSets[] = {"deepseek-coder", "deepseek-llm", "falcon", "gpt-2", "mpt",
                                "refact",         "starcoder"};

std::unique_ptr<Vocab> load_model(const std::string &path) {
    const auto file = gguf::File::open(path);
    return Vocab::load(*file);
}

// ---- stories260K (SPM, 512 tokens) ----------------------------------------------------------------

TEST(VocabStories, MetadataAndSpecials) {
    const auto v = load_model(std::string(LCTX_MODELS_DIR) + "/stories260K.gguf");
    EXPECT_EQ(v->type(), VocabType::kSpm);
    EXPECT_EQ(v->n_tokens(), 512);
    EXPECT_EQ(v->bos(), 1);
    EXPECT_EQ(v->eos(), 2);
    EXPECT_EQ(v->unk(), 0);
    EXPECT_EQ(v->sep(), -1);  // stored as 0xFFFFFFFF: absent
    EXPECT_EQ(v->pad(), -1);
    EXPECT_EQ(v->eot(), -1);
    EXPECT_EQ(v->nl(), 13);  // <0x0A>
    EXPECT_TRUE(v->add_bos());
    EXPECT_FALSE(v->add_eos());
    EXPECT_TRUE(v->is_eog(2));
    EXPECT_FALSE(v->is_eog(1));
    EXPECT_TRUE(v->is_control(1));
    EXPECT_FALSE(v->is_control(100));
    EXPECT_TRUE(v->is_byte(13));
}

TEST(VocabStories, OnceUponATimeWithBos) {
    const auto v = load_model(std::string(LCTX_MODELS_DIR) + "/stories260K.gguf");
    const std::vector<int32_t> with = v->tokenize("Once upon a time", true, false);
    ASSERT_FALSE(with.empty());
    EXPECT_EQ(with.front(), 1);
    EXPECT_EQ(with, (std::vector<int32_t>{1, 403, 407, 261, 378}));  // fixtures/golden stories_greedy_0
    const std::vector<int32_t> without = v->tokenize("Once upon a time", false, false);
    EXPECT_EQ(without, std::vector<int32_t>(with.begin() + 1, with.end()));
    EXPECT_EQ(v->detokenize(with, true, false), " Once upon a time");  // BOS removed: the space stays
    // Only the first piece loses its space prefix, and here that is the (empty) BOS piece.
    EXPECT_EQ(v->detokenize(with, false, false), " Once upon a time");
    EXPECT_EQ(v->detokenize(with, false, true), "<s> Once upon a time");
    EXPECT_EQ(v->detokenize(without, false, false), "Once upon a time");
}

// The golden decode cases record the prompt tokens and the generated text (pieces with special=false).
TEST(VocabGolden, PromptsAndGeneratedText) {
    const std::string dir = std::string(LCTX_FIXTURES_DIR) + "/golden/";
    int checked = 0;
    for (const char *name :
         {"stories_greedy_0", "stories_greedy_1", "stories_greedy_2", "bert_embd_cls", "bert_embd_mean"}) {
        std::ifstream in(dir + "cases/" + name + ".json");
        ASSERT_TRUE(in) << name;
        const nlohmann::json j = nlohmann::json::parse(in);
        const auto v = load_model(dir + j["model"].get<std::string>());
        for (const auto &step : j["steps"]) {
            if (step["op"] == "greedy") {
                EXPECT_EQ(v->tokenize(step["prompt"].get<std::string>(), true, false),
                          step["prompt_tokens"].get<std::vector<int32_t>>())
                    << name;
                std::string text;
                for (int32_t t : step["generated_tokens"].get<std::vector<int32_t>>())
                    text += v->token_to_piece(t, false);
                EXPECT_EQ(text, step["generated_text"].get<std::string>()) << name;
                ++checked;
            } else if (step["op"] == "embed") {
                const auto &seqs = step["seqs"];
                const auto &toks = step["seqs_tokens"];
                ASSERT_EQ(seqs.size(), toks.size());
                for (size_t i = 0; i < seqs.size(); ++i) {
                    EXPECT_EQ(v->tokenize(seqs[i]["text"].get<std::string>(), true, false),
                              toks[i].get<std::vector<int32_t>>())
                        << name << " seq " << i;
                    ++checked;
                }
            }
        }
    }
    EXPECT_GE(checked, 5);
}

// ---- round trips ----------------------------------------------------------------------------------

bool has_cleanup_pattern(const std::string &s) {
    for (const char *p : {" ?", " !", " .", " ,", " '"})
        if (s.find(p) != std::string::npos) return true;
    return false;
}

TEST(VocabRoundTrip, SpmAndBpeFixtureTexts) {
    std::vector<std::string> sets(std::begin(kSpmSets), std::end(kSpmSets));
    sets.insert(sets.end(), std::begin(kBpeSets), std::end(kBpeSets));
    for (const std::string &set : sets) {
        const Vocab &v = fixture_vocab(set);
        int n = 0;
        for (const VocabCase &c : read_cases(set)) {
            // Vocabularies with clean_spaces tidy " ?" and the like on purpose: no exact round trip.
            if (v.clean_spaces() && has_cleanup_pattern(c.text)) continue;
            EXPECT_EQ(v.detokenize(v.tokenize(c.text, false, false), false, false), c.text)
                << set << ": \"" << escape(c.text) << "\"";
            ++n;
        }
        EXPECT_GE(n, 40) << set;
    }
}

TEST(VocabRoundTrip, CleanSpacesTidiesPunctuation) {
    const Vocab &v = fixture_vocab("gpt-2");
    ASSERT_TRUE(v.clean_spaces());
    EXPECT_EQ(v.detokenize(v.tokenize("you ? yes , no . ok ! it 's he ' s", false, false), false, false),
              "you? yes, no. ok! it's he's");
    const Vocab &d = fixture_vocab("deepseek-llm");
    ASSERT_FALSE(d.clean_spaces());
    EXPECT_EQ(d.detokenize(d.tokenize("you ? yes", false, false), false, false), "you ? yes");
}

// ---- special tokens -------------------------------------------------------------------------------

TEST(VocabSpecial, ParseSpecialSplitsControlTokens) {
    const Vocab &g = fixture_vocab("gpt-2");
    EXPECT_EQ(g.tokenize("<|endoftext|>", false, true), (std::vector<int32_t>{50256}));
    const std::vector<int32_t> plain = g.tokenize("<|endoftext|>", false, false);
    EXPECT_GT(plain.size(), 1u);
    EXPECT_EQ(std::count(plain.begin(), plain.end(), 50256), 0);
    const std::vector<int32_t> mixed = g.tokenize("Hello<|endoftext|> world", false, true);
    EXPECT_EQ(mixed, (std::vector<int32_t>{15496, 50256, 995}));
}

TEST(VocabSpecial, SpmSpacePrefixAfterSpecialToken) {
    const Vocab &v = fixture_vocab("llama-spm");
    const int32_t hello = v.text_to_token("\xE2\x96\x81Hello");
    ASSERT_GE(hello, 0);
    EXPECT_EQ(v.tokenize("Hello</s>Hello", false, true), (std::vector<int32_t>{hello, 2, hello}));
    EXPECT_EQ(v.tokenize("Hello", true, false), (std::vector<int32_t>{1, hello}));
    // control text stays text without parse_special
    const std::vector<int32_t> plain = v.tokenize("</s>", false, false);
    EXPECT_EQ(std::count(plain.begin(), plain.end(), 2), 0);
}

TEST(VocabSpecial, UserDefinedTokensAlwaysMatchAndPhi3Rstrip) {
    const Vocab &v = fixture_vocab("phi-3");
    ASSERT_EQ(v.token_attr(2) & kAttrUserDefined, kAttrUserDefined);  // phi-3's </s> is user-defined
    const std::vector<int32_t> ids = v.tokenize("a</s>b", false, false);
    EXPECT_EQ(std::count(ids.begin(), ids.end(), 2), 1);
    // <|user|> is a control token with rstrip: the newline after it is swallowed
    const int32_t hello = v.text_to_token("\xE2\x96\x81Hello");
    EXPECT_EQ(v.tokenize("<|user|>\nHello<|end|>", false, true), (std::vector<int32_t>{32010, hello, 32007}));
    EXPECT_TRUE(v.is_eog(32007));
    EXPECT_TRUE(v.is_eog(32000));
    EXPECT_EQ(v.eot(), 32007);
}

TEST(VocabSpecial, WpmAddsClsAndSep) {
    const Vocab &v = fixture_vocab("bert-bge");
    EXPECT_EQ(v.type(), VocabType::kWpm);
    EXPECT_EQ(v.tokenize("", true, false), (std::vector<int32_t>{101, 102}));
    const std::vector<int32_t> ids = v.tokenize("Hello world", true, false);
    ASSERT_EQ(ids.size(), 4u);
    EXPECT_EQ(ids.front(), 101);
    EXPECT_EQ(ids.back(), 102);
    EXPECT_EQ(v.tokenize("[CLS] hi", false, true).front(), 101);
    EXPECT_EQ(v.cls(), 101);
    EXPECT_EQ(v.sep(), 102);
}

// ---- pieces -----------------------------------------------------------------------------------------

TEST(VocabPieces, SpmPieces) {
    const Vocab &v = fixture_vocab("llama-spm");
    EXPECT_EQ(v.token_to_piece(13, false), "\n");  // <0x0A>
    const int32_t hello = v.text_to_token("\xE2\x96\x81Hello");
    EXPECT_EQ(v.token_to_piece(hello, false), " Hello");
    EXPECT_EQ(v.token_to_piece(hello, false, 1), "Hello");
    EXPECT_EQ(v.token_to_piece(1, false), "");
    EXPECT_EQ(v.token_to_piece(1, true), "<s>");
    EXPECT_EQ(v.token_to_piece(0, false), "");  // unknown renders only with special
    EXPECT_EQ(v.token_to_piece(0, true), "<unk>");
}

TEST(VocabPieces, BpeAndWpmPieces) {
    const Vocab &g = fixture_vocab("gpt-2");
    EXPECT_EQ(g.token_to_piece(995, false), " world");
    EXPECT_EQ(g.token_to_piece(198, false), "\n");
    EXPECT_EQ(g.nl(), 198);
    EXPECT_EQ(g.token_to_piece(50256, false), "");
    EXPECT_EQ(g.token_to_piece(50256, true), "<|endoftext|>");
    const Vocab &b = fixture_vocab("bert-bge");
    EXPECT_EQ(b.token_to_piece(b.text_to_token("\xE2\x96\x81hello"), false), " hello");
}

// ---- bad input -------------------------------------------------------------------------------------

TEST(VocabBadInput, OutOfRangeIdsThrow) {
    const Vocab &v = fixture_vocab("llama-spm");
    for (int32_t bad : {-1, -100, v.n_tokens(), v.n_tokens() + 7}) {
        EXPECT_THROW(v.token_to_piece(bad, true), Error) << bad;
        EXPECT_THROW(v.token_text(bad), Error) << bad;
        EXPECT_THROW(v.score(bad), Error) << bad;
        EXPECT_THROW(v.token_attr(bad), Error) << bad;
        EXPECT_FALSE(v.is_eog(bad)) << bad;  // "not end-of-generation", as b4748 answers
        EXPECT_THROW(v.detokenize({1, bad}, false, false), Error) << bad;
    }
}

TEST(VocabBadInput, InvalidUtf8NeverCrashes) {
    const std::string bad = "ok\xFF\xFE\xC3 \xE2\x82 \xF0\x9F\x98 end\x80\xBF \xED\xA0\x80 \xF4\x90\x80\x80";
    for (const char *set : {"llama-spm", "phi-3", "gpt-2", "deepseek-llm", "deepseek-coder", "falcon",
                            "bert-bge", "mpt", "refact", "starcoder", "t5"}) {
        const Vocab &v = fixture_vocab(set);
        std::vector<int32_t> ids;
        EXPECT_NO_THROW(ids = v.tokenize(bad, true, true)) << set;
        EXPECT_FALSE(ids.empty()) << set;
        for (int32_t id : ids) EXPECT_TRUE(id >= 0 && id < v.n_tokens()) << set;
    }
    // SPM falls back to byte tokens, so even invalid bytes come back unchanged (as long as a truncated
    // sequence does not swallow part of an escaped space).
    const Vocab &s = fixture_vocab("llama-spm");
    const std::string bad_no_space =
        "ok\xFF\xFE\xC3"
        "abc\x80\xBF\xED\xA0\x80"
        "x\xF4\x90\x80\x80";
    EXPECT_EQ(s.detokenize(s.tokenize(bad_no_space, false, false), false, false), bad_no_space);
    // Byte-level BPE reads each invalid byte as U+FFFD.
    const Vocab &g = fixture_vocab("gpt-2");
    EXPECT_EQ(g.detokenize(g.tokenize("a\xFF"
                                      "b",
                                      false, false),
                           false, false),
              "a\xEF\xBF\xBD"
              "b");
}

TEST(VocabBadInput, EmptyText) {
    for (const char *set : {"llama-spm", "gpt-2", "bert-bge", "deepseek-llm"}) {
        const Vocab &v = fixture_vocab(set);
        EXPECT_TRUE(v.tokenize("", false, false).empty()) << set;
        EXPECT_TRUE(v.tokenize("", false, true).empty()) << set;
        EXPECT_EQ(v.detokenize({}, true, true), "") << set;
    }
    EXPECT_EQ(fixture_vocab("llama-spm").tokenize("", true, false), (std::vector<int32_t>{1}));
    EXPECT_EQ(fixture_vocab("deepseek-llm").tokenize("", true, false), (std::vector<int32_t>{100000}));
}

// Long inputs stay near-linear: a single 200k-character word, a long whitespace run, a long text.
TEST(VocabBadInput, HugeInputsAreFast) {
    std::string text;
    for (int i = 0; i < 20000; ++i) text += "Hello world, this is line " + std::to_string(i) + ".\n";
    const std::vector<std::string> inputs = {std::string(200000, 'a'), std::string(100000, ' ') + "1", text};
    for (const char *set : {"llama-spm", "gpt-2", "deepseek-llm", "deepseek-coder", "bert-bge"}) {
        const Vocab &v = fixture_vocab(set);
        for (const std::string &in : inputs) {
            const auto t0 = std::chrono::steady_clock::now();
            const std::vector<int32_t> ids = v.tokenize(in, false, false);
            const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            EXPECT_FALSE(ids.empty());
            EXPECT_LT(s, 20.0) << set << " took " << s << " s for " << in.size() << " bytes";
            if (v.type() != VocabType::kWpm && !v.clean_spaces()) {
                EXPECT_EQ(v.detokenize(ids, false, false), in) << set;
            }
        }
    }
}

// ---- load errors -----------------------------------------------------------------------------------

std::unique_ptr<Vocab> load_from(const gguf::Writer &w) {
    const std::vector<uint8_t> bytes = w.to_bytes();
    const auto file = gguf::File::from_buffer(bytes.data(), bytes.size());
    return Vocab::load(*file);
}

gguf::Writer tiny_bpe() {
    gguf::Writer w;
    w.set_string("tokenizer.ggml.model", "gpt2");
    w.set_string("tokenizer.ggml.pre", "gpt-2");
    w.set_string_array("tokenizer.ggml.tokens", {"a", "b", "ab", "<|endoftext|>"});
    w.set_i32_array("tokenizer.ggml.token_type", {1, 1, 1, 3});
    w.set_string_array("tokenizer.ggml.merges", {"a b"});
    w.set_u32("tokenizer.ggml.eos_token_id", 3);
    return w;
}

TEST(VocabLoad, TinyInMemoryBpe) {
    const auto v = load_from(tiny_bpe());
    EXPECT_EQ(v->tokenize("abab", false, false), (std::vector<int32_t>{2, 2}));
    EXPECT_EQ(v->eos(), 3);
    EXPECT_EQ(v->bos(), -1);  // default id 11 is outside this vocabulary
    EXPECT_TRUE(v->is_eog(3));
}

TEST(VocabPieces, BpeCodePointOutsideTheByteAlphabetIsMarked) {
    // b4748's BPE decode: each code point outside the byte-level alphabet becomes "[UNK_BYTE_0x" + its
    // UTF-8 bytes in lowercase hex + the whole token text + "]"; the others decode to their bytes.
    gguf::Writer w = tiny_bpe();
    w.set_string_array("tokenizer.ggml.tokens", {"a", "b", "ab", "<|endoftext|>", "\xE2\x96\x81re"});
    w.set_i32_array("tokenizer.ggml.token_type", {1, 1, 1, 3, 1});
    const auto v = load_from(w);
    EXPECT_EQ(v->token_to_piece(4, false), "[UNK_BYTE_0xe29681\xE2\x96\x81re]re");
    EXPECT_EQ(v->token_to_piece(2, false), "ab");
    EXPECT_EQ(v->detokenize({2, 4}, false, false), "ab[UNK_BYTE_0xe29681\xE2\x96\x81re]re");
}

// ---- special tokens found by their text (b4748's lists) -----------------------------------------

TEST(VocabSpecialByText, RefactFimTextsAreNotInB4748sLists) {
    // Refact spells its FIM tokens "<fim_prefix>", ...: b4748 knows only "<fim-prefix>" and the others, so
    // no FIM token is found, and only "<|endoftext|>" (id 0: EOS and EOT) ends generation.
    const Vocab &v = fixture_vocab("refact");
    for (int32_t id : {v.fim_pre(), v.fim_suf(), v.fim_mid(), v.fim_pad(), v.fim_rep(), v.fim_sep()})
        EXPECT_EQ(id, -1);
    EXPECT_EQ(v.eog_tokens(), (std::vector<int32_t>{0}));
    EXPECT_EQ(v.eot(), 0);
}

TEST(VocabSpecialByText, SpmPadTokenIsFimPadControlAndEog) {
    gguf::Writer w;
    w.set_string("tokenizer.ggml.model", "llama");
    w.set_string_array("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>", "<PAD>", "a"});
    w.set_i32_array("tokenizer.ggml.token_type", {2, 3, 3, 1, 1});
    const auto v = load_from(w);
    EXPECT_EQ(v->fim_pad(), 3);
    EXPECT_TRUE(v->is_control(3));
    EXPECT_TRUE(v->is_eog(3));
    EXPECT_EQ(v->eog_tokens(), (std::vector<int32_t>{2, 3}));
}

TEST(VocabSpecialByText, OnlyB4748sTextsEndGeneration) {
    // Texts later llama.cpp added ("<|end_of_text|>", "<end_of_utterance>", "_<EOT>", "<|return|>",
    // "<|call|>", "<fim_pad>", "<reponame>", "<file_sep>") are plain tokens in b4748.
    gguf::Writer w;
    w.set_string("tokenizer.ggml.model", "gpt2");
    w.set_string("tokenizer.ggml.pre", "gpt-2");
    const std::vector<std::string> texts = {
        "a",          "b",          "ab",       "<|end_of_text|>", "<end_of_utterance>",
        "_<EOT>",     "<|return|>", "<|call|>", "<fim_pad>",       "<reponame>",
        "<file_sep>", "<|eom_id|>", "<REPO>",   "<|file_sep|>"};
    w.set_string_array("tokenizer.ggml.tokens", texts);
    w.set_i32_array("tokenizer.ggml.token_type", std::vector<int32_t>(texts.size(), 1));
    w.set_string_array("tokenizer.ggml.merges", {"a b"});
    w.set_u32("tokenizer.ggml.eos_token_id", 0);
    const auto v = load_from(w);
    EXPECT_EQ(v->eot(), -1);
    EXPECT_EQ(v->eom(), 11);
    EXPECT_EQ(v->fim_pad(), -1);
    EXPECT_EQ(v->fim_rep(), 12);
    EXPECT_EQ(v->fim_sep(), 13);
    EXPECT_EQ(v->eog_tokens(), (std::vector<int32_t>{0, 11, 12, 13}));
    for (int32_t id = 3; id <= 10; ++id) EXPECT_FALSE(v->is_control(id)) << texts[size_t(id)];
    EXPECT_TRUE(v->is_control(12));
}

TEST(VocabLoad, BadMetadataIsAnError) {
    {
        gguf::Writer w;
        w.set_string_array("tokenizer.ggml.tokens", {"a"});
        EXPECT_THROW(load_from(w), Error);  // no tokenizer.ggml.model
    }
    {
        gguf::Writer w = tiny_bpe();
        w.set_string("tokenizer.ggml.model", "klingon");
        EXPECT_THROW(load_from(w), Error);
    }
    {
        gguf::Writer w = tiny_bpe();
        w.set_string("tokenizer.ggml.pre", "no-such-pre");
        EXPECT_THROW(load_from(w), Error);
    }
    {
        gguf::Writer w;
        w.set_string("tokenizer.ggml.model", "gpt2");
        w.set_string_array("tokenizer.ggml.tokens", {"a", "b"});
        EXPECT_THROW(load_from(w), Error);  // no merges
    }
    {
        gguf::Writer w;
        w.set_string("tokenizer.ggml.model", "llama");
        EXPECT_THROW(load_from(w), Error);  // no tokens
    }
    {
        gguf::Writer w;
        w.set_string("tokenizer.ggml.model", "llama");
        w.set_string_array("tokenizer.ggml.tokens", {"a", "b"});
        w.set_f32_array("tokenizer.ggml.scores", {0.0f});
        EXPECT_THROW(load_from(w), Error);  // scores do not match the tokens
    }
    {
        gguf::Writer w;
        w.set_string("tokenizer.ggml.model", "llama");
        w.set_u32("tokenizer.ggml.tokens", 5);
        EXPECT_THROW(load_from(w), Error);  // wrong type
    }
}

}  // namespace
}  // namespace lctx::test::vocab_behaviour_test
