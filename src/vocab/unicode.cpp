#include "vocab/unicode.h"

#include <algorithm>
#include <array>

namespace lctx::unicode {

uint32_t decode_one(std::string_view text, size_t *offset) {
    const size_t i = *offset;
    const auto b = [&](size_t k) { return static_cast<uint8_t>(text[i + k]); };
    const auto cont = [&](size_t k) { return i + k < text.size() && (b(k) & 0xC0) == 0x80; };
    const uint8_t lead = b(0);
    uint32_t cpt = kReplacement;
    size_t n = 1;
    if (lead < 0x80) {
        cpt = lead;
    } else if ((lead & 0xE0) == 0xC0 && cont(1)) {
        cpt = (uint32_t(lead & 0x1F) << 6) | (b(1) & 0x3F);
        n = 2;
    } else if ((lead & 0xF0) == 0xE0 && cont(1) && cont(2)) {
        cpt = (uint32_t(lead & 0x0F) << 12) | (uint32_t(b(1) & 0x3F) << 6) | (b(2) & 0x3F);
        n = 3;
    } else if ((lead & 0xF8) == 0xF0 && cont(1) && cont(2) && cont(3)) {
        cpt = (uint32_t(lead & 0x07) << 18) | (uint32_t(b(1) & 0x3F) << 12) | (uint32_t(b(2) & 0x3F) << 6) |
              (b(3) & 0x3F);
        n = 4;
        if (cpt > kMaxCodepoint) {
            cpt = kReplacement;
            n = 1;
        }
    }
    *offset = i + n;
    return cpt;
}

std::vector<uint32_t> decode_utf8(std::string_view text) {
    std::vector<uint32_t> out;
    out.reserve(text.size());
    size_t offset = 0;
    while (offset < text.size()) out.push_back(decode_one(text, &offset));
    return out;
}

void append_utf8(std::string &out, uint32_t cpt) {
    if (cpt < 0x80) {
        out += char(cpt);
    } else if (cpt < 0x800) {
        out += char(0xC0 | (cpt >> 6));
        out += char(0x80 | (cpt & 0x3F));
    } else if (cpt < 0x10000) {
        out += char(0xE0 | (cpt >> 12));
        out += char(0x80 | ((cpt >> 6) & 0x3F));
        out += char(0x80 | (cpt & 0x3F));
    } else {
        out += char(0xF0 | (cpt >> 18));
        out += char(0x80 | ((cpt >> 12) & 0x3F));
        out += char(0x80 | ((cpt >> 6) & 0x3F));
        out += char(0x80 | (cpt & 0x3F));
    }
}

std::string encode_utf8(uint32_t cpt) {
    std::string s;
    append_utf8(s, cpt);
    return s;
}

Category category(uint32_t cpt) {
    if (cpt > kMaxCodepoint) return Category::kUndefined;
    const data::CategoryRun *begin = data::kCategoryRuns;
    const data::CategoryRun *end = begin + data::kCategoryRunCount;
    const auto *it =
        std::upper_bound(begin, end, cpt, [](uint32_t c, const data::CategoryRun &r) { return c < r.first; });
    return (it - 1)->category;
}

bool is_whitespace(uint32_t cpt) {
    switch (cpt) {
        case 0x09:
        case 0x0A:
        case 0x0B:
        case 0x0C:
        case 0x0D:
        case 0x20:
        case 0x85:
        case 0xA0:
        case 0x1680:
        case 0x2028:
        case 0x2029:
        case 0x202F:
        case 0x205F:
        case 0x3000:
            return true;
        default:
            return cpt >= 0x2000 && cpt <= 0x200A;
    }
}

uint32_t to_lower(uint32_t cpt) {
    if (cpt < 0x80) return (cpt >= 'A' && cpt <= 'Z') ? cpt + 32 : cpt;
    const data::CodepointPair *begin = data::kLowercase;
    const data::CodepointPair *end = begin + data::kLowercaseCount;
    const auto *it = std::lower_bound(begin, end, cpt,
                                      [](const data::CodepointPair &p, uint32_t c) { return p.from < c; });
    return (it != end && it->from == cpt) ? it->to : cpt;
}

uint32_t nfd_first(uint32_t cpt) {
    if (cpt < 0xC0) return cpt;
    const data::CodepointRange *begin = data::kNfdFirst;
    const data::CodepointRange *end = begin + data::kNfdFirstCount;
    const auto *it = std::upper_bound(begin, end, cpt,
                                      [](uint32_t c, const data::CodepointRange &r) { return c < r.first; });
    if (it == begin) return cpt;
    --it;
    return (cpt <= it->last) ? it->to : cpt;
}

namespace {

// GPT-2's bytes_to_unicode: printable bytes keep their value, the rest are numbered from 256 upwards.
struct ByteAlphabet {
    std::array<uint32_t, 256> to_cpt{};
    std::array<int16_t, 324> from_cpt{};  // code points 0..323 cover the whole alphabet

    ByteAlphabet() {
        from_cpt.fill(-1);
        uint32_t next = 256;
        for (int b = 0; b < 256; ++b) {
            const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
            to_cpt[b] = printable ? uint32_t(b) : next++;
            from_cpt[to_cpt[b]] = int16_t(b);
        }
    }
};

const ByteAlphabet &byte_alphabet() {
    static const ByteAlphabet alphabet;
    return alphabet;
}

}  // namespace

uint32_t byte_to_codepoint(uint8_t byte) {
    return byte_alphabet().to_cpt[byte];
}

int codepoint_to_byte(uint32_t cpt) {
    const auto &a = byte_alphabet();
    return cpt < a.from_cpt.size() ? a.from_cpt[cpt] : -1;
}

std::string byte_encode(std::string_view bytes) {
    std::string out;
    out.reserve(bytes.size() * 2);
    for (char c : bytes) append_utf8(out, byte_to_codepoint(uint8_t(c)));
    return out;
}

}  // namespace lctx::unicode
