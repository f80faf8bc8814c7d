// Importance matrices written by llama-imatrix: per weight matrix, the mean of the squared activations
// that met each of its input columns (per expert for 3-D expert tensors). The quantizers that take them
// weigh each column's error by it.
#pragma once
#include <string>
#include <unordered_map>
#include <vector>

namespace lctx::quantize {

struct ImportanceMatrix {
    // Tensor name -> ne[0] values (times the number of experts), already divided by the call counts.
    std::unordered_map<std::string, std::vector<float>> values;
    std::string dataset;  // the file the statistics were collected on, when the file says
    int chunks = 0;       // chunks of text processed, when the file says
};

// Reads llama-imatrix's legacy binary file (b4748: int32 entry count; per entry an int32 name length, the
// name, int32 ncall, int32 nval, nval floats; then optionally int32 chunk count, int32 length and the dataset
// name) or the newer GGUF imatrix (tensors NAME.in_sum2 and NAME.counts). Throws lctx::Error naming the file
// and what is wrong.
ImportanceMatrix load_imatrix(const std::string &path);

}  // namespace lctx::quantize
