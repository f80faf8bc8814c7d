// Errors: every failure that comes from outside (a file, a batch, a request) is reported by throwing
// lctx::Error with a message a user can act on; the C API turns it into its documented error value.
#pragma once
#include <stdexcept>
#include <string>

namespace lctx {

class Error : public std::runtime_error {
public:
    explicit Error(const std::string &what) : std::runtime_error(what) {}
};

}  // namespace lctx
