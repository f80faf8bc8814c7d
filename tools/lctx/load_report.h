// What loading a model shows on the command line, whether through llama.h (capi_model.h) or the internal
// classes (common.h): the progress line on a terminal, and the one-line error that says when a file holds no
// weights.
#pragma once
#include <string>

namespace lctx::cli {

// A progress callback (llama.h's and Model::load's shape): "loading model: NN%" on stderr, cleared at 100%.
bool draw_load_progress(float progress, void *);

// After a failed load: clears the progress line (when drawn) and prints why on stderr, saying so when the
// file holds no weights (a vocabulary-only GGUF, which `lctx tokenize` works with), else detail.
void report_load_failure(const std::string &path, bool progress_drawn, const std::string &detail);

}  // namespace lctx::cli
