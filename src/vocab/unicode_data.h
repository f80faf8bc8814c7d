// Code point tables derived from the Unicode Character Database (see gen_unicode_data.py).
#pragma once
#include <cstddef>
#include <cstdint>

namespace lctx::unicode {

// General category, grouped the way the pre-tokenizer regexes classify (\p{L}, \p{N}, ...).
enum class Category : uint8_t {
    kUndefined,    // Cn: unassigned
    kNumber,       // Nd Nl No
    kLetter,       // Lu Ll Lt Lm Lo
    kSeparator,    // Zs Zl Zp
    kAccentMark,   // Mn Mc Me
    kPunctuation,  // Pc Pd Pe Pf Pi Po Ps
    kSymbol,       // Sc Sk Sm So
    kControl,      // Cc Cf Co Cs
};

namespace data {

struct CategoryRun {
    uint32_t first;  // the run lasts until the next run's first
    Category category;
};
struct CodepointPair {
    uint32_t from;
    uint32_t to;
};
struct CodepointRange {
    uint32_t first;
    uint32_t last;
    uint32_t to;
};

extern const CategoryRun kCategoryRuns[];
extern const size_t kCategoryRunCount;
extern const CodepointPair kLowercase[];  // sorted by `from`
extern const size_t kLowercaseCount;
extern const CodepointRange kNfdFirst[];  // sorted, disjoint
extern const size_t kNfdFirstCount;

}  // namespace data
}  // namespace lctx::unicode
