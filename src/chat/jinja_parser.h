// Jinja parser: tokens -> syntax tree (recursive descent with Jinja2's operator precedence: conditional,
// or, and, not, comparisons, + -, ~, * / // %, **, unary, then postfix . [] () and filters/tests).
#pragma once
#include <string>

#include "chat/jinja_ast.h"
#include "chat/jinja_lexer.h"

namespace lctx::jinja {

// Throws JinjaError ("line L, column C: ...") on a syntax error.
Body parse(const std::string &src, const LexOptions &opts = {});

}  // namespace lctx::jinja
