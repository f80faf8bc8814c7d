// Pre-tokenization for byte-level BPE: splits text into words before merges run, with the regex list
// that `tokenizer.ggml.pre` names. Splitting follows llama.cpp's semantics, which the reference token ids
// were produced with:
//  - the two most common patterns (GPT-2's and Llama 3's) are scanned by hand, with \s meaning the
//    Unicode White_Space property and \p{L}/\p{N} the general categories;
//  - a pattern that uses \p{..} classes runs (PCRE2, byte mode) on a "collapsed" copy of the text in which
//    every non-ASCII code point becomes one byte standing for its category (whitespace becomes \v), so
//    \p{L} means "ASCII letter or any non-ASCII letter" and so on;
//  - any other pattern runs (PCRE2, UTF mode without UCP) on the text with non-ASCII whitespace replaced
//    by \v, so \s and \d stay ASCII-only as in std::regex.
// Each pattern refines the pieces of the previous one; text no match covers stays as pieces of its own.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace lctx {

// Values equal llama.h's enum llama_vocab_pre_type.
enum class PreType : int32_t {
    kDefault = 0,
    kLlama3 = 1,
    kDeepseekLlm = 2,
    kDeepseekCoder = 3,
    kFalcon = 4,
    kMpt = 5,
    kStarcoder = 6,
    kGpt2 = 7,
    kRefact = 8,
    kCommandR = 9,
    kStablelm2 = 10,
    kQwen2 = 11,
    kOlmo = 12,
    kDbrx = 13,
    kSmaug = 14,
    kPoro = 15,
    kChatglm3 = 16,
    kChatglm4 = 17,
    kViking = 18,
    kJais = 19,
    kTekken = 20,
    kSmollm = 21,
    kCodeshell = 22,
    kBloom = 23,
    kGpt3Finnish = 24,
    kExaone = 25,
    kChameleon = 26,
    kMinerva = 27,
    kDeepseek3Llm = 28,
    kGpt4o = 29,
};

// What a `tokenizer.ggml.pre` name selects, beside the regexes.
struct PreSpec {
    PreType type = PreType::kDefault;
    bool clean_spaces = true;    // detokenize removes spaces before punctuation
    bool ignore_merges = false;  // a word that is a whole token is not merged
    bool add_bos = false;        // default for add_bos (the GGUF flag overrides it)
    bool add_sep = false;
    bool no_bos = false;  // the model has no BOS token
};

// Looks up a pre-tokenizer name; returns false when it is unknown. "" and "default" are the default.
bool find_pre_spec(std::string_view name, PreSpec *spec);

std::vector<std::string> pre_regexes(PreType type);

class PreTokenizer {
  public:
    // Compiles the patterns; throws lctx::Error when PCRE2 rejects one.
    explicit PreTokenizer(const std::vector<std::string> &regexes);
    ~PreTokenizer();
    PreTokenizer(const PreTokenizer &) = delete;
    PreTokenizer &operator=(const PreTokenizer &) = delete;

    // Splits UTF-8 text (invalid bytes read as U+FFFD) into words, returned as UTF-8.
    std::vector<std::string> split(std::string_view text) const;

  private:
    struct Rule;
    std::vector<std::unique_ptr<Rule>> rules_;
};

}  // namespace lctx
