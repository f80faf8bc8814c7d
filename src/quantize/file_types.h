// The file types llama-quantize names (llama_ftype): the type most matrices get, and how a user spells it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "tensor/types.h"

namespace lctx::quantize {

// llama_ftype ids (llama.h) of the file types below.
enum FileTypeId : int32_t {
    kFtypeAllF32 = 0,
    kFtypeF16 = 1,
    kFtypeQ4_0 = 2,
    kFtypeQ4_1 = 3,
    kFtypeQ8_0 = 7,
    kFtypeQ5_0 = 8,
    kFtypeQ5_1 = 9,
    kFtypeQ2_K = 10,
    kFtypeQ3_K_S = 11,
    kFtypeQ3_K_M = 12,
    kFtypeQ3_K_L = 13,
    kFtypeQ4_K_S = 14,
    kFtypeQ4_K_M = 15,
    kFtypeQ5_K_S = 16,
    kFtypeQ5_K_M = 17,
    kFtypeQ6_K = 18,
    kFtypeQ2_K_S = 21,
    kFtypeIQ4_NL = 25,
    kFtypeIQ4_XS = 30,
    kFtypeBF16 = 32,
};

struct FileType {
    const char *name;  // llama-quantize's spelling: "Q4_K_M"
    int32_t id;        // llama_ftype
    GgmlType base;     // the type of most matrices (llama_model_quantize's default_type)
    const char *what;  // one line for --help
};

// The file types lctx writes, in llama-quantize's order.
const std::vector<FileType> &file_types();
// By id; null when lctx cannot write that file type.
const FileType *find_file_type(int32_t id);
// By name, case-insensitive, with llama-quantize's aliases (Q3_K = Q3_K_M, Q4_K = Q4_K_M, Q5_K = Q5_K_M) and
// the numeric ids; null when unknown.
const FileType *parse_file_type(const std::string &name);
// The tensor types a quantized file may hold (what --output-tensor-type and the mixtures can choose): F32,
// F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K..Q6_K, IQ4_NL, IQ4_XS.
bool is_storage_type(GgmlType type);

}  // namespace lctx::quantize
