#include "vocab/vocab.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>

#include "util/error.h"
#include "vocab/unicode.h"

namespace lctx {

namespace {

using unicode::kSpaceMarker;

std::string merge_key(std::string_view left, std::string_view right) {
    // length-prefixed so that pieces containing spaces cannot collide
    std::string key;
    key.reserve(4 + left.size() + right.size());
    const uint32_t n = uint32_t(left.size());
    key.append(reinterpret_cast<const char *>(&n), sizeof(n));
    key.append(left);
    key.append(right);
    return key;
}

int32_t attr_from_type(int64_t type) {
    switch (TokenType(type)) {
        case TokenType::kNormal:
            return kAttrNormal;
        case TokenType::kUnknown:
            return kAttrUnknown;
        case TokenType::kControl:
            return kAttrControl;
        case TokenType::kUserDefined:
            return kAttrUserDefined;
        case TokenType::kUnused:
            return kAttrUnused;
        case TokenType::kByte:
            return kAttrByte;
        default:
            return kAttrUndefined;
    }
}

void replace_all(std::string &s, std::string_view from, std::string_view to) {
    std::string out;
    out.reserve(s.size());
    size_t pos = 0;
    for (size_t hit; (hit = s.find(from, pos)) != std::string::npos; pos = hit + from.size()) {
        out.append(s, pos, hit - pos);
        out.append(to);
    }
    out.append(s, pos, std::string::npos);
    s = std::move(out);
}

bool is_c_space(char c) {
    return std::isspace(static_cast<unsigned char>(c)) != 0;
}

// Removes the spaces a word-level decoder leaves before punctuation and inside contractions.
std::string clean_up_spaces(const std::string &in) {
    std::string a;  // " ?", " !", " .", " ," lose their space
    a.reserve(in.size());
    for (size_t i = 0; i < in.size(); ++i) {
        const char x = in[i];
        if (i > 0 && in[i - 1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ',') && !a.empty())
            a.pop_back();
        a += x;
    }
    std::string b;  // " ' " becomes "'"
    b.reserve(a.size());
    for (size_t i = 0; i < a.size(); ++i) {
        const char x = a[i];
        if (i > 0 && x == '\'' && i + 1 < a.size() && a[i - 1] == ' ' && a[i + 1] == ' ') {
            if (!b.empty()) b.pop_back();
            b += x;
            a[++i] = '\0';  // the space after it goes too, and is no space for the next character
            continue;
        }
        b += x;
    }
    std::string c;  // " 's", " 'm", " 're", " 've" lose their space
    c.reserve(b.size());
    for (size_t i = 0; i < b.size(); ++i) {
        const char x = b[i];
        if (i > 0 && b[i - 1] == ' ' && x == '\'' && i + 1 < b.size()) {
            const char x1 = b[i + 1];
            const char x2 = i + 2 < b.size() ? b[i + 2] : '\0';
            const bool glue = x1 == 's' || x1 == 'm' || (x1 == 'r' && x2 == 'e') || (x1 == 'v' && x2 == 'e');
            if (glue && !c.empty()) c.pop_back();
        }
        c += x;
    }
    return c;
}

}  // namespace

Vocab::Vocab() = default;
Vocab::~Vocab() = default;

const Vocab::TokenData &Vocab::token(int32_t id) const {
    if (id < 0 || id >= int32_t(tokens_.size()))
        throw Error("token id " + std::to_string(id) + " is out of range: the vocabulary has " +
                    std::to_string(tokens_.size()) + " tokens");
    return tokens_[size_t(id)];
}

int32_t Vocab::text_to_token(std::string_view text) const {
    return text_to_id_.find(text, [this](int32_t id) { return text_of(tokens_[size_t(id)]); });
}

bool Vocab::is_eog(int32_t id) const {
    // No range check: an id outside the vocabulary (LLAMA_TOKEN_NULL from llama_vocab_eot() on a model
    // without EOT, say) is simply not an end-of-generation token, as in b4748.
    return std::binary_search(eog_.begin(), eog_.end(), id);
}

namespace {
uint64_t pair_key(int32_t left, int32_t right) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
}
}  // namespace

int32_t Vocab::merge_rank(std::string_view left, std::string_view right) const {
    const int32_t l = text_to_token(left), r = text_to_token(right);
    if (l >= 0 && r >= 0) {
        const int32_t rank = merge_ranks_.find(pair_key(l, r));
        if (rank >= 0) return rank;
    }
    if (merge_ranks_text_.empty()) return -1;
    const auto it = merge_ranks_text_.find(merge_key(left, right));
    return it == merge_ranks_text_.end() ? -1 : it->second;
}

int32_t Vocab::byte_to_token(uint8_t byte) const {
    if (type_ == VocabType::kSpm || type_ == VocabType::kUgm) {
        char buf[8];
        std::snprintf(buf, sizeof(buf), "<0x%02X>", byte);
        int32_t id = text_to_token(buf);
        if (id >= 0) return id;
        // vocabularies without byte tokens may still have the character itself
        id = text_to_token(std::string(1, char(byte)));
        return id >= 0 ? id : unk_;
    }
    if (type_ == VocabType::kBpe)
        return text_to_token(unicode::encode_utf8(unicode::byte_to_codepoint(byte)));
    return text_to_token(std::string(1, char(byte)));
}

// ---- loading ----------------------------------------------------------------------------------------

std::unique_ptr<Vocab> Vocab::load(const gguf::File &file) {
    std::unique_ptr<Vocab> v(new Vocab());
    v->finish_load(file);
    return v;
}

void Vocab::finish_load(const gguf::File &f) {
    const auto model = f.get_string("tokenizer.ggml.model");
    if (!model) throw Error("the model has no tokenizer: metadata key 'tokenizer.ggml.model' is missing");

    // Per-type defaults (the GGUF keys below override them).
    if (*model == "no_vocab" || *model == "none") {
        type_ = VocabType::kNone;
        return;
    } else if (*model == "llama") {
        type_ = VocabType::kSpm;
        bos_ = 1, eos_ = 2, unk_ = 0;
        add_space_prefix_ = true, add_bos_ = true;
    } else if (*model == "gpt2") {
        type_ = VocabType::kBpe;
        bos_ = 11, eos_ = 11;
    } else if (*model == "bert") {
        type_ = VocabType::kWpm;
        bos_ = 101, unk_ = 100, sep_ = 102, pad_ = 0, mask_ = 103;
        clean_spaces_ = true, add_bos_ = true, add_sep_ = true;
    } else if (*model == "t5") {
        type_ = VocabType::kUgm;
        eos_ = 1, unk_ = 2, pad_ = 0;
        add_eos_ = true;
    } else if (*model == "rwkv") {
        type_ = VocabType::kRwkv;
    } else {
        throw Error("unknown tokenizer '" + *model +
                    "' in 'tokenizer.ggml.model' (expected llama, gpt2, bert or t5)");
    }

    auto texts = f.get_string_array("tokenizer.ggml.tokens");
    if (!texts || texts->empty()) throw Error("the vocabulary is empty: 'tokenizer.ggml.tokens' is missing");
    if (texts->size() > size_t(INT32_MAX)) throw Error("'tokenizer.ggml.tokens' has too many entries");
    const size_t n = texts->size();
    const auto scores = f.get_float_array("tokenizer.ggml.scores");
    const auto types = f.get_int_array("tokenizer.ggml.token_type");
    if (scores && scores->size() != n)
        throw Error("'tokenizer.ggml.scores' has " + std::to_string(scores->size()) + " entries for " +
                    std::to_string(n) + " tokens");
    if (types && types->size() != n)
        throw Error("'tokenizer.ggml.token_type' has " + std::to_string(types->size()) + " entries for " +
                    std::to_string(n) + " tokens");

    tokens_.resize(n);
    for (size_t i = 0; i < n; ++i) {
        TokenData &t = tokens_[i];
        std::string &text = (*texts)[i];
        if (text.empty()) text = "[EMPTY_" + std::to_string(i) + "]";
        if (texts_.size() + text.size() + 1 > UINT32_MAX)
            throw Error("the vocabulary's texts take more than 4 GiB");
        t.text_begin = static_cast<uint32_t>(texts_.size());
        t.text_size = static_cast<uint32_t>(text.size());
        texts_ += text;
        texts_ += '\0';
        std::string().swap(text);
        t.score = scores ? (*scores)[i] : 0.0f;
        t.attr = types ? attr_from_type((*types)[i]) : kAttrNormal;
        max_token_len_ = std::max(max_token_len_, int32_t(t.text_size));
    }
    texts_.shrink_to_fit();
    // tokens_ is complete: its texts no longer move
    text_to_id_.build(n, [this](int32_t id) { return text_of(tokens_[size_t(id)]); });

    if (type_ == VocabType::kBpe) {
        const auto merges = f.get_string_array("tokenizer.ggml.merges");
        if (!merges) throw Error("byte-level BPE vocabulary without 'tokenizer.ggml.merges'");
        merge_ranks_.reserve(merges->size());
        for (size_t i = 0; i < merges->size(); ++i) {
            const std::string &m = (*merges)[i];
            const size_t sp = m.find(' ', 1);
            if (sp == std::string::npos) continue;  // malformed entry: never matches
            const std::string_view left = std::string_view(m).substr(0, sp),
                                   right = std::string_view(m).substr(sp + 1);
            const int32_t l = text_to_token(left), r = text_to_token(right);
            // the first rank of a repeated merge wins
            if (l >= 0 && r >= 0)
                merge_ranks_.insert(pair_key(l, r), int32_t(i));
            else
                merge_ranks_text_.emplace(merge_key(left, right), int32_t(i));
        }

        pre_name_ = f.get_string("tokenizer.ggml.pre").value_or("");
        if (!find_pre_spec(pre_name_, &pre_))
            throw Error("unknown pre-tokenizer '" + pre_name_ + "' in 'tokenizer.ggml.pre'");
        clean_spaces_ = pre_.clean_spaces;
        ignore_merges_ = pre_.ignore_merges;
        add_bos_ = pre_.add_bos;
        add_sep_ = pre_.add_sep;
        if (pre_.no_bos) bos_ = -1;
        pretokenizer_ = std::make_unique<PreTokenizer>(pre_regexes(pre_.type));
    } else if (type_ == VocabType::kSpm) {
        clean_spaces_ = false;
    }
    add_space_prefix_ = f.get_bool("tokenizer.ggml.add_space_prefix").value_or(add_space_prefix_);
    remove_extra_whitespaces_ =
        f.get_bool("tokenizer.ggml.remove_extra_whitespaces").value_or(remove_extra_whitespaces_);

    // The newline token.
    if (type_ == VocabType::kSpm) {
        nl_ = byte_to_token('\n');
        if (nl_ < 0 || nl_ == unk_) nl_ = pad_;
    } else if (type_ == VocabType::kWpm) {
        nl_ = pad_;
    } else if (type_ == VocabType::kBpe) {
        nl_ = text_to_token("\xC4\x8A");  // U+010A: '\n' in the byte-level alphabet
        if (nl_ < 0) nl_ = pad_;
    } else if (type_ == VocabType::kUgm) {
        // b4748 tokenizes "\n" (once the normalizer is loaded, below); with nothing left (T5's normalizer
        // turns it into a space that is then dropped) the type's default pad id, before the metadata's.
        nl_ = pad_;
    } else {
        nl_ = text_to_token("\n");
    }

    // Special token ids from the metadata (an id outside the vocabulary keeps the default).
    const struct {
        const char *key;
        int32_t *id;
    } id_keys[] = {
        {"tokenizer.ggml.bos_token_id", &bos_},         {"tokenizer.ggml.eos_token_id", &eos_},
        {"tokenizer.ggml.eot_token_id", &eot_},         {"tokenizer.ggml.eom_token_id", &eom_},
        {"tokenizer.ggml.unknown_token_id", &unk_},     {"tokenizer.ggml.seperator_token_id", &sep_},
        {"tokenizer.ggml.padding_token_id", &pad_},     {"tokenizer.ggml.mask_token_id", &mask_},
        {"tokenizer.ggml.fim_pre_token_id", &fim_pre_}, {"tokenizer.ggml.fim_suf_token_id", &fim_suf_},
        {"tokenizer.ggml.fim_mid_token_id", &fim_mid_}, {"tokenizer.ggml.fim_pad_token_id", &fim_pad_},
        {"tokenizer.ggml.fim_rep_token_id", &fim_rep_}, {"tokenizer.ggml.fim_sep_token_id", &fim_sep_},
        {"tokenizer.ggml.prefix_token_id", &fim_pre_},  {"tokenizer.ggml.suffix_token_id", &fim_suf_},
        {"tokenizer.ggml.middle_token_id", &fim_mid_},
    };
    for (const auto &k : id_keys) {
        const auto v = f.get_int(k.key);
        if (v && *v >= 0 && *v < int64_t(n)) *k.id = int32_t(*v);
    }
    if (const auto cls = f.get_int("tokenizer.ggml.cls_token_id");
        cls && !f.find("tokenizer.ggml.bos_token_id")) {
        if (*cls >= 0 && *cls < int64_t(n)) bos_ = int32_t(*cls);
    }
    add_bos_ = f.get_bool("tokenizer.ggml.add_bos_token").value_or(add_bos_);
    add_eos_ = f.get_bool("tokenizer.ggml.add_eos_token").value_or(add_eos_);
    add_sep_ = f.get_bool("tokenizer.ggml.add_sep_token").value_or(add_sep_);

    // Defaults that point outside a small vocabulary mean "absent".
    for (int32_t *id : {&bos_, &eos_, &eot_, &eom_, &unk_, &sep_, &pad_, &mask_, &nl_, &fim_pre_, &fim_suf_,
                        &fim_mid_, &fim_pad_, &fim_rep_, &fim_sep_}) {
        if (*id >= int32_t(n)) *id = -1;
    }

    // Older conversions do not name these tokens; find them by their text and make them control tokens.
    // The lists are b4748's (llama-vocab.cpp), not later llama.cpp's. Where a vocabulary holds several
    // texts of one list, the earlier text wins (b4748 takes whichever its hash map visits first).
    const auto find_by_text = [&](int32_t &id, std::initializer_list<const char *> names) {
        if (id >= 0) return;
        for (const char *name : names) {
            id = text_to_token(name);
            if (id >= 0) break;
        }
        if (id >= 0 && !(tokens_[size_t(id)].attr & kAttrControl)) tokens_[size_t(id)].attr = kAttrControl;
    };
    find_by_text(eot_, {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<EOT>",
                        "<｜end▁of▁sentence｜>"});
    find_by_text(eom_, {"<|eom_id|>"});
    find_by_text(fim_pre_, {"<|fim_prefix|>", "<fim-prefix>", "<｜fim▁begin｜>", "<PRE>"});
    find_by_text(fim_suf_, {"<|fim_suffix|>", "<fim-suffix>", "<｜fim▁hole｜>", "<SUF>"});
    find_by_text(fim_mid_, {"<|fim_middle|>", "<fim-middle>", "<｜fim▁end｜>", "<MID>"});
    find_by_text(fim_pad_, {"<|fim_pad|>", "<fim-pad>", "<PAD>"});
    find_by_text(fim_rep_, {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>"});
    find_by_text(fim_sep_, {"<|file_sep|>"});

    // End-of-generation tokens: FIM pad/repo/sep, tokens whose text says so (b4748's list), and EOS/EOT/EOM.
    static const char *const kEogTexts[] = {"<|eot_id|>",    "<|im_end|>", "<|end|>", "<end_of_turn>",
                                            "<|endoftext|>", "<|eom_id|>", "<EOT>"};
    for (size_t i = 0; i < n; ++i) {
        for (const char *t : kEogTexts) {
            if (text_of(tokens_[i]) == t) {
                eog_.push_back(int32_t(i));
                if (!(tokens_[i].attr & kAttrControl)) tokens_[i].attr = kAttrControl;
                break;
            }
        }
    }
    for (int32_t id : {eos_, eot_, eom_, fim_pad_, fim_rep_, fim_sep_}) {
        if (id >= 0) eog_.push_back(id);
    }
    std::sort(eog_.begin(), eog_.end());
    eog_.erase(std::unique(eog_.begin(), eog_.end()), eog_.end());

    // Tokens matched as whole pieces before tokenization, longest text first.
    for (size_t i = 0; i < n; ++i) {
        if (tokens_[i].attr & (kAttrControl | kAttrUserDefined | kAttrUnknown))
            special_tokens_.push_back(int32_t(i));
    }
    std::stable_sort(special_tokens_.begin(), special_tokens_.end(), [&](int32_t a, int32_t b) {
        return tokens_[size_t(a)].text_size > tokens_[size_t(b)].text_size;
    });

    // Per-model attributes the GGUF does not carry.
    std::string name = f.get_string("general.name").value_or("");
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return char(std::tolower(c)); });
    const std::string arch = f.get_string("general.architecture").value_or("");
    const auto contains = [](const std::string &s, std::initializer_list<const char *> subs) {
        for (const char *sub : subs)
            if (s.find(sub) != std::string::npos) return true;
        return false;
    };
    if (contains(pre_name_, {"jina-v2-de", "jina-v2-es", "jina-v2-code"}) ||
        contains(arch, {"nomic-bert-moe", "jina-bert-v3"})) {
        const int32_t m = text_to_token("<mask>");
        if (m >= 0) tokens_[size_t(m)].attr |= kAttrLstrip;
    } else if (contains(name, {"phi-3", "phi3"})) {
        // Phi-3's special tokens swallow the whitespace after them.
        for (int32_t id : special_tokens_) tokens_[size_t(id)].attr |= kAttrRstrip;
        const auto set_rstrip = [&](const char *text, bool on) {
            const int32_t id = text_to_token(text);
            if (id < 0) return;
            if (on)
                tokens_[size_t(id)].attr |= kAttrRstrip;
            else
                tokens_[size_t(id)].attr &= ~kAttrRstrip;
        };
        set_rstrip("</s>", true);
        for (const char *t : {"<unk>", "<s>", "<|endoftext|>"}) set_rstrip(t, false);
    }

    if (type_ == VocabType::kUgm) {
        load_ugm(f);
        std::vector<int32_t> nl;
        tokenize_ugm("\n", nl);
        if (!nl.empty()) nl_ = nl[0];
    }

    piece_ends_.resize(n);
    for (size_t i = 0; i < n; ++i) {
        pieces_ += render_piece(int32_t(i));
        if (pieces_.size() > UINT32_MAX) throw Error("the vocabulary's pieces take more than 4 GiB");
        piece_ends_[i] = static_cast<uint32_t>(pieces_.size());
    }
    pieces_.shrink_to_fit();
}

// ---- pieces -----------------------------------------------------------------------------------------

std::string Vocab::render_piece(int32_t id) const {
    const TokenData &t = tokens_[size_t(id)];
    const std::string_view text = text_of(t);
    if (t.attr & (kAttrUnknown | kAttrControl | kAttrUserDefined)) return std::string(text);
    switch (type_) {
        case VocabType::kSpm:
        case VocabType::kWpm:
        case VocabType::kUgm:
            if (t.attr & kAttrNormal) {
                std::string s(text);
                replace_all(s, kSpaceMarker, " ");
                return s;
            }
            if (t.attr & kAttrByte) {
                // "<0xNN>"
                if (text.size() == 6 && text.compare(0, 3, "<0x") == 0) {
                    return std::string(1, char(std::strtol(texts_.c_str() + t.text_begin + 3, nullptr, 16)));
                }
                return std::string(text);
            }
            return {};
        case VocabType::kBpe:
            if (t.attr & kAttrNormal) {
                // Undo the byte-level alphabet. A code point outside it is marked as b4748's decoder does:
                // "[UNK_BYTE_0x" + its UTF-8 bytes in lowercase hex + the whole token text + "]".
                std::string s;
                for (uint32_t c : unicode::decode_utf8(text)) {
                    const int b = unicode::codepoint_to_byte(c);
                    if (b >= 0) {
                        s += char(b);
                        continue;
                    }
                    std::string utf8;
                    unicode::append_utf8(utf8, c);
                    s += "[UNK_BYTE_0x";
                    for (unsigned char u : utf8) {
                        char hex[3];
                        std::snprintf(hex, sizeof hex, "%02x", u);
                        s += hex;
                    }
                    s.append(text);
                    s += ']';
                }
                return s;
            }
            return {};
        case VocabType::kRwkv:
        case VocabType::kNone:
            return std::string(text);
    }
    return {};
}

std::string Vocab::token_to_piece(int32_t id, bool special, int32_t lstrip) const {
    const TokenData &t = token(id);
    if (!special && (t.attr & (kAttrUnknown | kAttrControl))) return {};
    const size_t b = id == 0 ? 0 : piece_ends_[size_t(id) - 1];
    const std::string_view p(pieces_.data() + b, piece_ends_[size_t(id)] - b);
    size_t skip = 0;
    while (int32_t(skip) < lstrip && skip < p.size() && p[skip] == ' ') ++skip;
    return std::string(p.substr(skip));
}

std::string Vocab::detokenize(const std::vector<int32_t> &tokens, bool remove_special, bool unparse_special,
                              size_t *raw_size) const {
    for (int32_t id : tokens) token(id);  // range check before any work
    size_t begin = 0, end = tokens.size();
    bool remove_space = add_space_prefix_;
    if (remove_special && add_bos_ && end > begin && tokens[begin] == bos_) {
        remove_space = false;
        ++begin;
    }
    if (remove_special && add_eos_ && end > begin && tokens[end - 1] == eos_) --end;

    std::string out;
    for (size_t i = begin; i < end; ++i) {
        out += token_to_piece(tokens[i], unparse_special, remove_space ? 1 : 0);
        remove_space = false;
    }
    if (raw_size) *raw_size = out.size();
    if (clean_spaces_) out = clean_up_spaces(out);
    return out;
}

// ---- tokenization -------------------------------------------------------------------------------

std::vector<Vocab::Fragment> Vocab::partition(std::string_view text, bool parse_special) const {
    std::vector<Fragment> frags;
    if (text.empty()) return frags;
    frags.push_back({-1, 0, text.size()});
    for (const int32_t id : special_tokens_) {
        const TokenData &t = tokens_[size_t(id)];
        if (!parse_special && (t.attr & (kAttrControl | kAttrUnknown))) continue;
        const std::string_view needle = text_of(t);
        std::vector<Fragment> next;
        bool changed = false;
        for (const Fragment &fr : frags) {
            if (fr.token >= 0) {
                next.push_back(fr);
                continue;
            }
            size_t off = fr.offset, len = fr.length;
            while (len > 0) {
                const size_t hit = text.substr(off, len).find(needle);
                if (hit == std::string_view::npos) {
                    next.push_back({-1, off, len});
                    break;
                }
                changed = true;
                size_t left = hit;
                if (t.attr & kAttrLstrip) {
                    while (left > 0 && is_c_space(text[off + left - 1])) --left;
                }
                if (left > 0) next.push_back({-1, off, left});
                next.push_back({id, 0, 0});
                size_t r_off = off + hit + needle.size();
                size_t r_len = off + len - r_off;
                if (t.attr & kAttrRstrip) {
                    while (r_len > 0 && is_c_space(text[r_off])) ++r_off, --r_len;
                }
                off = r_off;
                len = r_len;
            }
        }
        if (changed) frags = std::move(next);
    }
    return frags;
}

std::vector<int32_t> Vocab::tokenize(std::string_view text, bool add_special, bool parse_special) const {
    std::vector<int32_t> out;
    if (type_ == VocabType::kNone) return out;
    const std::vector<Fragment> frags = partition(text, parse_special);
    const auto piece = [&](const Fragment &fr) { return text.substr(fr.offset, fr.length); };

    switch (type_) {
        case VocabType::kSpm: {
            if (add_special && add_bos_ && bos_ >= 0) out.push_back(bos_);
            bool prev_special = true;  // a space prefix goes at the start and after each special token
            for (const Fragment &fr : frags) {
                if (fr.token >= 0) {
                    out.push_back(fr.token);
                    prev_special = true;
                    continue;
                }
                std::string s;
                if (add_space_prefix_ && prev_special) s = " ";
                s += piece(fr);
                replace_all(s, " ", kSpaceMarker);
                tokenize_spm(s, out);
                prev_special = false;
            }
            if (add_special && add_eos_ && eos_ >= 0) out.push_back(eos_);
            break;
        }
        case VocabType::kBpe:
        case VocabType::kUgm: {
            if (add_special && add_bos_ && bos_ >= 0) out.push_back(bos_);
            for (const Fragment &fr : frags) {
                if (fr.token >= 0)
                    out.push_back(fr.token);
                else if (type_ == VocabType::kBpe)
                    tokenize_bpe(piece(fr), out);
                else
                    tokenize_ugm(piece(fr), out);
            }
            if (add_special && add_eos_ && eos_ >= 0) out.push_back(eos_);
            if (add_special && add_sep_ && sep_ >= 0) out.push_back(sep_);
            break;
        }
        case VocabType::kWpm: {
            if (add_special && add_bos_ && bos_ >= 0) out.push_back(bos_);
            for (const Fragment &fr : frags) {
                if (fr.token >= 0)
                    out.push_back(fr.token);
                else
                    tokenize_wpm(piece(fr), out);
            }
            if (add_special && add_sep_ && sep_ >= 0) out.push_back(sep_);
            break;
        }
        case VocabType::kRwkv:
            throw Error("tokenizing with an RWKV vocabulary is not supported");
        case VocabType::kNone:
            break;
    }
    return out;
}

}  // namespace lctx
