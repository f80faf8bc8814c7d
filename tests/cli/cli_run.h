// Running the lctx binary from the CLI tests: one command to its end (popen), or a child process with
// pipes that a test talks to and signals (chat, Ctrl-C).
#pragma once
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace lctx::testing {

inline std::string lctx_bin() {
    return std::string(LCTX_BIN_DIR) + "/lctx";
}

struct CliResult {
    int status;  // exit status; -1 when it could not run or was killed by a signal
    std::string out;
};

// Runs `lctx ARGS` through bash; with merge_stderr the output holds stderr too, else stderr is
// dropped. Standard input is empty unless ARGS redirect it (a prompt would otherwise come from the
// test's own stdin).
inline CliResult run_cli(const std::string &args, bool merge_stderr = false) {
    const bool own_stdin = args.find('<') != std::string::npos;
    const std::string cmd = lctx_bin() + " " + args + (own_stdin ? "" : " </dev/null") +
                            (merge_stderr ? " 2>&1" : " 2>/dev/null");
    // bash, not sh: tests use <<< and $'...'.
    std::string quoted = "'";
    for (char c : cmd) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    quoted += "'";
    CliResult r{-1, {}};
    FILE *p = popen(("/bin/bash -c " + quoted).c_str(), "r");
    if (!p) return r;
    std::array<char, 4096> buf;
    size_t n;
    while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
    const int st = pclose(p);
    r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return r;
}

// lctx as a child with its stdin and stdout (stderr merged) on pipes.
class CliProcess {
  public:
    explicit CliProcess(const std::vector<std::string> &args) {
        int in[2], out[2];
        if (pipe(in) != 0 || pipe(out) != 0) return;
        pid_ = fork();
        if (pid_ == 0) {
            dup2(in[0], 0);
            dup2(out[1], 1);
            dup2(out[1], 2);
            close(in[1]);
            close(out[0]);
            std::vector<std::string> all = {lctx_bin()};
            all.insert(all.end(), args.begin(), args.end());
            std::vector<char *> argv;
            for (std::string &a : all) argv.push_back(a.data());
            argv.push_back(nullptr);
            execv(argv[0], argv.data());
            _exit(127);
        }
        close(in[0]);
        close(out[1]);
        in_ = in[1];
        out_ = out[0];
    }
    ~CliProcess() {
        if (in_ >= 0) close(in_);
        if (out_ >= 0) close(out_);
        if (pid_ > 0 && !reaped_) {
            kill(pid_, SIGKILL);
            waitpid(pid_, nullptr, 0);
        }
    }
    bool started() const { return pid_ > 0; }
    void write_line(const std::string &s) {
        const std::string l = s + "\n";
        (void)!::write(in_, l.data(), l.size());
    }
    void close_stdin() {
        close(in_);
        in_ = -1;
    }
    void signal(int sig) { kill(pid_, sig); }
    // Sends `sig` and waits until the process has taken it (no longer pending in /proc/PID/status), so that a
    // second one sent next cannot merge with it. False when it is still pending after the timeout.
    bool signal_delivered(int sig, double timeout_s = 10) {
        kill(pid_, sig);
        const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
        const unsigned long long bit = 1ull << (sig - 1);
        while (std::chrono::steady_clock::now() < end) {
            std::ifstream f("/proc/" + std::to_string(pid_) + "/status");
            std::string line;
            bool pending = false;
            while (std::getline(f, line))
                if (line.rfind("ShdPnd:", 0) == 0 || line.rfind("SigPnd:", 0) == 0)
                    pending |= (std::stoull(line.substr(7), nullptr, 16) & bit) != 0;
            if (!pending) return true;
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        return false;
    }
    // Reads until `needle` appears after `from` in everything read so far, or the timeout passes.
    bool wait_for(const std::string &needle, size_t from = 0, double timeout_s = 30) {
        const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
        while (output_.find(needle, from) == std::string::npos) {
            const auto left =
                std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
            if (left.count() <= 0 || !read_some(static_cast<int>(left.count()))) return false;
        }
        return true;
    }
    // Reads until more than n bytes came after `from`, or the timeout passes.
    bool wait_bytes(size_t n, size_t from = 0, double timeout_s = 30) {
        const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
        while (output_.size() <= from + n) {
            const auto left =
                std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
            if (left.count() <= 0 || !read_some(static_cast<int>(left.count()))) return false;
        }
        return true;
    }
    // Reads to the end of output and returns the exit status (1000 + signal when killed by one, so that
    // death by SIGINT differs from exit(130)).
    int wait_exit(double timeout_s = 30) {
        const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
        for (;;) {
            const auto left =
                std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
            if (left.count() <= 0 || !read_some(static_cast<int>(left.count()))) break;
        }
        int st = 0;
        pid_t got = 0;
        while ((got = waitpid(pid_, &st, WNOHANG)) == 0 && std::chrono::steady_clock::now() < end)
            usleep(10000);  // closed its output, not yet gone
        if (got != pid_) {
            kill(pid_, SIGKILL);
            waitpid(pid_, &st, 0);
            reaped_ = true;
            return -1;
        }
        reaped_ = true;
        return WIFEXITED(st) ? WEXITSTATUS(st) : 1000 + WTERMSIG(st);
    }
    const std::string &output() const { return output_; }

  private:
    // False at end of output or timeout.
    bool read_some(int timeout_ms) {
        pollfd p{out_, POLLIN, 0};
        if (poll(&p, 1, timeout_ms) <= 0) return false;
        char buf[4096];
        const ssize_t n = ::read(out_, buf, sizeof buf);
        if (n <= 0) return false;
        output_.append(buf, static_cast<size_t>(n));
        return true;
    }
    pid_t pid_ = -1;
    int in_ = -1, out_ = -1;
    bool reaped_ = false;
    std::string output_;
};

inline std::string temp_file(const std::string &name) {
    return (std::filesystem::temp_directory_path() / ("lctx_cli_" + std::to_string(getpid()) + "_" + name))
        .string();
}

}  // namespace lctx::testing
