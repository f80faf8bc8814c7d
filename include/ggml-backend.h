/* lctx has no ggml: this header forwards to the slice of ggml's C interface that programs written for
 * llama.h use (types, enums, ggml_backend_load_all, ggml_time_us). See lctx/ggml_compat.h. */
#ifndef LCTX_GGML_BACKEND_H
#define LCTX_GGML_BACKEND_H
#include "lctx/ggml_compat.h"
#endif
