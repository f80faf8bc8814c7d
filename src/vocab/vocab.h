// The vocabulary of a model: tokens, scores, attributes, special tokens, and the tokenizer the GGUF
// metadata selects (`tokenizer.ggml.model`: "llama" = SPM, "gpt2" = byte-level BPE, "bert" = WordPiece,
// "t5" = Unigram). Token ids are int32_t in [0, n_tokens()); -1 means "no such token".
// All const methods are safe to call from several threads at once.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "gguf/gguf.h"
#include "vocab/flat_tables.h"
#include "vocab/pretokenizer.h"

namespace lctx {

// Values equal llama.h's enum llama_vocab_type.
enum class VocabType : int32_t { kNone = 0, kSpm = 1, kBpe = 2, kWpm = 3, kUgm = 4, kRwkv = 5 };

// Values equal llama.h's enum llama_token_type (as stored in `tokenizer.ggml.token_type`).
enum class TokenType : int32_t {
    kUndefined = 0,
    kNormal = 1,
    kUnknown = 2,
    kControl = 3,
    kUserDefined = 4,
    kUnused = 5,
    kByte = 6,
};

// Bit flags; values equal llama.h's enum llama_token_attr.
enum TokenAttr : int32_t {
    kAttrUndefined = 0,
    kAttrUnknown = 1 << 0,
    kAttrUnused = 1 << 1,
    kAttrNormal = 1 << 2,
    kAttrControl = 1 << 3,
    kAttrUserDefined = 1 << 4,
    kAttrByte = 1 << 5,
    kAttrNormalized = 1 << 6,
    kAttrLstrip = 1 << 7,
    kAttrRstrip = 1 << 8,
    kAttrSingleWord = 1 << 9,
};

class Vocab {
  public:
    // Reads the tokenizer metadata; throws lctx::Error naming the key when it is missing or malformed.
    static std::unique_ptr<Vocab> load(const gguf::File &file);
    ~Vocab();
    Vocab(const Vocab &) = delete;  // its lookup tables view its own token texts
    Vocab &operator=(const Vocab &) = delete;

    // Text (UTF-8; invalid bytes are read as U+FFFD) to token ids.
    //  add_special:   add BOS/EOS as the vocabulary's flags say (WPM: [CLS] ... [SEP]).
    //  parse_special: text spelling a control token becomes that token. User-defined tokens are always
    //                 matched as whole pieces, as the reference does.
    std::vector<int32_t> tokenize(std::string_view text, bool add_special, bool parse_special) const;

    // The bytes one token stands for (may be part of a UTF-8 sequence). Control and unknown tokens are
    // empty unless `special`. Up to `lstrip` leading spaces are dropped. Throws lctx::Error for a bad id.
    std::string token_to_piece(int32_t id, bool special, int32_t lstrip = 0) const;

    // Concatenated pieces. remove_special drops a leading BOS / trailing EOS the vocabulary adds;
    // unparse_special renders control tokens. `raw_size`, when given, receives the length before the
    // clean-up of spaces (llama.cpp reports that length when the caller's buffer is too small).
    std::string detokenize(const std::vector<int32_t> &tokens, bool remove_special, bool unparse_special,
                           size_t *raw_size = nullptr) const;

    VocabType type() const { return type_; }
    PreType pre_type() const { return pre_.type; }
    int32_t n_tokens() const { return int32_t(tokens_.size()); }

    std::string_view token_text(int32_t id) const { return text_of(token(id)); }
    const char *token_text_cstr(int32_t id) const { return texts_.data() + token(id).text_begin; }
    float score(int32_t id) const { return token(id).score; }
    int32_t token_attr(int32_t id) const { return token(id).attr; }
    bool is_control(int32_t id) const { return (token(id).attr & kAttrControl) != 0; }
    bool is_byte(int32_t id) const { return (token(id).attr & kAttrByte) != 0; }
    bool is_eog(int32_t id) const;  // false for any id outside the vocabulary (never throws)
    // The id whose text is exactly `text`, or -1.
    int32_t text_to_token(std::string_view text) const;

    int32_t bos() const { return bos_; }
    int32_t eos() const { return eos_; }
    int32_t eot() const { return eot_; }
    int32_t eom() const { return eom_; }
    int32_t unk() const { return unk_; }
    int32_t sep() const { return sep_; }
    int32_t pad() const { return pad_; }
    int32_t mask() const { return mask_; }
    int32_t cls() const { return bos_; }  // CLS and BOS are the same token
    int32_t nl() const { return nl_; }
    int32_t fim_pre() const { return fim_pre_; }
    int32_t fim_suf() const { return fim_suf_; }
    int32_t fim_mid() const { return fim_mid_; }
    int32_t fim_pad() const { return fim_pad_; }
    int32_t fim_rep() const { return fim_rep_; }
    int32_t fim_sep() const { return fim_sep_; }
    const std::vector<int32_t> &eog_tokens() const { return eog_; }

    bool add_bos() const { return add_bos_; }
    bool add_eos() const { return add_eos_; }
    bool add_sep() const { return add_sep_; }
    bool add_space_prefix() const { return add_space_prefix_; }
    bool clean_spaces() const { return clean_spaces_; }
    int32_t max_token_len() const { return max_token_len_; }

  private:
    struct TokenData {
        uint32_t text_begin = 0;  // the text: texts_[text_begin, text_begin + text_size), then a NUL
        uint32_t text_size = 0;
        float score = 0.0f;
        int32_t attr = kAttrNormal;
    };
    std::string_view text_of(const TokenData &t) const { return {texts_.data() + t.text_begin, t.text_size}; }
    struct Fragment {
        int32_t token;  // -1: text [offset, offset + length) of the input
        size_t offset;
        size_t length;
    };

    Vocab();
    const TokenData &token(int32_t id) const;
    void finish_load(const gguf::File &file);
    std::vector<Fragment> partition(std::string_view text, bool parse_special) const;
    int32_t byte_to_token(uint8_t byte) const;
    int32_t merge_rank(std::string_view left, std::string_view right) const;
    std::string render_piece(int32_t id) const;

    // One tokenizer per file (tokenizer_*.cpp); each appends the ids for one piece of plain text.
    void tokenize_spm(std::string_view text, std::vector<int32_t> &out) const;  // text already escaped
    void tokenize_bpe(std::string_view text, std::vector<int32_t> &out) const;
    void tokenize_wpm(std::string_view text, std::vector<int32_t> &out) const;
    void tokenize_ugm(std::string_view text, std::vector<int32_t> &out) const;
    // UGM's normalizer and its tables (tokenizer_ugm.cpp).
    void load_ugm(const gguf::File &file);
    size_t ugm_charsmap_prefix(std::string_view in, std::string_view *replacement) const;
    std::string ugm_normalize(std::string_view text) const;

    VocabType type_ = VocabType::kNone;
    PreSpec pre_;
    std::string pre_name_;
    std::vector<TokenData> tokens_;
    std::string texts_;  // every token's text, each followed by a NUL (one string, not one per token)
    vocab_detail::TextIndex text_to_id_;  // ids by token text
    // BPE merge ranks by the pair of token ids (left << 32 | right); a merge whose sides are not both tokens
    // (no vocabulary seen has one) by merge_key(left, right) text.
    vocab_detail::PairRanks merge_ranks_;
    std::unordered_map<std::string, int32_t> merge_ranks_text_;
    std::unique_ptr<PreTokenizer> pretokenizer_;
    // token_to_piece(id, special = true), precomputed: piece i is [piece_ends_[i - 1], piece_ends_[i]) of
    // pieces_ (one string, not one per token)
    std::string pieces_;
    std::vector<uint32_t> piece_ends_;
    std::vector<int32_t> special_tokens_;  // control / user-defined / unknown ids, longest text first
    std::vector<int32_t> eog_;             // sorted
    int32_t max_token_len_ = 0;
    // UGM: the precompiled charsmap's double array and normalized strings, and the unknown character's score.
    std::vector<uint32_t> ugm_trie_;
    std::string ugm_norm_;
    float ugm_unk_score_ = 0.0f;

    int32_t bos_ = -1, eos_ = -1, eot_ = -1, eom_ = -1, unk_ = -1, sep_ = -1, pad_ = -1, mask_ = -1, nl_ = -1;
    int32_t fim_pre_ = -1, fim_suf_ = -1, fim_mid_ = -1, fim_pad_ = -1, fim_rep_ = -1, fim_sep_ = -1;
    bool add_bos_ = false, add_eos_ = false, add_sep_ = false;
    bool add_space_prefix_ = false;
    bool remove_extra_whitespaces_ = false;
    bool clean_spaces_ = false;
    bool ignore_merges_ = false;
};

}  // namespace lctx
