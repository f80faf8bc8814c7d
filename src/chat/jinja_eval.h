// Jinja evaluator: a parsed template rendered against a context of variables.
//
//   auto t = jinja::Template::parse(src);           // throws JinjaError with line and column
//   std::string s = t.render(context, env);         // context: a dict Value (messages, bos_token, ...)
#pragma once
#include <cstdint>
#include <ctime>
#include <functional>
#include <memory>
#include <string>

#include "chat/jinja_ast.h"
#include "chat/jinja_lexer.h"
#include "chat/jinja_value.h"

namespace lctx::jinja {

struct Environment {
    // The local time strftime_now() formats; null means the system clock.
    std::function<std::tm()> now;
    // Bounds for a hostile template (a model file's template is outside input): statements and loop
    // iterations executed, and the bytes of any one string or of the output.
    uint64_t max_steps = 50'000'000;
    size_t max_string = 256u << 20;
};

class Template {
  public:
    static Template parse(const std::string &src, const LexOptions &opts = {});
    // Throws JinjaError ("line L, column C: ...") for a runtime error, including raise_exception().
    std::string render(const Value &context, const Environment &env = {}) const;

  private:
    std::shared_ptr<const Body> body_;
};

}  // namespace lctx::jinja
