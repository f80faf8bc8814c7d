// Shared by the libFuzzer harnesses: silencing the library's log, and handing fuzz bytes to loaders
// that take a path.
#pragma once
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "util/log.h"

namespace lctx::fuzz {

// Refusals are the expected outcome of almost every input; their log lines would drown the fuzzer's.
inline void quiet_log() {
    log_set_sink([](LogLevel, const char *, void *) {}, nullptr);
}

// A file in /dev/shm (memory-backed where it exists, /tmp otherwise) named after this process, so
// parallel fuzzing jobs do not share it.
class ScratchFile {
  public:
    explicit ScratchFile(const char *tag) {
        const char *dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
        path_ = std::string(dir) + "/lctx_fuzz_" + tag + "_" + std::to_string(getpid());
    }
    ~ScratchFile() { std::remove(path_.c_str()); }
    ScratchFile(const ScratchFile &) = delete;
    ScratchFile &operator=(const ScratchFile &) = delete;

    // Replaces the file's contents; aborts when it cannot (a broken harness must not pass silently).
    const std::string &write(const uint8_t *data, size_t size) {
        std::FILE *f = std::fopen(path_.c_str(), "wb");
        if (!f || (size && std::fwrite(data, 1, size, f) != size) || std::fclose(f) != 0) {
            std::fprintf(stderr, "fuzz: cannot write %s\n", path_.c_str());
            std::abort();
        }
        return path_;
    }
    const std::string &path() const { return path_; }

  private:
    std::string path_;
};

}  // namespace lctx::fuzz
