// An in-process `lctx serve` on 127.0.0.1 with an ephemeral port, over the model shipped in models/, and
// the helpers the server tests share (an httplib client, SSE parsing, /metrics values).
#pragma once
#include <httplib.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "server/engine.h"
#include "server/http_server.h"

namespace lctx::testing {

// A script of tests/server run by node, with npm packages installed by name into a folder of the build
// folder on first use (`packages`: names separated by spaces; `folder`: that folder's name). `skip` says why
// it cannot run (node or npm missing, a package not installable offline); else `status` and `out` are the
// script's (stdout and stderr).
struct NpmScriptRun {
    std::string skip;
    int status = 0;
    std::string out;
};
inline NpmScriptRun run_npm_script(const std::string &script, const std::string &packages,
                                   const std::string &folder, const std::string &args) {
    NpmScriptRun r;
    if (std::system("command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1") != 0) {
        r.skip = "node/npm are not installed: the " + script + " test is skipped";
        return r;
    }
    const std::string dir = std::string(LCTX_BIN_DIR) + "/../" + folder;
    // Tests that share a folder run side by side under ctest -j: one installs while the others wait on the
    // folder's lock, and a marker written after a whole install (not the presence of node_modules/NAME, which
    // a half-done install already has) says the packages are there.
    const std::string install = "mkdir -p " + dir + " && cd " + dir + " && flock .install.lock sh -c '" +
                                "test -f .installed || { npm install --silent --no-audit --no-fund " + packages +
                                " >/dev/null 2>&1 && echo \"" + packages + "\" > .installed; }' && grep -qxF \"" +
                                packages + "\" .installed";
    if (std::system(install.c_str()) != 0) {
        r.skip = "npm could not install " + packages + " (offline?): the " + script + " test is skipped";
        return r;
    }
    // The script must resolve the packages from that folder: run a copy placed there, one per process (a
    // test beside it may be copying its own).
    const std::string copy = dir + "/" + std::to_string(getpid()) + "-" + script;
    const std::string cmd = "cp " + std::string(LCTX_TESTS_DIR) + "/server/" + script + " " + copy +
                            " && node " + copy + " " + args + " 2>&1; s=$?; rm -f " + copy + "; exit $s";
    FILE *p = popen(cmd.c_str(), "r");
    if (!p) {
        r.status = -1;
        r.out = "popen failed";
        return r;
    }
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
    r.status = pclose(p);
    return r;
}

// A script of tests/server run by node against a server, with the official OpenAI client (npm `openai`).
inline NpmScriptRun run_openai_npm_script(const std::string &script, int port) {
    return run_npm_script(script, "openai", "npm-openai", "http://127.0.0.1:" + std::to_string(port) + "/v1");
}

inline std::string stories_model() {
    return std::string(LCTX_MODELS_DIR) + "/stories260K.gguf";
}

class LocalServer {
  public:
    explicit LocalServer(server::EngineOptions eo, server::ServerOptions so = {}) {
        signal(SIGPIPE, SIG_IGN);
        if (eo.model_path.empty()) eo.model_path = stories_model();
        so.host = "127.0.0.1";
        so.port = 0;
        so.log = std::getenv("LCTX_SERVER_TEST_LOG") != nullptr;
        engine = std::make_unique<server::Engine>(eo);
        engine->start();
        http = std::make_unique<server::HttpServer>(so);
        http->set_engine(engine.get());
        port = http->bind();
        listener = std::thread([this] { http->listen(); });
    }
    ~LocalServer() {
        engine->stop();
        http->stop();
        if (listener.joinable()) listener.join();
    }
    std::unique_ptr<httplib::Client> client(const std::string &api_key = "") const {
        auto c = std::make_unique<httplib::Client>("127.0.0.1", port);
        c->set_read_timeout(60, 0);
        if (!api_key.empty()) c->set_bearer_token_auth(api_key.c_str());
        return c;
    }
    // POST a JSON body; the response (status -1 when the request failed).
    std::pair<int, nlohmann::json> post(const std::string &path, const nlohmann::json &body,
                                        const std::string &api_key = "") const {
        auto c = client(api_key);
        auto r = c->Post(path.c_str(), body.dump(), "application/json");
        if (!r) return {-1, nullptr};
        return {r->status, nlohmann::json::parse(r->body, nullptr, false)};
    }
    // A value of /metrics by its full name (labels included), or -1.
    double metric(const std::string &name) const {
        auto r = client()->Get("/metrics");
        if (!r) return -1;
        std::istringstream in(r->body);
        std::string line;
        while (std::getline(in, line)) {
            if (line.empty() || line[0] == '#') continue;
            const size_t sp = line.rfind(' ');
            if (line.substr(0, sp) == name) return std::stod(line.substr(sp + 1));
        }
        return -1;
    }

    std::unique_ptr<server::Engine> engine;
    std::unique_ptr<server::HttpServer> http;
    int port = -1;
    std::thread listener;
};

// The JSON of each `data:` line of an SSE body; "[DONE]" lines become the string "[DONE]"; a line that
// is not JSON becomes a discarded value (tests check for it).
inline std::vector<nlohmann::json> sse_events(const std::string &body) {
    std::vector<nlohmann::json> out;
    std::istringstream in(body);
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("data: ", 0) != 0) continue;
        const std::string d = line.substr(6);
        if (d == "[DONE]")
            out.emplace_back("[DONE]");
        else
            out.push_back(nlohmann::json::parse(d, nullptr, false));
    }
    return out;
}

// The text of a streamed completion or chat completion (choice 0).
inline std::string sse_text(const std::vector<nlohmann::json> &evs) {
    std::string s;
    for (const auto &e : evs) {
        if (!e.is_object() || !e.contains("choices") || e["choices"].empty()) continue;
        const auto &c = e["choices"][0];
        if (c.contains("text")) s += c["text"].get<std::string>();
        if (c.contains("delta") && c["delta"].contains("content"))
            s += c["delta"]["content"].get<std::string>();
    }
    return s;
}

}  // namespace lctx::testing
