// Unicode helpers for the tokenizers: UTF-8 decoding that never fails, code point classes, lowercase,
// NFD first code point, and GPT-2's byte <-> code point mapping for byte-level BPE.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "vocab/unicode_data.h"

namespace lctx::unicode {

constexpr uint32_t kReplacement = 0xFFFD;
constexpr uint32_t kMaxCodepoint = 0x10FFFF;
// U+2581 in UTF-8: SentencePiece's visible space (SPM and unigram vocabularies write spaces as it).
inline constexpr char kSpaceMarker[] = "\xE2\x96\x81";

// Byte length of the UTF-8 sequence a lead byte announces (1 for ASCII and for stray continuation
// bytes, 4 for 0xF0..0xFF). Callers clamp it to the bytes that are left.
inline size_t utf8_len(uint8_t lead) {
    static constexpr uint8_t kLen[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    return kLen[lead >> 4];
}

// Decodes one code point at `*offset` and advances it. A malformed sequence (bad lead byte, missing or
// wrong continuation byte, value above U+10FFFF) yields U+FFFD and consumes exactly one byte, so every
// input decodes. Overlong forms and surrogates are passed through as their numeric value.
uint32_t decode_one(std::string_view text, size_t *offset);
std::vector<uint32_t> decode_utf8(std::string_view text);

void append_utf8(std::string &out, uint32_t cpt);  // cpt must be <= U+10FFFF
std::string encode_utf8(uint32_t cpt);

Category category(uint32_t cpt);
// The White_Space property (PropList.txt), which is what the pre-tokenizers treat as \s.
bool is_whitespace(uint32_t cpt);
inline bool is_letter(uint32_t cpt) {
    return category(cpt) == Category::kLetter;
}
inline bool is_number(uint32_t cpt) {
    return category(cpt) == Category::kNumber;
}

uint32_t to_lower(uint32_t cpt);
// First code point of the canonical decomposition (NFD): strips accents from precomposed letters.
uint32_t nfd_first(uint32_t cpt);

// GPT-2 byte-level alphabet: every byte maps to a printable code point (bytes that are already printable
// Latin-1 map to themselves, the others to U+0100 upwards).
uint32_t byte_to_codepoint(uint8_t byte);
// The byte a code point stands for, or -1 when it is not in the alphabet.
int codepoint_to_byte(uint32_t cpt);
// Replaces every byte of `bytes` by the UTF-8 of its alphabet code point.
std::string byte_encode(std::string_view bytes);

}  // namespace lctx::unicode
