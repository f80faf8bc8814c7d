// `lctx chat` on a terminal, driven through tmux: prompt marker, line editing and history, multi-line
// input, /commands, and Ctrl-C (stops a reply; at the prompt, leaves).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

#include "cli/cli_run.h"

namespace chat_tty_test {
namespace {

std::string sh(const std::string &cmd) {
    std::string out;
    FILE *p = popen(cmd.c_str(), "r");
    if (!p) return out;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    pclose(p);
    return out;
}

class TmuxChat : public ::testing::Test {
  protected:
    void SetUp() override {
        if (std::system("command -v tmux >/dev/null 2>&1") != 0)
            GTEST_SKIP() << "tmux is not installed (scripts/setup.sh installs it)";
        static int n = 0;  // one server per test: a killed server's socket may linger a moment
        sock_ = "lctx_test_" + std::to_string(getpid()) + "_" + std::to_string(n++);
    }
    void TearDown() override {
        if (!sock_.empty()) sh(tmux("kill-server"));
    }
    std::string tmux(const std::string &args) const {
        return "tmux -L " + sock_ + " " + args + " 2>/dev/null";
    }
    // Starts `lctx ARGS` as the only process of a 120x40 terminal (no shell, which a Ctrl-C would also
    // reach); the pane stays after it ends so that its exit status can be read.
    void start(const std::string &args) {
        const std::string cmd = "exec " + lctx::testing::lctx_bin() + " " + args;
        // A long history: an endless reply on a fast machine scrolls far, and the checks count lines in it.
        sh("tmux -L " + sock_ + " -f /dev/null start-server \\; set-option -g history-limit 1000000 \\; " +
           "new-session -d -x 120 -y 40 -s chat \"" + cmd + "\" \\; set-option -t chat remain-on-exit on");
    }
    // The exit status once the program has ended (128 + the signal if one killed it), or -1 after the
    // timeout. tmux marks the pane dead when the terminal closes; on a loaded machine it can leave the
    // process a zombie for a long while before it reaps it and shows the status, so the status of a zombie
    // is read from /proc (its last field, exit_code, holds the wait status).
    int wait_exit(double timeout_s = 30) {
        const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
        while (std::chrono::steady_clock::now() < end) {
            const std::string s = sh(tmux(
                "display -p -t chat '#{pane_dead}:#{pane_dead_status}:#{pane_dead_signal}:#{pane_pid}'"));
            int dead = 0, status = -1, signal = -1;
            if (std::sscanf(s.c_str(), "%d:%d", &dead, &status) == 2 && dead == 1) return status;
            if (std::sscanf(s.c_str(), "%d::%d", &dead, &signal) == 2 && dead == 1) return 128 + signal;
            const size_t colon = s.rfind(':');
            if (dead == 1 && colon != std::string::npos) {
                const int wait_status = zombie_wait_status(std::atoi(s.c_str() + colon + 1));
                if (wait_status >= 0)
                    return WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : 128 + WTERMSIG(wait_status);
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        return -1;
    }
    // The wait status of process `pid` if it is a zombie, else -1.
    static int zombie_wait_status(int pid) {
        if (pid <= 0) return -1;
        std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
        std::string stat;
        std::getline(f, stat);
        const size_t comm_end = stat.rfind(')');  // the command name may hold spaces and parentheses
        if (comm_end == std::string::npos || stat.size() < comm_end + 3 || stat[comm_end + 2] != 'Z')
            return -1;
        const size_t last = stat.find_last_of(' ');
        return std::atoi(stat.c_str() + last + 1);
    }
    void keys(const std::string &k) { sh(tmux("send-keys -t chat " + k)); }
    std::string screen() { return sh(tmux("capture-pane -p -J -S - -t chat")); }  // the whole history
    // Waits until the screen holds `needle` `count` times.
    bool wait_screen(const std::string &needle, int count = 1, double timeout_s = 30) {
        const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
        while (std::chrono::steady_clock::now() < end) {
            const std::string s = screen();
            int n = 0;
            for (size_t at = s.find(needle); at != std::string::npos; at = s.find(needle, at + 1)) ++n;
            if (n >= count) return true;
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        return false;
    }
    // Waits until the screen holds at least `n` more characters than `before`.
    bool wait_growth(size_t before, size_t n, double timeout_s = 30) {
        const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
        while (std::chrono::steady_clock::now() < end) {
            if (screen().size() >= before + n) return true;
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        return false;
    }
    // Waits until the last line on the screen (trailing blanks dropped) is `line`; the default is the empty
    // prompt.
    bool wait_prompt(const std::string &line = ">", double timeout_s = 30) {
        const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
        while (std::chrono::steady_clock::now() < end) {
            std::string s = screen();
            while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
            const size_t nl = s.rfind('\n');
            if (s.substr(nl == std::string::npos ? 0 : nl + 1) == line) return true;
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        return false;
    }
    std::string sock_;
};

TEST_F(TmuxChat, PromptHistoryMultiLineCommandsAndCtrlC) {
    start("chat -n -1 --ignore-eos -c 128 --seed 3");
    ASSERT_TRUE(wait_screen("/help lists the commands")) << screen();
    ASSERT_TRUE(wait_screen("> ")) << screen();
    keys("/help Enter");
    ASSERT_TRUE(wait_screen("/save FILE")) << screen();
    // Multi-line input: a trailing backslash continues on a ". " line.
    keys("'Once upon' '\\' Enter");
    ASSERT_TRUE(wait_screen(". ")) << screen();
    const size_t before_reply = screen().size();
    keys("'a time' Enter");
    // An endless reply (-n -1, --ignore-eos); Ctrl-C stops it and the prompt comes back. It is sent once the
    // reply is longer than the 128-token context could hold (a token is at least one character), so that a
    // shift has surely happened however slowly a loaded machine runs it.
    ASSERT_TRUE(wait_growth(before_reply, 1000)) << screen();
    keys("C-c");
    ASSERT_TRUE(wait_screen("[reply stopped]")) << screen();
    ASSERT_TRUE(wait_screen("[context shift")) << screen();
    // History: Up brings back the last input, line editing moves within it.
    keys("/hlp Left Left BSpace BSpace '/he' End Enter");  // "/hlp": the cursor goes back, "/h" out, "/he" in
    ASSERT_TRUE(wait_screen("/save FILE", 2)) << screen();
    keys("Up");
    ASSERT_TRUE(wait_prompt("> /help")) << screen();  // the line reader shows the recalled input
    keys("Enter");
    ASSERT_TRUE(wait_screen("/save FILE", 3)) << screen();
    // Ctrl-C at the prompt leaves with status 130 (once the prompt is back: before, it would land in /help).
    // readline installs its signal handlers before it draws the prompt (and the reply's Ctrl-C handling ends
    // before it is called), so a Ctrl-C once the prompt shows is one at the prompt.
    ASSERT_TRUE(wait_prompt()) << screen();
    keys("C-c");
    EXPECT_EQ(wait_exit(), 130) << screen();
}

TEST_F(TmuxChat, QuitCommandLeavesNormally) {
    start("chat -n 4 --temp 0");
    ASSERT_TRUE(wait_screen("> ")) << screen();
    keys("Hello Enter");
    ASSERT_TRUE(wait_screen("> ", 2)) << screen();
    keys("/quit Enter");
    EXPECT_EQ(wait_exit(), 0) << screen();
}

}  // namespace
}  // namespace chat_tty_test
