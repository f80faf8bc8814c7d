// C API: control-vector files (lctx_control_vector_load in lctx/lctx_ext.h), over the gguf layer's reader.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "capi/capi_internal.h"
#include "gguf/control_vector.h"
#include "lctx/lctx_ext.h"
#include "util/error.h"

extern "C" {

int32_t lctx_control_vector_load(const char *path, float scale, struct lctx_control_vector *out) {
    LCTX_CAPI_REQUIRE(out, -1);
    *out = lctx_control_vector{};
    LCTX_CAPI_REQUIRE(path, -1);
    return lctx::capi::guard(__func__, int32_t{-1}, [&] {
        if (!std::isfinite(scale))
            throw lctx::Error(std::string(path) + ": the scale " + std::to_string(scale) +
                              " is not a finite number");
        std::unique_ptr<lctx::gguf::File> f;
        try {
            f = lctx::gguf::File::open(path);
        } catch (const lctx::Error &e) {
            throw lctx::Error(std::string("control vector ") + e.what());
        }
        const lctx::gguf::ControlVector cv = lctx::gguf::read_control_vector(*f, scale, path);
        float *data = static_cast<float *>(std::malloc(cv.data.size() * sizeof(float)));
        if (!data) throw lctx::Error(std::string(path) + ": out of memory");
        std::memcpy(data, cv.data.data(), cv.data.size() * sizeof(float));
        out->data = data;
        out->len = cv.data.size();
        out->n_embd = cv.n_embd;
        out->layer_count = static_cast<int32_t>(cv.layer_count);
        std::snprintf(out->model_hint, sizeof out->model_hint, "%s", cv.model_hint.c_str());
        return int32_t{0};
    });
}

void lctx_control_vector_free(struct lctx_control_vector *cv) {
    if (!cv) return;
    std::free(cv->data);
    *cv = lctx_control_vector{};
}

}  // extern "C"
