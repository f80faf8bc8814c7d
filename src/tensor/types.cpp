#include "tensor/types.h"

#include <cctype>
#include <string>

#include "util/error.h"

namespace lctx {

namespace {

struct Entry {
    int32_t id;
    TypeTraits traits;
};

// Block layouts (bytes per block) are the GGUF format's; see quants_*.cpp for the structs.
constexpr Entry kTypes[] = {
    {0, {"f32", 1, 4, false, true, GgmlType::F32}},
    {1, {"f16", 1, 2, false, true, GgmlType::F16}},
    {2, {"q4_0", 32, 18, true, true, GgmlType::Q8_0}},
    {3, {"q4_1", 32, 20, true, true, GgmlType::Q8_1}},
    {6, {"q5_0", 32, 22, true, true, GgmlType::Q8_0}},
    {7, {"q5_1", 32, 24, true, true, GgmlType::Q8_1}},
    {8, {"q8_0", 32, 34, true, true, GgmlType::Q8_0}},
    {9, {"q8_1", 32, 36, true, true, GgmlType::Q8_1}},
    {10, {"q2_K", 256, 84, true, true, GgmlType::Q8_K}},
    {11, {"q3_K", 256, 110, true, true, GgmlType::Q8_K}},
    {12, {"q4_K", 256, 144, true, true, GgmlType::Q8_K}},
    {13, {"q5_K", 256, 176, true, true, GgmlType::Q8_K}},
    {14, {"q6_K", 256, 210, true, true, GgmlType::Q8_K}},
    {15, {"q8_K", 256, 292, true, true, GgmlType::Q8_K}},
    {16, {"iq2_xxs", 256, 66, true, false, GgmlType::Q8_K}},
    {17, {"iq2_xs", 256, 74, true, false, GgmlType::Q8_K}},
    {18, {"iq3_xxs", 256, 98, true, false, GgmlType::Q8_K}},
    {19, {"iq1_s", 256, 50, true, false, GgmlType::Q8_K}},
    {20, {"iq4_nl", 32, 18, true, true, GgmlType::Q8_0}},
    {21, {"iq3_s", 256, 110, true, false, GgmlType::Q8_K}},
    {22, {"iq2_s", 256, 82, true, false, GgmlType::Q8_K}},
    {23, {"iq4_xs", 256, 136, true, true, GgmlType::Q8_K}},
    {24, {"i8", 1, 1, false, false, GgmlType::I8}},
    {25, {"i16", 1, 2, false, false, GgmlType::I16}},
    {26, {"i32", 1, 4, false, false, GgmlType::I32}},
    {27, {"i64", 1, 8, false, false, GgmlType::I64}},
    {28, {"f64", 1, 8, false, false, GgmlType::F64}},
    {29, {"iq1_m", 256, 56, true, false, GgmlType::Q8_K}},
    {30, {"bf16", 1, 2, false, true, GgmlType::BF16}},
    {34, {"tq1_0", 256, 54, true, false, GgmlType::Q8_K}},
    {35, {"tq2_0", 256, 66, true, false, GgmlType::Q8_K}},
};

const TypeTraits *find(int32_t id) {
    for (const Entry &e : kTypes)
        if (e.id == id) return &e.traits;
    return nullptr;
}

}  // namespace

bool type_is_known(int32_t id) { return find(id) != nullptr; }

const TypeTraits &type_traits(GgmlType type) {
    const TypeTraits *t = find(static_cast<int32_t>(type));
    if (!t) throw Error("unknown tensor type id " + std::to_string(static_cast<int32_t>(type)));
    return *t;
}

const char *type_name(GgmlType type) {
    const TypeTraits *t = find(static_cast<int32_t>(type));
    return t ? t->name : "unknown";
}

bool type_from_name(const char *name, GgmlType *out) {
    std::string want(name);
    for (char &c : want) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    for (const Entry &e : kTypes) {
        std::string have(e.traits.name);
        for (char &c : have) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        if (have == want) {
            *out = static_cast<GgmlType>(e.id);
            return true;
        }
    }
    return false;
}

size_t row_size(GgmlType type, int64_t n) {
    const TypeTraits &t = type_traits(type);
    if (n < 0 || n % t.block_size != 0)
        throw Error(std::string("row of ") + std::to_string(n) + " elements is not a whole number of " +
                    t.name + " blocks (" + std::to_string(t.block_size) + ")");
    return static_cast<size_t>(n / t.block_size) * t.type_size;
}

}  // namespace lctx
