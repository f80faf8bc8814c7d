#include "tools/lctx/interrupt.h"

#include <signal.h>
#include <unistd.h>

#include <csignal>

namespace lctx::cli {

namespace {

volatile sig_atomic_t g_in_reply = 0;
volatile sig_atomic_t g_requested = 0;

void on_sigint(int) {
    if (g_in_reply && !g_requested) {
        g_requested = 1;
        return;
    }
    // Only async-signal-safe calls here.
    const char nl = '\n';
    (void)!write(STDOUT_FILENO, &nl, 1);
    _exit(130);
}

}  // namespace

void interrupt_install() {
    struct sigaction sa {};
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;  // a read at the prompt is not cut short by the first Ctrl-C of a reply
    sigaction(SIGINT, &sa, nullptr);
}

void interrupt_begin_reply() {
    g_requested = 0;
    g_in_reply = 1;
}

void interrupt_end_reply() {
    g_in_reply = 0;
    g_requested = 0;
}

bool interrupt_requested() {
    return g_requested != 0;
}

}  // namespace lctx::cli
