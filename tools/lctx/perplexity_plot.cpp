#include "tools/lctx/perplexity_plot.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>

#include "util/atomic_file.h"

namespace lctx::cli {

namespace {

std::string escape_xml(const std::string &s) {
    std::string out;
    for (char c : s) {
        switch (c) {
            case '&':
                out += "&amp;";
                break;
            case '<':
                out += "&lt;";
                break;
            case '>':
                out += "&gt;";
                break;
            case '"':
                out += "&quot;";
                break;
            default:
                // Control characters are not allowed in XML 1.0 text.
                if (static_cast<unsigned char>(c) >= 0x20 || c == '\t') out += c;
        }
    }
    return out;
}

std::string num(double v, int decimals = 2) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    return buf;
}

// A "nice" tick step (1, 2 or 5 times a power of ten) giving about `target` ticks over `span`.
double tick_step(double span, int target) {
    const double raw = span / std::max(1, target);
    const double mag = std::pow(10.0, std::floor(std::log10(raw)));
    for (double m : {1.0, 2.0, 5.0, 10.0})
        if (raw <= m * mag) return m * mag;
    return 10.0 * mag;
}

}  // namespace

std::string perplexity_plot_check(const std::string &path) {
    const std::filesystem::path p(path);
    std::string ext = p.extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
    struct stat st {};
    if (stat(path.c_str(), &st) == 0) {
        if (!S_ISREG(st.st_mode))
            return "--plot " + path + ": exists and is not a regular file; refusing to write";
    } else if (errno != ENOENT) {
        return "--plot " + path + ": " + std::strerror(errno);
    }
    if (ext != ".svg") return "--plot " + path + ": only SVG charts are written (name the file *.svg)";
    const std::filesystem::path dir = p.has_parent_path() ? p.parent_path() : std::filesystem::path(".");
    std::error_code ec;
    if (!std::filesystem::is_directory(dir, ec))
        return "--plot " + path + ": the folder " + dir.string() + " does not exist";
    return "";
}

std::string perplexity_plot_svg(const PerplexityResult &r, const std::string &title) {
    const double W = 800, H = 480, left = 70, right = 20, top = 50, bottom = 60;
    const double pw = W - left - right, ph = H - top - bottom;
    const size_t n = r.chunks.size();
    double lo = r.ppl - r.ppl_err, hi = r.ppl + r.ppl_err;
    for (const PerplexityChunk &c : r.chunks) {
        lo = std::min({lo, c.ppl, c.cumulative_ppl});
        hi = std::max({hi, c.ppl, c.cumulative_ppl});
    }
    if (!(hi > lo)) hi = lo + 1.0;
    const double step = tick_step(hi - lo, 6);
    lo = std::floor(lo / step) * step;
    hi = std::ceil(hi / step) * step;
    // Window k (1-based) at x; one window alone sits in the middle.
    auto x_of = [&](double k) { return left + (n > 1 ? (k - 1) / static_cast<double>(n - 1) : 0.5) * pw; };
    auto y_of = [&](double v) { return top + (hi - v) / (hi - lo) * ph; };

    std::string s;
    s += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
    s += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(W, 0) + "\" height=\"" + num(H, 0) +
         "\" viewBox=\"0 0 " + num(W, 0) + " " + num(H, 0) +
         "\" font-family=\"sans-serif\" font-size=\"12\">\n";
    s += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
    s += "<text x=\"" + num(W / 2) + "\" y=\"22\" text-anchor=\"middle\" font-size=\"15\">" +
         escape_xml(title) + "</text>\n";
    s += "<text x=\"" + num(W / 2) +
         "\" y=\"40\" text-anchor=\"middle\">Final estimate: PPL = " + num(r.ppl, 4) + " +/- " +
         num(r.ppl_err, 5) + " (" + std::to_string(r.count) + " tokens)</text>\n";
    // The final estimate's uncertainty as a band, then the grid and the axes.
    s += "<rect class=\"final-band\" x=\"" + num(left) + "\" y=\"" + num(y_of(r.ppl + r.ppl_err)) +
         "\" width=\"" + num(pw) + "\" height=\"" + num(y_of(r.ppl - r.ppl_err) - y_of(r.ppl + r.ppl_err)) +
         "\" fill=\"#1f77b4\" fill-opacity=\"0.12\"/>\n";
    for (double v = lo; v <= hi + step / 2; v += step) {
        s += "<line x1=\"" + num(left) + "\" x2=\"" + num(left + pw) + "\" y1=\"" + num(y_of(v)) +
             "\" y2=\"" + num(y_of(v)) + "\" stroke=\"#ddd\"/>\n";
        s += "<text x=\"" + num(left - 6) + "\" y=\"" + num(y_of(v) + 4) + "\" text-anchor=\"end\">" +
             num(v, step < 0.1 ? 3
                    : step < 1 ? 2
                               : 1) +
             "</text>\n";
    }
    const double xstep = std::max(1.0, tick_step(static_cast<double>(std::max<size_t>(n, 1)), 10));
    for (double k = 1; k <= static_cast<double>(n); k += xstep)
        s += "<text x=\"" + num(x_of(k)) + "\" y=\"" + num(top + ph + 18) + "\" text-anchor=\"middle\">" +
             num(k, 0) + "</text>\n";
    s += "<rect x=\"" + num(left) + "\" y=\"" + num(top) + "\" width=\"" + num(pw) + "\" height=\"" +
         num(ph) + "\" fill=\"none\" stroke=\"#333\"/>\n";
    s += "<text x=\"" + num(left + pw / 2) + "\" y=\"" + num(H - 14) +
         "\" text-anchor=\"middle\">window</text>\n";
    s += "<text transform=\"translate(18 " + num(top + ph / 2) +
         ") rotate(-90)\" text-anchor=\"middle\">perplexity</text>\n";
    // The two series: each window alone (thin, grey) and the cumulative estimate (as printed).
    auto series = [&](const char *cls, const char *colour, double width, auto value) {
        std::string pts;
        for (size_t i = 0; i < n; ++i)
            pts +=
                (i ? " " : "") + num(x_of(static_cast<double>(i + 1))) + "," + num(y_of(value(r.chunks[i])));
        s += std::string("<polyline class=\"") + cls + "\" fill=\"none\" stroke=\"" + colour +
             "\" stroke-width=\"" + num(width, 1) + "\" points=\"" + pts + "\"/>\n";
        for (size_t i = 0; i < n; ++i)
            s += std::string("<circle class=\"") + cls + "\" cx=\"" + num(x_of(static_cast<double>(i + 1))) +
                 "\" cy=\"" + num(y_of(value(r.chunks[i]))) + "\" r=\"2.5\" fill=\"" + colour + "\"/>\n";
    };
    series("window", "#999", 1.0, [](const PerplexityChunk &c) { return c.ppl; });
    series("cumulative", "#1f77b4", 2.0, [](const PerplexityChunk &c) { return c.cumulative_ppl; });
    // Legend.
    const double lx = left + 12, ly = top + 14;
    s += "<line x1=\"" + num(lx) + "\" x2=\"" + num(lx + 24) + "\" y1=\"" + num(ly) + "\" y2=\"" + num(ly) +
         "\" stroke=\"#1f77b4\" stroke-width=\"2\"/>\n";
    s +=
        "<text x=\"" + num(lx + 30) + "\" y=\"" + num(ly + 4) + "\">cumulative (printed [k] values)</text>\n";
    s += "<line x1=\"" + num(lx) + "\" x2=\"" + num(lx + 24) + "\" y1=\"" + num(ly + 18) + "\" y2=\"" +
         num(ly + 18) + "\" stroke=\"#999\"/>\n";
    s += "<text x=\"" + num(lx + 30) + "\" y=\"" + num(ly + 22) + "\">each window alone</text>\n";
    s += "</svg>\n";
    return s;
}

std::string write_file_whole(const std::string &path, const std::string &text) {
    try {
        AtomicFile f(path);  // refuses a device, FIFO or folder; follows a symbolic link
        f.write(text.data(), text.size());
        f.commit();
    } catch (const std::exception &e) {
        return e.what();
    }
    return "";
}

}  // namespace lctx::cli
