// C API: process-wide setup, clocks, logging, system info, the built-in chat templates
// and the slice of ggml that llama.h programs call.
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "capi/capi_internal.h"
#include "chat/builtin_templates.h"
#include "grammar/json_schema.h"
#include "kernels/cpu_features.h"
#include "kernels/dot.h"
#include "lctx/lctx_ext.h"
#include "tensor/types.h"

namespace lctx::capi {

int32_t copy_out(const std::string &s, char *buf, size_t buf_size) {
    if (buf && buf_size > 0) {
        const size_t n = std::min(s.size(), buf_size - 1);
        std::memcpy(buf, s.data(), n);
        buf[n] = '\0';
    }
    return static_cast<int32_t>(s.size());
}

double now_ms() {
    using namespace std::chrono;
    return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

}  // namespace lctx::capi

namespace {

// llama_log_set: the C callback behind lctx's log sink. Level values coincide (DEBUG 1 .. ERROR 4).
struct CLogTarget {
    ggml_log_callback cb = nullptr;
    void *user_data = nullptr;
};
CLogTarget g_log_target;

void c_log_trampoline(lctx::LogLevel level, const char *text, void *user_data) {
    const auto *t = static_cast<const CLogTarget *>(user_data);
    t->cb(static_cast<ggml_log_level>(level), text, t->user_data);
}

}  // namespace

namespace lctx::capi {

void print_info(const char *text) {
    if (g_log_target.cb)
        g_log_target.cb(GGML_LOG_LEVEL_INFO, text, g_log_target.user_data);
    else
        std::fputs(text, stderr);
}

}  // namespace lctx::capi

extern "C" {

// ---- ggml surface ----

void ggml_backend_load_all(void) {}  // one built-in CPU backend: nothing to load

int64_t ggml_time_us(void) {
    using namespace std::chrono;
    return duration_cast<microseconds>(steady_clock::now().time_since_epoch()).count();
}

const char *ggml_type_name(enum ggml_type type) {
    return lctx::type_name(static_cast<lctx::GgmlType>(type));
}

// ---- process-wide ----

void llama_backend_init(void) {
    (void)lctx::kernels::cpu_features();
}  // probe the CPU once, up front
void llama_backend_free(void) {}
void llama_numa_init(enum ggml_numa_strategy numa) {
    if (numa != GGML_NUMA_STRATEGY_DISABLED)
        LCTX_LOG_INFO("llama_numa_init: NUMA placement is not used by lctx");
}

int64_t llama_time_us(void) {
    return ggml_time_us();
}
size_t llama_max_devices(void) {
    return 16;
}
bool llama_supports_mmap(void) {
    return true;
}
bool llama_supports_mlock(void) {
    return false;
}
bool llama_supports_gpu_offload(void) {
    return false;
}
bool llama_supports_rpc(void) {
    return false;
}

const char *llama_print_system_info(void) {
    static std::string s;
    const lctx::kernels::CpuFeatures &f = lctx::kernels::cpu_features();
    char buf[512];
    if (f.has_neon_level()) {
        // ARM64: b4748's names of the features its ARM kernels use, and the level lctx's kernels run at
        std::snprintf(buf, sizeof buf,
                      "CPU : NEON = %d | ARM_FMA = %d | FP16_VA = %d | DOTPROD = %d | MATMUL_INT8 = %d | "
                      "KERNELS = %s | ",
                      f.asimd, f.asimd, f.fphp, f.asimddp, f.i8mm,
                      lctx::kernels::isa_name(lctx::kernels::isa_detected()));
        s = buf;
        return s.c_str();
    }
    std::snprintf(
        buf, sizeof buf,
        "CPU : AVX = %d | AVX2 = %d | FMA = %d | F16C = %d | BMI2 = %d | AVX512 = %d | AVX512_BW = %d | "
        "AVX512_VL = %d | AVX512_DQ = %d | AVX512_VNNI = %d | AVX512_BF16 = %d | KERNELS = %s | ",
        f.avx && f.os_avx, f.avx2, f.fma, f.f16c, f.bmi2, f.avx512f && f.os_avx512, f.avx512bw, f.avx512vl,
        f.avx512dq, f.avx512vnni, f.avx512bf16,
        f.has_avx512_level() ? "avx512"
        : f.has_avx2_level() ? "avx2"
                             : "scalar");
    s = buf;
    return s.c_str();
}

void llama_log_set(ggml_log_callback log_callback, void *user_data) {
    if (!log_callback) {
        lctx::log_set_sink(nullptr, nullptr);
        g_log_target = {};
        return;
    }
    g_log_target.cb = log_callback;
    g_log_target.user_data = user_data;
    lctx::log_set_sink(c_log_trampoline, &g_log_target);
}

// ---- chat templates: b4748's built-in formats (src/chat/builtin_templates.h) ----

int32_t llama_chat_apply_template(const char *tmpl, const struct llama_chat_message *chat, size_t n_msg,
                                  bool add_ass, char *buf, int32_t length) {
    // NULL means chatml in b4748 (the function lost its model argument; see LLAMA-API.md section 12).
    const std::string name = lctx::chat::builtin_template_detect(tmpl ? tmpl : "chatml");
    if (name.empty()) return -1;
    std::vector<lctx::ChatMessage> messages;
    messages.reserve(n_msg);
    for (size_t i = 0; i < n_msg; ++i) {
        if (!chat || !chat[i].role || !chat[i].content) return -1;
        messages.push_back({chat[i].role, chat[i].content});
    }
    std::string out;
    if (!lctx::chat::builtin_template_apply(name, messages, add_ass, out)) return -1;
    if (out.size() > static_cast<size_t>(INT32_MAX)) return -1;
    // strncpy semantics: NUL-terminated only when it fits; the caller grows the buffer on a larger result.
    if (buf && length > 0) std::strncpy(buf, out.c_str(), static_cast<size_t>(length));
    return static_cast<int32_t>(out.size());
}

int32_t llama_chat_builtin_templates(const char **output, size_t len) {
    const auto &names = lctx::chat::builtin_template_names();
    for (size_t i = 0; output && i < len && i < names.size(); ++i) output[i] = names[i];
    return static_cast<int32_t>(names.size());
}

int32_t lctx_json_schema_to_grammar(const char *schema, char *buf, size_t buf_size) {
    LCTX_CAPI_REQUIRE(schema, -1);
    return lctx::capi::guard(__func__, int32_t{-1}, [&] {
        return lctx::capi::copy_out(lctx::grammar::json_schema_to_gbnf(std::string_view(schema)), buf,
                                    buf_size);
    });
}

}  // extern "C"
