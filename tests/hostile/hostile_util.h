// Helpers for the hostile-input regression tests (docs/HOSTILE-INPUTS.md): rewritten copies of
// models/stories260K.gguf, temporary files, and the expectation that a call fails with lctx::Error whose
// message names the problem.
#pragma once
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "util/error.h"
#include "util/log.h"

namespace hostile {

inline std::string stories_path() {
    return std::string(LCTX_MODELS_DIR) + "/stories260K.gguf";
}

inline void quiet() {
    lctx::log_set_sink([](lctx::LogLevel, const char *, void *) {}, nullptr);
}

// A file under the test temp dir, removed when the object goes away.
class TempFile {
  public:
    explicit TempFile(const std::string &tag)
        // The process id keeps runs of the suite that overlap (ctest -j, two checkouts) off each other's
        // files.
        : path_((std::filesystem::temp_directory_path() /
                 ("lctx-hostile-" + std::to_string(::getpid()) + "-" + tag))
                    .string()) {}
    ~TempFile() { std::remove(path_.c_str()); }
    TempFile(const TempFile &) = delete;
    TempFile &operator=(const TempFile &) = delete;
    const std::string &write(const std::vector<uint8_t> &bytes) const {
        std::ofstream f(path_, std::ios::binary | std::ios::trunc);
        f.write(reinterpret_cast<const char *>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
        return path_;
    }
    const std::string &path() const { return path_; }

  private:
    std::string path_;
};

inline std::vector<uint8_t> read_all(const std::string &path) {
    std::ifstream f(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(f), {}};
}

// stories260K rewritten: metadata edited by `edit`, tensors kept where `keep` says so.
inline std::vector<uint8_t> stories_with(const std::function<void(lctx::gguf::Writer &)> &edit,
                                         const std::function<bool(const std::string &)> &keep = {}) {
    auto f = lctx::gguf::File::open(stories_path());
    lctx::gguf::Writer w;
    for (const lctx::gguf::KeyValue &kv : f->metadata()) w.set(kv.key, kv.value);
    edit(w);
    for (const lctx::gguf::TensorInfo &t : f->tensors())
        if (!keep || keep(t.name)) w.add_tensor(t.name, t.type, t.ne, f->tensor_data(t), t.nbytes);
    return w.to_bytes();
}

// Runs fn; it must throw lctx::Error (exactly that family, not std::bad_alloc or anything else) whose
// message contains every needle.
template <typename F>
void expect_error(F &&fn, std::initializer_list<std::string> needles, const std::string &what = "") {
    try {
        fn();
        ADD_FAILURE() << what << ": no error; expected: " << *needles.begin();
    } catch (const lctx::Error &e) {
        const std::string msg = e.what();
        for (const std::string &n : needles)
            EXPECT_NE(msg.find(n), std::string::npos) << what << ": '" << n << "' not in: " << msg;
    } catch (const std::exception &e) {
        ADD_FAILURE() << what << ": threw " << typeid(e).name() << " (" << e.what()
                      << ") instead of lctx::Error";
    }
}

// While alive, caps this process's address space at what it maps now plus `budget` bytes, so that an absurd
// allocation fails whatever the kernel's overcommit mode (under vm.overcommit_memory = 1 it would "succeed"
// and the first write to it would summon the OOM killer). Relative to the current size because a sanitizer
// build has already reserved terabytes of shadow memory.
class AddressSpaceCap {
  public:
    explicit AddressSpaceCap(uint64_t budget) {
        ok_ = getrlimit(RLIMIT_AS, &old_) == 0;
        if (!ok_) return;
        const uint64_t mapped = mapped_bytes();
        if (mapped == 0) {  // no /proc: no base to cap from
            ok_ = false;
            return;
        }
        rlimit cap = old_;
        const uint64_t want = mapped + budget;
        if (cap.rlim_max == RLIM_INFINITY || want < cap.rlim_max) cap.rlim_cur = want;
        ok_ = setrlimit(RLIMIT_AS, &cap) == 0;
    }
    ~AddressSpaceCap() {
        if (ok_) setrlimit(RLIMIT_AS, &old_);
    }
    AddressSpaceCap(const AddressSpaceCap &) = delete;
    AddressSpaceCap &operator=(const AddressSpaceCap &) = delete;
    bool ok() const { return ok_; }

    // VmSize of this process (/proc/self/status, kB).
    static uint64_t mapped_bytes() {
        std::ifstream f("/proc/self/status");
        std::string key;
        while (f >> key) {
            if (key == "VmSize:") {
                uint64_t kb = 0;
                f >> kb;
                return kb * 1024;
            }
            f.ignore(1 << 20, '\n');
        }
        return 0;
    }

  private:
    rlimit old_{};
    bool ok_ = false;
};

}  // namespace hostile
