// Fuzzes the control-vector file reader (src/gguf/control_vector.h) and the FILE:SCALE argument parser
// (src/generate/control_vector_file.h): any bytes are either refused
// with lctx::Error (the GGUF reader's or the control-vector checks') or give a vector whose layout holds:
// n_embd values per layer from layer 1 to the highest direction, every one finite. The first byte picks the
// scale; the rest is the file.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "fuzz_util.h"
#include "generate/control_vector_file.h"
#include "gguf/control_vector.h"
#include "util/error.h"

using namespace lctx;

namespace {

void check(bool ok, const char *what) {
    if (!ok) {
        std::fprintf(stderr, "fuzz_control_vector: invariant broken: %s\n", what);
        std::abort();
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const bool quiet = (fuzz::quiet_log(), true);
    (void)quiet;
    if (size < 1) return 0;
    const float scales[4] = {1.0f, -0.5f, 0.0f, 1e30f};
    const float scale = scales[data[0] % 4];
    std::unique_ptr<gguf::File> file;
    try {
        file = gguf::File::from_buffer(data + 1, size - 1);
    } catch (const Error &) {
        return 0;
    }
    gguf::ControlVector cv;
    try {
        cv = gguf::read_control_vector(*file, scale, "<fuzz>");
    } catch (const Error &) {
        return 0;
    }
    check(cv.n_embd >= 1, "n_embd below 1");
    check(cv.layer_count >= 1 && cv.layer_count <= gguf::kMaxControlVectorLayer, "layer count out of range");
    check(cv.data.size() == static_cast<size_t>(cv.layer_count) * static_cast<size_t>(cv.n_embd),
          "buffer length is not layer_count * n_embd");
    // Finite directions times a finite scale: infinite only when the product overflows (scale 1e30).
    if (data[0] % 4 != 3)
        for (float v : cv.data) check(std::isfinite(v), "a non-finite value");
    // The FILE:SCALE argument parser on the same bytes as text.
    generate::ControlVectorSource src;
    std::string why;
    if (generate::parse_control_vector_arg(std::string(reinterpret_cast<const char *>(data), size), &src,
                                           &why))
        check(std::isfinite(src.scale), "a non-finite scale accepted");
    return 0;
}
