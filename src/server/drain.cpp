#include "server/drain.h"

#include <chrono>
#include <thread>

namespace lctx::server {

bool drain(HttpServer &http, const Engine &engine, int timeout_ms, const std::function<bool()> &interrupted) {
    http.drain();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    for (;;) {
        if (engine.idle()) return true;
        if (std::chrono::steady_clock::now() >= deadline || (interrupted && interrupted())) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
}

}  // namespace lctx::server
