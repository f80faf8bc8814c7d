// Command-line helpers shared by the subcommands: llama.cpp's option spellings, escape processing,
// --logit-bias values, and parsing that reports an error in one line.
#pragma once
#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

namespace lctx::cli {

// argv with llama.cpp's multi-letter short options (-ub, -ctk, -cnv, ...), which CLI11 would read as
// bundles of one-letter flags, replaced by their long forms ("-ub=8" keeps its value). argv[0] kept.
std::vector<std::string> normalize_args(int argc, const char *const *argv);

// `-e`: \n \t \r \\ \' \" \? \a \b \f \v, \xHH and \NNN (octal); an unknown or cut escape stays as is.
std::string process_escapes(const std::string &s);

struct TokenBias {
    int32_t token;
    float bias;
};
// "TOKEN+BIAS", "TOKEN-BIAS" or "TOKEN BIAS" (BIAS may be "inf"); false with *why set when malformed.
bool parse_logit_bias(const std::string &s, TokenBias *out, std::string *why);

// Sets what every subcommand shares: the last occurrence of a repeated option wins, --help shows
// the defaults, --version prints the build.
void configure_app(CLI::App &app);

// Parses args (argv[0] first). Returns -1 to go on, or the exit status: 0 after --help / --version,
// 1 after a parse error, reported as "lctx <cmd>: <option>: <why>" in one line.
int parse_or_report(CLI::App &app, const std::string &cmd, std::vector<std::string> args);

std::string version_string();

// The model shipped in the repo (-m's default): the build's source tree, then ./models, then next to the
// binary.
std::string default_model_path();
// -t's thread count: n, or every core for 0.
int resolved_threads(int32_t n);

}  // namespace lctx::cli
