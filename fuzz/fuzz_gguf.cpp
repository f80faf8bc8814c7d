// Fuzzes the GGUF reader: any bytes are either a file whose every tensor lies inside it, or a GgufError.
// Everything a parsed file offers (typed getters, display strings, tensor data) is then read back.
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "fuzz_util.h"
#include "gguf/gguf.h"

using namespace lctx;

namespace {

void check(bool ok, const char *what) {
    if (!ok) {
        std::fprintf(stderr, "fuzz_gguf: invariant broken: %s\n", what);
        std::abort();
    }
}

// Calls every getter on a key; a type mismatch is a GgufError, nothing else may escape.
void read_key(const gguf::File &f, const std::string &key) {
    auto attempt = [](auto &&fn) {
        try {
            fn();
        } catch (const gguf::GgufError &) {
        }
    };
    attempt([&] { (void)f.get_string(key); });
    attempt([&] { (void)f.get_int(key); });
    attempt([&] { (void)f.get_float(key); });
    attempt([&] { (void)f.get_bool(key); });
    attempt([&] { (void)f.get_string_array(key); });
    attempt([&] { (void)f.get_float_array(key); });
    attempt([&] { (void)f.get_int_array(key); });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const bool quiet = (fuzz::quiet_log(), true);
    (void)quiet;
    std::unique_ptr<gguf::File> f;
    try {
        f = gguf::File::from_buffer(data, size);
    } catch (const gguf::GgufError &) {
        return 0;
    }
    check(f->size() == size, "size() differs from the input");
    check(f->alignment() != 0 && (f->alignment() & (f->alignment() - 1)) == 0, "alignment not a power of 2");
    // A file without tensors may end before its (aligned) data section would start.
    check(f->tensors().empty() || f->data_offset() <= f->size(), "data section starts past the end");
    for (const gguf::KeyValue &kv : f->metadata()) {
        check(f->find(kv.key) == &kv.value, "find() does not return the entry");
        (void)kv.value.to_display_string();
        read_key(*f, kv.key);
    }
    read_key(*f, "no.such.key");
    uint64_t checksum = 0;
    for (const gguf::TensorInfo &t : f->tensors()) {
        check(f->find_tensor(t.name) == &t, "find_tensor() does not return the tensor");
        check(t.offset % f->alignment() == 0, "tensor offset not aligned");
        check(t.offset <= f->size() - f->data_offset() && t.nbytes <= f->size() - f->data_offset() - t.offset,
              "tensor outside the file");
        check(t.ne.size() >= 1 && t.ne.size() <= size_t(gguf::kMaxDims), "bad dimension count");
        check(t.n_elements() > 0, "tensor with no elements");
        // Touch the first and last byte so ASan sees a bad range.
        if (t.nbytes) checksum += f->tensor_data(t)[0] + f->tensor_data(t)[t.nbytes - 1];
    }
    return static_cast<int>(checksum & 0);
}
