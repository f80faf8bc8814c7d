// The file types lctx can write and their spellings (the names and ids of llama-quantize's type list).
#include "quantize/file_types.h"

#include <cctype>

namespace lctx::quantize {

const std::vector<FileType> &file_types() {
    static const std::vector<FileType> kTypes = {
        {"Q4_0", kFtypeQ4_0, GgmlType::Q4_0, "4.5 bits per weight, 32-element blocks with a scale"},
        {"Q4_1", kFtypeQ4_1, GgmlType::Q4_1, "5 bits per weight, blocks with a scale and a minimum"},
        {"Q5_0", kFtypeQ5_0, GgmlType::Q5_0, "5.5 bits per weight"},
        {"Q5_1", kFtypeQ5_1, GgmlType::Q5_1, "6 bits per weight"},
        {"IQ4_NL", kFtypeIQ4_NL, GgmlType::IQ4_NL, "4.5 bits per weight, non-linear levels"},
        {"IQ4_XS", kFtypeIQ4_XS, GgmlType::IQ4_XS, "4.25 bits per weight, non-linear levels in super-blocks"},
        {"Q2_K", kFtypeQ2_K, GgmlType::Q2_K, "Q2_K mixture (attn_v, ffn_down, attn_output at Q3_K/Q4_K)"},
        {"Q2_K_S", kFtypeQ2_K_S, GgmlType::Q2_K, "Q2_K nearly everywhere (needs an importance matrix)"},
        {"Q3_K_S", kFtypeQ3_K_S, GgmlType::Q3_K, "Q3_K everywhere but the output"},
        {"Q3_K_M", kFtypeQ3_K_M, GgmlType::Q3_K, "Q3_K with attn_v, attn_output, ffn_down at Q4_K/Q5_K"},
        {"Q3_K_L", kFtypeQ3_K_L, GgmlType::Q3_K, "Q3_K with attn_v, attn_output, ffn_down at Q5_K"},
        {"Q4_K_S", kFtypeQ4_K_S, GgmlType::Q4_K, "Q4_K with the first layers' attn_v, ffn_down at Q5_K"},
        {"Q4_K_M", kFtypeQ4_K_M, GgmlType::Q4_K, "Q4_K with half of attn_v and ffn_down at Q6_K"},
        {"Q5_K_S", kFtypeQ5_K_S, GgmlType::Q5_K, "Q5_K everywhere but the output"},
        {"Q5_K_M", kFtypeQ5_K_M, GgmlType::Q5_K, "Q5_K with half of attn_v and ffn_down at Q6_K"},
        {"Q6_K", kFtypeQ6_K, GgmlType::Q6_K, "6.56 bits per weight"},
        {"Q8_0", kFtypeQ8_0, GgmlType::Q8_0, "8.5 bits per weight"},
        {"F16", kFtypeF16, GgmlType::F16, "16-bit floats"},
        {"BF16", kFtypeBF16, GgmlType::BF16, "bfloat16"},
        {"F32", kFtypeAllF32, GgmlType::F32, "32-bit floats"},
    };
    return kTypes;
}

const FileType *find_file_type(int32_t id) {
    for (const FileType &t : file_types())
        if (t.id == id) return &t;
    return nullptr;
}

const FileType *parse_file_type(const std::string &name) {
    std::string up;
    for (char c : name) up += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    if (up == "Q3_K") up = "Q3_K_M";
    if (up == "Q4_K") up = "Q4_K_M";
    if (up == "Q5_K") up = "Q5_K_M";
    for (const FileType &t : file_types())
        if (up == t.name) return &t;
    if (!up.empty() && up.size() <= 4 && up.find_first_not_of("0123456789") == std::string::npos)
        return find_file_type(std::stoi(up));
    return nullptr;
}

bool is_storage_type(GgmlType type) {
    switch (type) {
        case GgmlType::F32:
        case GgmlType::F16:
        case GgmlType::BF16:
        case GgmlType::Q4_0:
        case GgmlType::Q4_1:
        case GgmlType::Q5_0:
        case GgmlType::Q5_1:
        case GgmlType::Q8_0:
        case GgmlType::Q2_K:
        case GgmlType::Q3_K:
        case GgmlType::Q4_K:
        case GgmlType::Q5_K:
        case GgmlType::Q6_K:
        case GgmlType::IQ4_NL:
        case GgmlType::IQ4_XS:
            return true;
        default:
            return false;
    }
}

}  // namespace lctx::quantize
