// The Kubernetes manifests of deploy/ validate offline (tests/server/validate_deploy.mjs: Kubernetes' schemas
// through npm's kubernetes-models and @kubernetes-models/gateway-api, the InferencePool against the schema
// derived from its CRD), and every metric the endpoint picker is told to read is served by lctx serve. A copy
// with a broken manifest must fail.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "server_fixture.h"

namespace lctx::testing::server_deploy_test {
namespace {

namespace fs = std::filesystem;

const char *kPackages = "kubernetes-models @kubernetes-models/gateway-api yaml ajv";

std::string deploy_dir() {
    return std::string(LCTX_TESTS_DIR) + "/../deploy";
}

TEST(Deploy, ManifestsValidateAndNameServedMetrics) {
    server::EngineOptions eo;
    eo.n_ctx = 1024;
    eo.n_slots = 1;
    eo.n_threads = 1;
    LocalServer srv(eo);
    const NpmScriptRun r =
        run_npm_script("validate_deploy.mjs", kPackages, "npm-deploy",
                       deploy_dir() + " http://127.0.0.1:" + std::to_string(srv.port) + "/metrics");
    if (!r.skip.empty()) GTEST_SKIP() << r.skip;
    EXPECT_EQ(r.status, 0) << r.out;
    EXPECT_NE(r.out.find("manifests valid:"), std::string::npos) << r.out;
}

TEST(Deploy, ABrokenManifestFails) {
    std::string tmpl = std::string(LCTX_BIN_DIR) + "/../deploy-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    const fs::path dir = tmpl;
    fs::copy(deploy_dir(), dir, fs::copy_options::recursive | fs::copy_options::overwrite_existing);
    // The pool's target port as a name instead of a number (the CRD wants an integer).
    const fs::path pool = dir / "inferencepool.yaml";
    std::string text;
    {
        std::ifstream in(pool);
        text.assign(std::istreambuf_iterator<char>(in), {});
    }
    const size_t at = text.find("- number: 8000");
    ASSERT_NE(at, std::string::npos);
    text.replace(at, 14, "- number: http");
    std::ofstream(pool) << text;
    const NpmScriptRun r = run_npm_script("validate_deploy.mjs", kPackages, "npm-deploy", dir.string());
    std::error_code ec;
    fs::remove_all(dir, ec);
    if (!r.skip.empty()) GTEST_SKIP() << r.skip;
    EXPECT_NE(r.status, 0) << r.out;
    EXPECT_NE(r.out.find("/spec/targetPorts/0/number must be integer"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace lctx::testing::server_deploy_test
