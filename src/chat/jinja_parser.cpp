#include "chat/jinja_parser.h"

#include <cstdlib>
#include <initializer_list>

namespace lctx::jinja {

namespace {

using T = Token::Type;

class Parser {
  public:
    explicit Parser(std::vector<Token> toks) : t_(std::move(toks)) {}

    Body parse_all() {
        std::string end;
        Body b = parse_body({}, end);
        return b;
    }

  private:
    std::vector<Token> t_;
    size_t p_ = 0;
    int depth_ = 0;  // nesting of expressions and blocks; bounded so hostile input cannot blow the stack

    const Token &peek(size_t k = 0) const { return t_[std::min(p_ + k, t_.size() - 1)]; }
    const Token &next() { return t_[p_ < t_.size() - 1 ? p_++ : p_]; }

    [[noreturn]] void fail(const Token &at, const std::string &msg) const {
        throw JinjaError(where(at.line, at.col) + ": " + msg);
    }
    bool is_op(const char *op, size_t k = 0) const { return peek(k).type == T::Op && peek(k).text == op; }
    bool is_name(const char *n, size_t k = 0) const { return peek(k).type == T::Name && peek(k).text == n; }
    bool accept_op(const char *op) {
        if (!is_op(op)) return false;
        ++p_;
        return true;
    }
    bool accept_name(const char *n) {
        if (!is_name(n)) return false;
        ++p_;
        return true;
    }
    void expect_op(const char *op) {
        if (!accept_op(op)) fail(peek(), std::string("expected '") + op + "', found " + describe(peek()));
    }
    std::string expect_name() {
        if (peek().type != T::Name) fail(peek(), "expected a name, found " + describe(peek()));
        return next().text;
    }
    void expect_block_end() {
        if (peek().type != T::BlockEnd) fail(peek(), "expected '%}', found " + describe(peek()));
        ++p_;
    }
    static std::string describe(const Token &t) {
        switch (t.type) {
            case T::Eof:
                return "end of template";
            case T::BlockEnd:
                return "'%}'";
            case T::VarEnd:
                return "'}}'";
            case T::Text:
                return "text";
            case T::String:
                return "a string";
            default:
                return "'" + t.text + "'";
        }
    }

    struct DepthGuard {
        Parser &p;
        explicit DepthGuard(Parser &pp) : p(pp) {
            if (++p.depth_ > 200) p.fail(p.peek(), "template nested too deeply");
        }
        ~DepthGuard() { --p.depth_; }
    };

    static ExprPtr make(Expr::Kind k, const Token &at) {
        auto e = std::make_unique<Expr>();
        e->kind = k;
        e->line = at.line;
        e->col = at.col;
        return e;
    }

    // ---- statements ----

    // Parses until a block tag whose keyword is in `ends` (consumed up to the keyword; returned in
    // `end`), or to the end of the template when `ends` is empty.
    Body parse_body(std::initializer_list<const char *> ends, std::string &end,
                    const Token *opener = nullptr) {
        DepthGuard g(*this);
        Body body;
        while (true) {
            const Token &tok = peek();
            if (tok.type == T::Eof) {
                if (ends.size() == 0) return body;
                std::string want;
                for (const char *e : ends)
                    want += (want.empty() ? "" : " or ") + std::string("{% ") + e + " %}";
                if (opener) fail(*opener, "{% " + opener->text + " %} is not closed: expected " + want);
                fail(tok, "unexpected end of template, expected " + want);
            }
            if (tok.type == T::Text) {
                auto s = std::make_unique<Stmt>();
                s->kind = Stmt::Kind::Text;
                s->text = tok.text;
                s->line = tok.line;
                s->col = tok.col;
                body.push_back(std::move(s));
                ++p_;
            } else if (tok.type == T::VarBegin) {
                ++p_;
                auto s = std::make_unique<Stmt>();
                s->kind = Stmt::Kind::Output;
                s->line = tok.line;
                s->col = tok.col;
                s->expr = parse_expression();
                if (peek().type != T::VarEnd) fail(peek(), "expected '}}', found " + describe(peek()));
                ++p_;
                body.push_back(std::move(s));
            } else if (tok.type == T::BlockBegin) {
                const Token &kw = peek(1);
                if (kw.type != T::Name) fail(kw, "expected a statement name after '{%'");
                for (const char *e : ends)
                    if (kw.text == e) {
                        p_ += 2;
                        end = kw.text;
                        return body;
                    }
                const bool closer = kw.text == "elif" || kw.text == "else" || kw.text.rfind("end", 0) == 0;
                if (closer && opener)
                    fail(kw, "unexpected {% " + kw.text + " %}: the {% " + opener->text + " %} at " +
                                 where(opener->line, opener->col) + " is still open");
                p_ += 2;
                body.push_back(parse_statement(kw, tok));
            } else {
                fail(tok, "unexpected " + describe(tok));
            }
        }
    }

    StmtPtr new_stmt(Stmt::Kind k, const Token &at) {
        auto s = std::make_unique<Stmt>();
        s->kind = k;
        s->line = at.line;
        s->col = at.col;
        return s;
    }

    StmtPtr parse_statement(const Token &kw, const Token &at) {
        const std::string &k = kw.text;
        std::string end;
        Token op = kw;  // where an unclosed block began
        op.line = at.line;
        op.col = at.col;
        if (k == "if") {
            auto s = new_stmt(Stmt::Kind::If, at);
            s->conds.push_back(parse_expression());
            expect_block_end();
            while (true) {
                s->bodies.push_back(parse_body({"elif", "else", "endif"}, end, &op));
                if (end == "elif") {
                    s->conds.push_back(parse_expression());
                    expect_block_end();
                    continue;
                }
                if (end == "else") {
                    expect_block_end();
                    s->else_body = parse_body({"endif"}, end, &op);
                }
                expect_block_end();
                return s;
            }
        }
        if (k == "for") {
            auto s = new_stmt(Stmt::Kind::For, at);
            const bool paren = accept_op("(");
            do s->targets.push_back(expect_name());
            while (accept_op(","));
            if (paren) expect_op(")");
            if (!accept_name("in")) fail(peek(), "expected 'in' in for loop, found " + describe(peek()));
            s->expr = parse_ternary(false);
            if (accept_name("if")) s->cond = parse_or();
            accept_name("recursive");
            expect_block_end();
            s->body = parse_body({"else", "endfor"}, end, &op);
            if (end == "else") {
                expect_block_end();
                s->else_body = parse_body({"endfor"}, end, &op);
            }
            expect_block_end();
            return s;
        }
        if (k == "set") {
            const Token &first = peek();
            // Block form: {% set name %}...{% endset %}
            if (first.type == T::Name && peek(1).type == T::BlockEnd) {
                auto s = new_stmt(Stmt::Kind::SetBlock, at);
                s->text = next().text;
                expect_block_end();
                s->body = parse_body({"endset"}, end, &op);
                expect_block_end();
                return s;
            }
            auto s = new_stmt(Stmt::Kind::Set, at);
            ExprPtr target = parse_primary();
            while (is_op(".")) {
                ++p_;
                auto a = make(Expr::Kind::Attr, peek());
                a->name = expect_name();
                a->a = std::move(target);
                target = std::move(a);
            }
            if (is_op(",")) {
                auto tup = make(Expr::Kind::Tuple, first);
                tup->items.push_back(std::move(target));
                while (accept_op(",")) tup->items.push_back(parse_primary());
                target = std::move(tup);
            }
            check_target(*target);
            s->target = std::move(target);
            expect_op("=");
            s->expr = parse_expression();
            if (is_op(",")) {  // {% set a, b = 1, 2 %}
                auto tup = make(Expr::Kind::Tuple, first);
                tup->items.push_back(std::move(s->expr));
                while (accept_op(",")) tup->items.push_back(parse_expression());
                s->expr = std::move(tup);
            }
            expect_block_end();
            return s;
        }
        if (k == "macro") {
            auto s = new_stmt(Stmt::Kind::Macro, at);
            s->text = expect_name();
            parse_params(s->params);
            expect_block_end();
            s->body = parse_body({"endmacro"}, end, &op);
            if (peek().type == T::Name) ++p_;  // {% endmacro name %}
            expect_block_end();
            return s;
        }
        if (k == "call") {
            auto s = new_stmt(Stmt::Kind::CallBlock, at);
            if (is_op("(")) parse_params(s->params);
            s->expr = parse_expression();
            if (s->expr->kind != Expr::Kind::Call) fail(at, "{% call %} needs a macro call");
            expect_block_end();
            s->body = parse_body({"endcall"}, end, &op);
            expect_block_end();
            return s;
        }
        if (k == "filter") {
            auto s = new_stmt(Stmt::Kind::FilterBlock, at);
            // The filter chain is applied to a placeholder literal replaced by the body's text.
            ExprPtr e = make(Expr::Kind::Literal, at);
            do e = parse_filter(std::move(e));
            while (accept_op("|"));
            s->expr = std::move(e);
            expect_block_end();
            s->body = parse_body({"endfilter"}, end, &op);
            expect_block_end();
            return s;
        }
        if (k == "generation") {
            auto s = new_stmt(Stmt::Kind::Block, at);
            expect_block_end();
            s->body = parse_body({"endgeneration"}, end, &op);
            expect_block_end();
            return s;
        }
        if (k == "break" || k == "continue") {
            expect_block_end();
            return new_stmt(k == "break" ? Stmt::Kind::Break : Stmt::Kind::Continue, at);
        }
        if (k == "do") {
            auto s = new_stmt(Stmt::Kind::Do, at);
            s->expr = parse_expression();
            expect_block_end();
            return s;
        }
        if (k == "elif" || k == "else" || k.rfind("end", 0) == 0) fail(kw, "unexpected {% " + k + " %}");
        fail(kw, "unknown or unsupported statement '" + k + "'");
    }

    void check_target(const Expr &t) {
        if (t.kind == Expr::Kind::Name) return;
        if (t.kind == Expr::Kind::Attr && t.a->kind == Expr::Kind::Name) return;
        if (t.kind == Expr::Kind::Tuple) {
            for (const auto &i : t.items)
                if (i->kind != Expr::Kind::Name) fail(peek(), "cannot assign to this expression");
            return;
        }
        throw JinjaError(where(t.line, t.col) + ": cannot assign to this expression");
    }

    void parse_params(std::vector<MacroParam> &params) {
        expect_op("(");
        while (!is_op(")")) {
            MacroParam m;
            m.name = expect_name();
            if (accept_op("=")) m.default_value = parse_expression();
            params.push_back(std::move(m));
            if (!accept_op(",")) break;
        }
        expect_op(")");
    }

    // ---- expressions ----

    ExprPtr parse_expression() { return parse_ternary(true); }

    ExprPtr parse_ternary(bool allow_cond) {
        DepthGuard g(*this);
        const Token &at = peek();
        ExprPtr e = parse_or();
        while (allow_cond && is_name("if")) {
            ++p_;
            auto c = make(Expr::Kind::Cond, at);
            c->a = parse_or();
            c->b = std::move(e);
            if (accept_name("else")) c->c = parse_ternary(true);
            e = std::move(c);
        }
        return e;
    }

    ExprPtr binary(const std::string &op, ExprPtr l, ExprPtr r, const Token &at) {
        auto e = make(Expr::Kind::Binary, at);
        e->name = op;
        e->a = std::move(l);
        e->b = std::move(r);
        return e;
    }

    ExprPtr parse_or() {
        ExprPtr e = parse_and();
        while (is_name("or")) {
            const Token at = next();
            e = binary("or", std::move(e), parse_and(), at);
        }
        return e;
    }
    ExprPtr parse_and() {
        ExprPtr e = parse_not();
        while (is_name("and")) {
            const Token at = next();
            e = binary("and", std::move(e), parse_not(), at);
        }
        return e;
    }
    ExprPtr parse_not() {
        if (is_name("not")) {
            DepthGuard g(*this);
            const Token at = next();
            auto e = make(Expr::Kind::Unary, at);
            e->name = "not";
            e->a = parse_not();
            return e;
        }
        return parse_compare();
    }
    ExprPtr parse_compare() {
        ExprPtr e = parse_math1();
        while (true) {
            const Token at = peek();
            std::string op;
            if (at.type == T::Op && (at.text == "==" || at.text == "!=" || at.text == "<" || at.text == ">" ||
                                     at.text == "<=" || at.text == ">=")) {
                op = at.text;
                ++p_;
            } else if (is_name("in")) {
                op = "in";
                ++p_;
            } else if (is_name("not") && is_name("in", 1)) {
                op = "not in";
                p_ += 2;
            } else {
                return e;
            }
            e = binary(op, std::move(e), parse_math1(), at);
        }
    }
    ExprPtr parse_math1() {
        ExprPtr e = parse_concat();
        while (is_op("+") || is_op("-")) {
            const Token at = next();
            e = binary(at.text, std::move(e), parse_concat(), at);
        }
        return e;
    }
    ExprPtr parse_concat() {
        ExprPtr e = parse_math2();
        while (is_op("~")) {
            const Token at = next();
            e = binary("~", std::move(e), parse_math2(), at);
        }
        return e;
    }
    ExprPtr parse_math2() {
        ExprPtr e = parse_pow();
        while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
            const Token at = next();
            e = binary(at.text, std::move(e), parse_pow(), at);
        }
        return e;
    }
    ExprPtr parse_pow() {
        ExprPtr e = parse_unary(true);
        while (is_op("**")) {
            const Token at = next();
            e = binary("**", std::move(e), parse_unary(true), at);
        }
        return e;
    }
    ExprPtr parse_unary(bool with_filter) {
        DepthGuard g(*this);
        ExprPtr e;
        if (is_op("-") || is_op("+")) {
            const Token at = next();
            e = make(Expr::Kind::Unary, at);
            e->name = at.text;
            e->a = parse_unary(false);
        } else {
            e = parse_postfix(parse_primary());
        }
        if (with_filter) e = parse_filters(std::move(e));
        return e;
    }

    ExprPtr parse_primary() {
        DepthGuard g(*this);
        const Token tok = peek();
        switch (tok.type) {
            case T::Name: {
                ++p_;
                if (tok.text == "true" || tok.text == "True") return literal(Value(true), tok);
                if (tok.text == "false" || tok.text == "False") return literal(Value(false), tok);
                if (tok.text == "none" || tok.text == "None") return literal(Value::none(), tok);
                auto e = make(Expr::Kind::Name, tok);
                e->name = tok.text;
                return e;
            }
            case T::String: {
                std::string s;
                while (peek().type == T::String) s += next().text;  // adjacent literals concatenate
                return literal(Value(std::move(s)), tok);
            }
            case T::Int: {
                ++p_;
                errno = 0;
                const long long v = std::strtoll(tok.text.c_str(), nullptr, 10);
                if (errno == ERANGE) fail(tok, "integer literal out of range");
                return literal(Value(static_cast<int64_t>(v)), tok);
            }
            case T::Float:
                ++p_;
                return literal(Value(std::strtod(tok.text.c_str(), nullptr)), tok);
            case T::Op:
                if (tok.text == "(") {
                    ++p_;
                    if (accept_op(")")) return make(Expr::Kind::Tuple, tok);
                    ExprPtr e = parse_expression();
                    if (is_op(",")) {
                        auto tup = make(Expr::Kind::Tuple, tok);
                        tup->items.push_back(std::move(e));
                        while (accept_op(",")) {
                            if (is_op(")")) break;
                            tup->items.push_back(parse_expression());
                        }
                        e = std::move(tup);
                    }
                    expect_op(")");
                    return e;
                }
                if (tok.text == "[") {
                    ++p_;
                    auto e = make(Expr::Kind::List, tok);
                    while (!is_op("]")) {
                        e->items.push_back(parse_expression());
                        if (!accept_op(",")) break;
                    }
                    expect_op("]");
                    return e;
                }
                if (tok.text == "{") {
                    ++p_;
                    auto e = make(Expr::Kind::Dict, tok);
                    while (!is_op("}")) {
                        e->items.push_back(parse_expression());
                        expect_op(":");
                        e->items.push_back(parse_expression());
                        if (!accept_op(",")) break;
                    }
                    expect_op("}");
                    return e;
                }
                break;
            default:
                break;
        }
        fail(tok, "expected an expression, found " + describe(tok));
    }

    static ExprPtr literal(Value v, const Token &at) {
        auto e = make(Expr::Kind::Literal, at);
        e->value = std::move(v);
        return e;
    }

    void parse_call_args(Expr &e) {
        expect_op("(");
        while (!is_op(")")) {
            if (peek().type == T::Name && is_op("=", 1)) {
                std::string n = next().text;
                ++p_;
                e.kwargs.emplace_back(n, parse_expression());
            } else {
                e.items.push_back(parse_expression());
            }
            if (!accept_op(",")) break;
        }
        expect_op(")");
    }

    ExprPtr parse_postfix(ExprPtr e) {
        while (true) {
            const Token at = peek();
            if (is_op(".")) {
                ++p_;
                auto a = make(Expr::Kind::Attr, at);
                if (peek().type == T::Int) {
                    // x.0 is x[0]
                    a->kind = Expr::Kind::Subscript;
                    a->b = literal(
                        Value(static_cast<int64_t>(std::strtoll(next().text.c_str(), nullptr, 10))), at);
                } else {
                    a->name = expect_name();
                }
                a->a = std::move(e);
                e = std::move(a);
            } else if (is_op("[")) {
                ++p_;
                ExprPtr parts[3];
                int colons = 0;
                while (!is_op("]")) {
                    if (accept_op(":")) {
                        if (++colons > 2) fail(at, "too many ':' in slice");
                        continue;
                    }
                    if (parts[colons]) fail(peek(), "expected ':' or ']' in subscript");
                    parts[colons] = parse_expression();
                }
                expect_op("]");
                ExprPtr s;
                if (colons == 0) {
                    if (!parts[0]) fail(at, "empty subscript");
                    s = make(Expr::Kind::Subscript, at);
                    s->b = std::move(parts[0]);
                } else {
                    s = make(Expr::Kind::Slice, at);
                    s->b = std::move(parts[0]);
                    s->c = std::move(parts[1]);
                    if (parts[2]) s->items.push_back(std::move(parts[2]));
                }
                s->a = std::move(e);
                e = std::move(s);
            } else if (is_op("(")) {
                auto c = make(Expr::Kind::Call, at);
                c->line = e->line;  // errors point at the callee, not at its '('
                c->col = e->col;
                parse_call_args(*c);
                c->a = std::move(e);
                e = std::move(c);
            } else {
                return e;
            }
        }
    }

    ExprPtr parse_filter(ExprPtr e) {
        const Token at = peek();
        auto f = make(Expr::Kind::Filter, at);
        f->name = expect_name();
        if (is_op("(")) parse_call_args(*f);
        f->a = std::move(e);
        return f;
    }

    // `x is divisibleby 3`, `x is in [1, 2]`, `x is sameas y`: one argument without parentheses.
    bool starts_test_arg() const {
        const Token &t = peek();
        if (t.type == T::String || t.type == T::Int || t.type == T::Float) return true;
        if (t.type == T::Op) return t.text == "[" || t.text == "{";
        if (t.type != T::Name) return false;
        for (const char *kw : {"and", "or", "not", "if", "else", "in", "is", "recursive"})
            if (t.text == kw) return false;
        return true;
    }

    ExprPtr parse_filters(ExprPtr e) {
        while (true) {
            if (accept_op("|")) {
                e = parse_filter(std::move(e));
            } else if (is_name("is")) {
                const Token at = next();
                auto t = make(Expr::Kind::Test, at);
                t->negated = accept_name("not");
                t->name = expect_name();
                if (is_op("(")) {
                    parse_call_args(*t);
                } else if (starts_test_arg()) {
                    t->items.push_back(parse_primary());  // `x is divisibleby 3`, `x is sameas false`
                }
                t->a = std::move(e);
                e = std::move(t);
            } else {
                return e;
            }
        }
    }
};

}  // namespace

Body parse(const std::string &src, const LexOptions &opts) {
    return Parser(lex(src, opts)).parse_all();
}

}  // namespace lctx::jinja
