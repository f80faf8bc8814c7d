// Jinja syntax tree: expressions and statements, each with the line and column it starts at so that
// evaluation errors can say where they happened.
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "chat/jinja_value.h"

namespace lctx::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
    enum class Kind {
        Literal,    // value
        Name,       // name
        List,       // items
        Tuple,      // items (a Python tuple behaves as a list here)
        Dict,       // items as key, value, key, value ...
        Attr,       // a.name
        Subscript,  // a[b]
        Slice,      // a[b:c:d]; absent parts are null
        Call,       // a(items, kwargs)
        Filter,     // a | name(items, kwargs)
        Test,       // a is [not] name(items)
        Unary,      // op a
        Binary,     // a op b
        Cond,       // b if a else c
    };
    Kind kind;
    int line = 0, col = 0;
    Value value;
    std::string name;  // Name, Attr, Filter, Test; op of Unary/Binary
    bool negated = false;
    ExprPtr a, b, c;
    std::vector<ExprPtr> items;
    std::vector<std::pair<std::string, ExprPtr>> kwargs;
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct MacroParam {
    std::string name;
    ExprPtr default_value;  // may be null
};

struct Stmt {
    enum class Kind {
        Text,         // text
        Output,       // {{ expr }}
        If,           // conds[i] -> bodies[i]; else_body
        For,          // targets in expr [if cond] body else_body
        Set,          // target = expr  (target: Name, Attr or Tuple of Names)
        SetBlock,     // {% set name %}body{% endset %}
        Macro,        // name(params) body
        CallBlock,    // {% call(params) expr %}body{% endcall %}
        FilterBlock,  // {% filter expr %} body: expr is a Filter chain applied to the body's text
        Block,        // a body rendered in place ({% generation %})
        Break,
        Continue,
        Do,  // {% do expr %}
    };
    Kind kind;
    int line = 0, col = 0;
    std::string text;  // Text; name of SetBlock / Macro
    ExprPtr expr, target, cond;
    std::vector<ExprPtr> conds;
    std::vector<Body> bodies;
    Body body, else_body;
    std::vector<std::string> targets;
    std::vector<MacroParam> params;
};

}  // namespace lctx::jinja
