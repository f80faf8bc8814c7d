// `lctx perplexity --plot FILE.svg`: an SVG line chart of the per-window values (the cumulative estimate
// as printed, and each window alone) with the final estimate and its uncertainty as a band.
#pragma once
#include <string>

#include "tools/lctx/perplexity.h"

namespace lctx::cli {

// "" when `path` can take the chart: it ends in .svg, its folder exists, and it is absent or a regular
// file (never a device, FIFO or folder); otherwise the reason, in one line. Checked before the run.
std::string perplexity_plot_check(const std::string &path);

// The whole SVG document. `title` goes to the top (escaped).
std::string perplexity_plot_svg(const PerplexityResult &r, const std::string &title);

// Writes `text` to `path` whole or not at all (util/atomic_file: a temporary file beside it, renamed over
// it; a symbolic link is followed, a device, FIFO or folder refused).
// Returns "" or the reason (the file is then as it was).
std::string write_file_whole(const std::string &path, const std::string &text);

}  // namespace lctx::cli
