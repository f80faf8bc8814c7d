#include "vocab/pretokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>
#include <array>

#include "util/error.h"
#include "vocab/unicode.h"

namespace lctx {

namespace {

// ---- pattern lists ------------------------------------------------------------------------------

const char *const kGpt2Pattern = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))";
// Llama 3's pattern with the case-insensitive group spelled out (both spellings select the scanner).
const char *const kLlama3Pattern =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|)"
    R"( ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char *const kLlama3PatternCi = R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|)"
                                     R"( ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char *const kQwen2Pattern =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|)"
    R"( ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char *const kPoroPattern = R"( ?[^(\s|.,!?…。，、।۔،)]+)";

struct PreName {
    const char *name;
    PreSpec spec;
};

PreSpec spec(PreType t, bool clean = true) {
    PreSpec s;
    s.type = t;
    s.clean_spaces = clean;
    return s;
}

PreSpec with(PreSpec s, bool ignore_merges, bool add_bos, bool add_sep = false, bool no_bos = false) {
    s.ignore_merges = ignore_merges;
    s.add_bos = add_bos;
    s.add_sep = add_sep;
    s.no_bos = no_bos;
    return s;
}

const std::vector<PreName> &pre_names() {
    static const std::vector<PreName> names = [] {
        std::vector<PreName> v;
        const PreSpec llama3 = with(spec(PreType::kLlama3), true, true);
        for (const char *n :
             {"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2"})
            v.push_back({n, llama3});
        v.push_back({"default", spec(PreType::kDefault)});
        v.push_back({"deepseek-llm", spec(PreType::kDeepseekLlm, false)});
        v.push_back({"deepseek-coder", spec(PreType::kDeepseekCoder, false)});
        v.push_back({"deepseek-v3", spec(PreType::kDeepseek3Llm, false)});
        v.push_back({"falcon", spec(PreType::kFalcon)});
        v.push_back({"mpt", spec(PreType::kMpt)});
        v.push_back({"starcoder", spec(PreType::kStarcoder)});
        for (const char *n : {"gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es", "jina-v2-de",
                              "a.x-4.0", "mellum"})
            v.push_back({n, spec(PreType::kGpt2)});
        for (const char *n : {"jina-v1-en", "jina-v2-code", "roberta-bpe"})
            v.push_back({n, with(spec(PreType::kGpt2), false, false, true)});
        v.push_back({"refact", spec(PreType::kRefact)});
        v.push_back({"command-r", spec(PreType::kCommandR, false)});
        for (const char *n : {"qwen2", "deepseek-r1-qwen", "megrez"})
            v.push_back({n, spec(PreType::kQwen2, false)});
        v.push_back({"stablelm2", spec(PreType::kStablelm2)});
        v.push_back({"olmo", spec(PreType::kOlmo)});
        v.push_back({"dbrx", spec(PreType::kDbrx)});
        v.push_back({"smaug-bpe", spec(PreType::kSmaug)});
        v.push_back({"poro-chat", spec(PreType::kPoro, false)});
        for (const char *n : {"chatglm-bpe", "glm4"})
            v.push_back({n, with(spec(PreType::kChatglm4), false, false, false, true)});
        v.push_back({"viking", spec(PreType::kViking, false)});
        v.push_back({"jais", spec(PreType::kJais)});
        v.push_back({"tekken", with(spec(PreType::kTekken, false), true, true)});
        v.push_back({"smollm", spec(PreType::kSmollm, false)});
        v.push_back({"codeshell", spec(PreType::kCodeshell)});
        v.push_back({"bloom", spec(PreType::kBloom)});
        v.push_back({"gpt3-finnish", spec(PreType::kGpt3Finnish)});
        v.push_back({"exaone", spec(PreType::kExaone)});
        v.push_back({"chameleon", with(spec(PreType::kChameleon, false), false, true)});
        v.push_back({"minerva-7b", spec(PreType::kMinerva)});
        for (const char *n : {"gpt-4o", "llama4"}) v.push_back({n, spec(PreType::kGpt4o, false)});
        return v;
    }();
    return names;
}

}  // namespace

bool find_pre_spec(std::string_view name, PreSpec *out) {
    if (name.empty()) {
        *out = spec(PreType::kDefault);
        return true;
    }
    for (const auto &n : pre_names()) {
        if (name == n.name) {
            *out = n.spec;
            return true;
        }
    }
    return false;
}

std::vector<std::string> pre_regexes(PreType type) {
    switch (type) {
        case PreType::kLlama3:
        case PreType::kDbrx:
        case PreType::kSmaug:
        case PreType::kChatglm4:
            return {kLlama3Pattern};
        case PreType::kDeepseekLlm:
            return {
                "[\r\n]",
                "\\s?[A-Za-z\\x{B5}\\x{C0}-\\x{D6}\\x{D8}-\\x{F6}\\x{F8}-\\x{1BA}\\x{1BC}-\\x{1BF}"
                "\\x{1C4}-\\x{293}\\x{295}-\\x{2AF}\\x{370}-\\x{373}\\x{376}\\x{377}\\x{37B}-\\x{37D}"
                "\\x{37F}\\x{386}\\x{388}-\\x{38A}\\x{38C}\\x{38E}-\\x{3A1}\\x{3A3}-\\x{3F5}\\x{3F7}-"
                "\\x{481}\\x{48A}-\\x{52F}\\x{531}-\\x{556}\\x{10A0}-\\x{10C5}\\x{13A0}-\\x{13F5}\\x{13F8}-"
                "\\x{13FD}\\x{1C90}-\\x{1CBA}\\x{1CBD}-\\x{1CBF}\\x{1D00}-\\x{1D2B}\\x{1D6B}-\\x{1D77}"
                "\\x{1D79}-\\x{1D9A}\\x{1E00}-\\x{1F15}\\x{1F18}-\\x{1F1D}\\x{1F20}-\\x{1F45}\\x{1F48}-"
                "\\x{1F4D}\\x{1F50}-\\x{1F57}\\x{1F59}\\x{1F5B}\\x{1F5D}\\x{1F5F}-\\x{1F7D}\\x{1F80}-"
                "\\x{1FB4}\\x{1FB6}-\\x{1FBC}\\x{1FBE}\\x{1FC2}-\\x{1FC4}\\x{1FC6}-\\x{1FCC}\\x{1FD0}-"
                "\\x{1FD3}\\x{1FD6}-\\x{1FDB}\\x{1FE0}-\\x{1FEC}\\x{1FF2}-\\x{1FF4}\\x{1FF6}-\\x{1FFC}"
                "\\x{2102}\\x{2107}\\x{210A}-\\x{2113}\\x{2115}\\x{2119}-\\x{211D}\\x{2124}\\x{2126}"
                "\\x{2128}\\x{212A}-\\x{212D}\\x{212F}-\\x{2134}\\x{2139}\\x{213C}-\\x{213F}\\x{2145}-"
                "\\x{2149}\\x{214E}\\x{2183}\\x{2184}\\x{2C00}-\\x{2C7B}\\x{2C7E}-\\x{2CE4}\\x{2CEB}-"
                "\\x{2CEE}\\x{2CF2}\\x{2CF3}\\x{A640}-\\x{A66D}\\x{A680}-\\x{A69B}\\x{A722}-\\x{A76F}"
                "\\x{A771}-\\x{A787}\\x{A78B}-\\x{A78E}\\x{AB70}-\\x{ABBF}\\x{FB00}-\\x{FB06}\\x{FB13}-"
                "\\x{FB17}\\x{FF21}-\\x{FF3A}\\x{FF41}-\\x{FF5A}\\x{10400}-\\x{1044F}\\x{104B0}-\\x{104D3}"
                "\\x{104D8}-\\x{104FB}\\x{10C80}-\\x{10CB2}\\x{10CC0}-\\x{10CF2}\\x{118A0}-\\x{118DF}"
                "\\x{1E900}-\\x{1E943}]+",
                "\\s?[!-/:-~\\x{FF01}-\\x{FF0F}\\x{FF1A}-\\x{FF5E}\\x{2018}-\\x{201F}\\x{3000}-\\x{3002}]+",
                "\\s+$",
                "[\\x{4E00}-\\x{9FA5}\\x{800}-\\x{4E00}\\x{AC00}-\\x{D7FF}]+",
                "\\p{N}+",
            };
        case PreType::kDeepseek3Llm:
            return {
                "\\p{N}{1,3}",
                "[\\x{4E00}-\\x{9FA5}\\x{3040}-\\x{309F}\\x{30A0}-\\x{30FF}]+",
                "[!\"#$%&'()*+,\\-./"
                ":;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| "
                "?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+",
            };
        case PreType::kDeepseekCoder:
            return {"[\r\n]", "\\s?\\p{L}+", "\\s?\\p{P}+",
                    "[\\x{4E00}-\\x{9FA5}\\x{800}-\\x{4E00}\\x{AC00}-\\x{D7FF}]+", "\\p{N}"};
        case PreType::kFalcon:
            return {"[\\p{P}\\$\\+<=>\\^~\\|`]+", kGpt2Pattern, "[0-9][0-9][0-9]"};
        case PreType::kStarcoder:
        case PreType::kRefact:
        case PreType::kCommandR:
        case PreType::kSmollm:
        case PreType::kCodeshell:
        case PreType::kExaone:
        case PreType::kMinerva:
            return {"\\p{N}", kGpt2Pattern};
        case PreType::kGpt2:
        case PreType::kMpt:
        case PreType::kOlmo:
        case PreType::kJais:
            return {kGpt2Pattern};
        case PreType::kStablelm2:
        case PreType::kQwen2:
            return {kQwen2Pattern};
        case PreType::kPoro:
        case PreType::kBloom:
        case PreType::kGpt3Finnish:
            return {kPoroPattern};
        case PreType::kViking:
            return {kPoroPattern, "\\p{N}"};
        case PreType::kTekken:
            return {
                "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+|[^\\r\\n\\p{L}\\p{N}]?("
                "(?=["
                "\\p{L}])([^a-z]))+((?=[\\p{L}])([^A-Z]))*|\\p{N}| "
                "?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?"
                "!\\S)|\\s+",
            };
        case PreType::kChameleon:
            return {
                "<sentinel:[0-9]+>",      "(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z",
                "([\\t\\n]|    |  )",     "\\p{N}",
                "[\\p{P}!-/:-@\\[-`{-~]", kGpt2Pattern,
            };
        case PreType::kGpt4o:
            return {
                "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]"
                "|'[vV]["
                "eE]|'[mM]|'[lL][lL]|'[dD])?|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))+((?=[\\p{L}])([^A-"
                "Z]))*(?:"
                "'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\\p{N}{1,3}| "
                "?[^\\s\\p{L}\\p{N}]+[\\r\\n/"
                "]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
            };
        case PreType::kDefault:
        default:
            return {"[\\p{P}\\$\\+<=>\\^~\\|]+", kGpt2Pattern, "\\p{N}+", "[0-9][0-9][0-9]"};
    }
}

// ---- rules ----------------------------------------------------------------------------------------

// Outside the anonymous namespace: PreTokenizer::Rule (declared in the header) holds one, and a class with
// external linkage whose field's type has internal linkage draws -Wsubobject-linkage wherever this file is
// not the main file (a unity build).
enum class RuleKind { kGpt2, kLlama3, kTrailingSpace, kCollapsed, kUtf };

namespace {

// The byte each category collapses to, and the ASCII members of that category, as class contents.
struct CollapsedClass {
    const char *pattern;  // e.g. "\p{L}"
    char byte;
    const char *ascii;
};
constexpr std::array<CollapsedClass, 5> kCollapsedClasses = {{
    {"\\p{N}", '\xD1', "0-9"},
    {"\\p{L}", '\xD2', "A-Za-z"},
    {"\\p{P}", '\xD3', "!-#%-*,-/:-;?-@\\[-\\]_\\{\\}"},
    {"\\p{M}", '\xD4', ""},
    {"\\p{S}", '\xD5', "\\$\\+<->\\^`\\|"},
}};

bool uses_categories(const std::string &re) {
    for (const auto &c : kCollapsedClasses)
        if (re.find(c.pattern) != std::string::npos) return true;
    return false;
}

char collapse(uint32_t cpt) {
    if (cpt < 0x80) return char(cpt);
    if (unicode::is_whitespace(cpt)) return '\x0B';
    switch (unicode::category(cpt)) {
        case unicode::Category::kNumber:
            return '\xD1';
        case unicode::Category::kLetter:
            return '\xD2';
        case unicode::Category::kPunctuation:
            return '\xD3';
        case unicode::Category::kAccentMark:
            return '\xD4';
        case unicode::Category::kSymbol:
            return '\xD5';
        default:
            return '\xD0';
    }
}

void append_hex_byte(std::string &out, char b) {
    static const char *hex = "0123456789ABCDEF";
    out += "\\x";
    out += hex[uint8_t(b) >> 4];
    out += hex[uint8_t(b) & 15];
}

// Rewrites \p{X} as a class of its collapsed byte plus its ASCII members (merged into an enclosing class).
std::string collapse_pattern(const std::string &re) {
    for (unsigned char c : re) {
        if (c >= 0x80)
            throw Error("pre-tokenizer regex mixes \\p{..} classes with non-ASCII characters: " + re);
    }
    std::string out;
    bool inside = false;
    for (size_t i = 0; i < re.size(); ++i) {
        if (re[i] == '\\' && i + 1 < re.size() && re[i + 1] != 'p') {
            out += re[i];
            out += re[i + 1];
            ++i;
            continue;
        }
        if (re[i] == '[' && !inside) {
            inside = true;
            out += '[';
            continue;
        }
        if (re[i] == ']' && inside) {
            inside = false;
            out += ']';
            continue;
        }
        bool replaced = false;
        for (const auto &c : kCollapsedClasses) {
            if (re.compare(i, 5, c.pattern) == 0) {
                if (!inside) out += '[';
                append_hex_byte(out, c.byte);
                out += c.ascii;
                if (!inside) out += ']';
                i += 4;
                replaced = true;
                break;
            }
        }
        if (!replaced) out += re[i];
    }
    return out;
}

pcre2_code *compile(const std::string &pattern, uint32_t options) {
    int err = 0;
    PCRE2_SIZE err_offset = 0;
    pcre2_code *code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                     options | PCRE2_DOLLAR_ENDONLY, &err, &err_offset, nullptr);
    if (!code) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(err, msg, sizeof(msg));
        throw Error("pre-tokenizer regex does not compile at offset " + std::to_string(err_offset) + ": " +
                    reinterpret_cast<const char *>(msg) + " (" + pattern + ")");
    }
    return code;
}

// One chunk of code points [begin, begin + len) and the piece lengths it is cut into.
using Offsets = std::vector<size_t>;

// Scanner for GPT-2's pattern  's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)
// and Llama 3's  (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
//                ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
void scan_chunk(const std::vector<uint32_t> &cpts, size_t begin, size_t end, bool llama3, Offsets &out) {
    enum Cls : uint8_t { kNone, kLetter, kNumber, kSpace, kOther };
    const auto cls = [&](size_t p) -> Cls {
        if (p >= end) return kNone;
        const uint32_t c = cpts[p];
        if (unicode::is_whitespace(c)) return kSpace;
        switch (unicode::category(c)) {
            case unicode::Category::kLetter:
                return kLetter;
            case unicode::Category::kNumber:
                return kNumber;
            default:
                return kOther;
        }
    };
    const auto at = [&](size_t p) -> uint32_t { return p < end ? cpts[p] : 0xFFFFFFFFu; };
    const auto lower = [&](size_t p) -> uint32_t { return llama3 ? unicode::to_lower(at(p)) : at(p); };
    const auto is_crlf = [&](size_t p) { return at(p) == '\r' || at(p) == '\n'; };

    size_t pos = begin;
    const auto emit = [&](size_t stop) {
        if (stop > pos) out.push_back(stop - pos);
        pos = stop;
    };
    while (pos < end) {
        const uint32_t c = at(pos);
        const Cls k = cls(pos);
        // contractions
        if (c == '\'' && pos + 1 < end) {
            const uint32_t n1 = lower(pos + 1);
            if (n1 == 's' || n1 == 't' || n1 == 'm' || n1 == 'd') {
                emit(pos + 2);
                continue;
            }
            if (pos + 2 < end) {
                const uint32_t n2 = lower(pos + 2);
                if ((n1 == 'r' && n2 == 'e') || (n1 == 'v' && n2 == 'e') || (n1 == 'l' && n2 == 'l')) {
                    emit(pos + 3);
                    continue;
                }
            }
        }
        if (llama3) {
            // [^\r\n\p{L}\p{N}]?\p{L}+
            if (k == kLetter || (c != '\r' && c != '\n' && k != kNumber && cls(pos + 1) == kLetter)) {
                size_t p = pos + 1;
                while (cls(p) == kLetter) ++p;
                emit(p);
                continue;
            }
            // \p{N}{1,3}
            if (k == kNumber) {
                size_t p = pos;
                while (p < pos + 3 && cls(p) == kNumber) ++p;
                emit(p);
                continue;
            }
        } else {
            // ' ?\p{L}+', ' ?\p{N}+'
            const Cls k2 = (c == ' ') ? cls(pos + 1) : k;
            if (k2 == kLetter || k2 == kNumber) {
                size_t p = pos + (c == ' ' ? 1 : 0);
                while (cls(p) == k2) ++p;
                emit(p);
                continue;
            }
        }
        // ' ?[^\s\p{L}\p{N}]+' (Llama 3 adds [\r\n]*)
        if (k == kOther || (c == ' ' && cls(pos + 1) == kOther)) {
            size_t p = pos + (c == ' ' ? 1 : 0);
            while (cls(p) == kOther) ++p;
            if (llama3) {
                while (is_crlf(p)) ++p;
            }
            emit(p);
            continue;
        }
        // whitespace runs
        size_t run_end = pos;
        size_t last_crlf = 0;
        while (cls(run_end) == kSpace) {
            if (is_crlf(run_end)) last_crlf = run_end + 1;
            ++run_end;
        }
        if (llama3 && last_crlf > 0) {  // \s*[\r\n]+
            emit(last_crlf);
            continue;
        }
        const size_t n = run_end - pos;
        if (n > 1 && run_end < end) {  // \s+(?!\S): leave the last space to the next word
            emit(run_end - 1);
            continue;
        }
        if (n > 0) {  // \s+ (GPT-2: the text no alternative matched, a piece of its own)
            emit(run_end);
            continue;
        }
        emit(pos + 1);
    }
}

}  // namespace

struct PreTokenizer::Rule {
    RuleKind kind = RuleKind::kUtf;
    pcre2_code *code = nullptr;
    ~Rule() {
        if (code) pcre2_code_free(code);
    }
};

PreTokenizer::PreTokenizer(const std::vector<std::string> &regexes) {
    for (const auto &re : regexes) {
        auto rule = std::make_unique<Rule>();
        if (re == kGpt2Pattern) {
            rule->kind = RuleKind::kGpt2;
        } else if (re == kLlama3Pattern || re == kLlama3PatternCi) {
            rule->kind = RuleKind::kLlama3;
        } else if (re == "\\s+$") {
            // a backtracking engine retries this at every space of a long run: scan it instead
            rule->kind = RuleKind::kTrailingSpace;
        } else if (uses_categories(re)) {
            rule->kind = RuleKind::kCollapsed;
            rule->code = compile(collapse_pattern(re), 0);
        } else {
            rule->kind = RuleKind::kUtf;
            // \p{..} beyond the five collapsed classes needs Unicode properties.
            const uint32_t ucp = re.find("\\p{") != std::string::npos ? PCRE2_UCP : 0;
            rule->code = compile(re, PCRE2_UTF | ucp);
        }
        rules_.push_back(std::move(rule));
    }
}

PreTokenizer::~PreTokenizer() = default;

namespace {

// Runs `code` over each chunk of `subject` (chunk boundaries in code points; `byte_at[i]` is the byte
// offset of code point i) and cuts every chunk into matches and the gaps between them.
Offsets regex_split(const pcre2_code *code, const std::string &subject, const std::vector<size_t> &byte_at,
                    const Offsets &chunks, bool utf) {
    Offsets out;
    out.reserve(chunks.size() * 2);
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(code, nullptr);
    const auto cpt_index = [&](size_t byte) {  // code point index of a byte offset at a boundary
        return size_t(std::lower_bound(byte_at.begin(), byte_at.end(), byte) - byte_at.begin());
    };
    size_t chunk_begin = 0;
    for (const size_t chunk_len : chunks) {
        const size_t cb = chunk_begin, ce = chunk_begin + chunk_len;
        chunk_begin = ce;
        const size_t bb = byte_at[cb], be = byte_at[ce];
        const auto *subj = reinterpret_cast<PCRE2_SPTR>(subject.data() + bb);
        const size_t len = be - bb;
        size_t pos = 0;        // byte offset in the chunk where the next search starts
        size_t prev_end = cb;  // code point where the last match ended
        uint32_t opts = 0;
        while (pos <= len) {
            // the subject is valid UTF-8 by construction; checking it on every call would be quadratic
            const int rc =
                pcre2_match(code, subj, len, pos, opts | (utf ? PCRE2_NO_UTF_CHECK : 0), md, nullptr);
            if (rc < 0) {
                if (rc != PCRE2_ERROR_NOMATCH || opts == 0) break;  // errors (match limit): leave the rest
                // no non-empty match where an empty one was: step one character and search again
                if (pos >= len) break;
                pos += utf ? std::min(unicode::utf8_len(uint8_t(subject[bb + pos])), len - pos) : 1;
                opts = 0;
                continue;
            }
            const PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
            const size_t ms = utf ? cpt_index(bb + ov[0]) : cb + ov[0];
            const size_t me = utf ? cpt_index(bb + ov[1]) : cb + ov[1];
            if (ms > prev_end) out.push_back(ms - prev_end);
            if (me > ms) out.push_back(me - ms);
            prev_end = me;
            pos = ov[1];
            opts = (ov[0] == ov[1]) ? (PCRE2_NOTEMPTY_ATSTART | PCRE2_ANCHORED) : 0;
            if (pos == len && opts == 0) break;
        }
        if (ce > prev_end) out.push_back(ce - prev_end);
    }
    pcre2_match_data_free(md);
    return out;
}

}  // namespace

std::vector<std::string> PreTokenizer::split(std::string_view text) const {
    const std::vector<uint32_t> cpts = unicode::decode_utf8(text);
    if (cpts.empty()) return {};
    Offsets offsets = {cpts.size()};

    std::string collapsed;         // one byte per code point
    std::string utf_subject;       // UTF-8 with non-ASCII whitespace as \v
    std::vector<size_t> identity;  // byte offsets of `collapsed` (one per code point)
    std::vector<size_t> byte_at;   // byte offset of each code point in utf_subject (+ end)

    for (const auto &rule : rules_) {
        switch (rule->kind) {
            case RuleKind::kGpt2:
            case RuleKind::kLlama3: {
                Offsets next;
                next.reserve(offsets.size() * 2);
                size_t b = 0;
                for (size_t len : offsets) {
                    scan_chunk(cpts, b, b + len, rule->kind == RuleKind::kLlama3, next);
                    b += len;
                }
                offsets = std::move(next);
                break;
            }
            case RuleKind::kTrailingSpace: {
                // \s+$ : each chunk's trailing whitespace run becomes a piece of its own
                Offsets next;
                next.reserve(offsets.size() * 2);
                size_t b = 0;
                for (size_t len : offsets) {
                    size_t ws = 0;
                    while (ws < len && unicode::is_whitespace(cpts[b + len - 1 - ws])) ++ws;
                    if (len > ws) next.push_back(len - ws);
                    if (ws > 0) next.push_back(ws);
                    b += len;
                }
                offsets = std::move(next);
                break;
            }
            case RuleKind::kCollapsed: {
                if (collapsed.empty()) {
                    collapsed.resize(cpts.size());
                    for (size_t i = 0; i < cpts.size(); ++i) collapsed[i] = collapse(cpts[i]);
                }
                if (identity.empty()) {
                    identity.resize(cpts.size() + 1);
                    for (size_t i = 0; i <= cpts.size(); ++i) identity[i] = i;
                }
                offsets = regex_split(rule->code, collapsed, identity, offsets, false);
                break;
            }
            case RuleKind::kUtf: {
                if (byte_at.empty()) {
                    byte_at.reserve(cpts.size() + 1);
                    for (uint32_t c : cpts) {
                        byte_at.push_back(utf_subject.size());
                        if (c > 0x7F && unicode::is_whitespace(c)) c = 0x0B;
                        if (c >= 0xD800 && c <= 0xDFFF) c = unicode::kReplacement;  // PCRE2 needs valid UTF-8
                        unicode::append_utf8(utf_subject, c);
                    }
                    byte_at.push_back(utf_subject.size());
                }
                offsets = regex_split(rule->code, utf_subject, byte_at, offsets, true);
                break;
            }
        }
    }

    std::vector<std::string> words;
    words.reserve(offsets.size());
    size_t b = 0;
    for (size_t len : offsets) {
        std::string w;
        for (size_t i = b; i < b + len; ++i) unicode::append_utf8(w, cpts[i]);
        words.push_back(std::move(w));
        b += len;
    }
    return words;
}

}  // namespace lctx
