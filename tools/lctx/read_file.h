// Reading a whole input file named on the command line, with one clear reason when it cannot be read: a
// directory (which std::ifstream opens and then reads as nothing) or an error of the system.
#pragma once
#include <string>

namespace lctx::cli {

// The bytes of `path` into *out; false with *why ("'PATH' is a directory", "cannot read 'PATH': ...").
bool read_whole_file(const std::string &path, std::string *out, std::string *why);

}  // namespace lctx::cli
