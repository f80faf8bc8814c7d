#include "chat/jinja_eval.h"

#include <cmath>
#include <unordered_map>

#include "chat/jinja_builtins.h"
#include "chat/jinja_parser.h"

namespace lctx::jinja {

namespace {

// Variables of one scope; lookups walk outwards. A for loop and a macro call open a scope, as in
// Jinja2 (so `set` inside a loop does not leak out: templates use namespace() for that).
struct Frame {
    std::unordered_map<std::string, Value> vars;
    std::shared_ptr<Frame> parent;

    const Value *lookup(const std::string &name) const {
        for (const Frame *f = this; f; f = f->parent.get()) {
            auto it = f->vars.find(name);
            if (it != f->vars.end()) return &it->second;
        }
        return nullptr;
    }
};
using FramePtr = std::shared_ptr<Frame>;

enum class Flow { Normal, Break, Continue };

bool has_location(const JinjaError &e) {
    return std::string(e.what()).rfind("line ", 0) == 0;
}

class Evaluator {
  public:
    explicit Evaluator(const Environment &env) : env_(env) {}

    Flow exec(const Body &body, const FramePtr &f, std::string &out) {
        Nesting n(*this, body.empty() ? 0 : body.front()->line, body.empty() ? 0 : body.front()->col);
        for (const StmtPtr &s : body) {
            step(*s);
            Flow fl = exec_stmt(*s, f, out);
            if (out.size() > env_.max_string) fail_at(s->line, s->col, "template output too large");
            if (fl != Flow::Normal) return fl;
        }
        return Flow::Normal;
    }

  private:
    const Environment &env_;
    int depth_ = 0;  // macro recursion bound
    uint64_t steps_ = 0;
    int nesting_ = 0;  // bodies and expressions being evaluated, bounded to bound the C++ stack

    struct Nesting {
        Evaluator &ev;
        Nesting(Evaluator &e, int line, int col) : ev(e) {
            if (++ev.nesting_ > 1000) {
                --ev.nesting_;
                fail_at(line, col, "template nested too deeply when run (recursion?)");
            }
        }
        ~Nesting() { --ev.nesting_; }
    };

    void step(const Stmt &s) {
        if (++steps_ > env_.max_steps) fail_at(s.line, s.col, "template runs too long (step limit)");
    }

    [[noreturn]] static void fail_at(int line, int col, const std::string &msg) {
        throw JinjaError(where(line, col) + ": " + msg);
    }

    Flow exec_stmt(const Stmt &s, const FramePtr &f, std::string &out) {
        switch (s.kind) {
            case Stmt::Kind::Text:
                out += s.text;
                return Flow::Normal;
            case Stmt::Kind::Output:
                out += eval(*s.expr, f).to_string();
                return Flow::Normal;
            case Stmt::Kind::If:
                for (size_t i = 0; i < s.conds.size(); ++i)
                    if (eval(*s.conds[i], f).truthy()) return exec(s.bodies[i], f, out);
                return exec(s.else_body, f, out);
            case Stmt::Kind::For:
                return exec_for(s, f, out);
            case Stmt::Kind::Set: {
                Value v = eval(*s.expr, f);
                assign(*s.target, std::move(v), f);
                return Flow::Normal;
            }
            case Stmt::Kind::SetBlock: {
                std::string text;
                exec(s.body, f, text);
                f->vars[s.text] = Value(std::move(text));
                return Flow::Normal;
            }
            case Stmt::Kind::Macro:
                f->vars[s.text] = make_macro(s, f);
                return Flow::Normal;
            case Stmt::Kind::CallBlock: {
                // caller() renders the block's body with the parameters the macro passes to it.
                Value caller = make_callable(s.params, s.body, f, s.line, s.col, "caller");
                const Expr &call = *s.expr;
                Value fn = eval(*call.a, f);
                CallArgs args = eval_args(call, f);
                args.kw.emplace_back("caller", caller);
                out += invoke(fn, args, call.line, call.col).to_string();
                return Flow::Normal;
            }
            case Stmt::Kind::FilterBlock: {
                std::string text;
                exec(s.body, f, text);
                out += eval_filter_chain(*s.expr, Value(std::move(text)), f).to_string();
                return Flow::Normal;
            }
            case Stmt::Kind::Block:
                return exec(s.body, f, out);
            case Stmt::Kind::Break:
                return Flow::Break;
            case Stmt::Kind::Continue:
                return Flow::Continue;
            case Stmt::Kind::Do:
                eval(*s.expr, f);
                return Flow::Normal;
        }
        return Flow::Normal;
    }

    void assign(const Expr &target, Value v, const FramePtr &f) {
        if (target.kind == Expr::Kind::Name) {
            f->vars[target.name] = std::move(v);
        } else if (target.kind == Expr::Kind::Attr) {
            Value obj = eval(*target.a, f);
            if (!obj.is_object())
                fail_at(target.line, target.col,
                        "cannot set attribute '" + target.name + "' on " + obj.type_name());
            obj.set(target.name, std::move(v));
        } else {
            const Array items = unpack(v, target.items.size(), target.line, target.col);
            for (size_t i = 0; i < items.size(); ++i) f->vars[target.items[i]->name] = items[i];
        }
    }

    static Array unpack(const Value &v, size_t n, int line, int col) {
        if (!v.is_array() || v.arr().size() != n)
            fail_at(line, col,
                    "cannot unpack " + std::string(v.type_name()) + " into " + std::to_string(n) + " names");
        return v.arr();
    }

    Flow exec_for(const Stmt &s, const FramePtr &f, std::string &out) {
        const Value seq = eval(*s.expr, f);
        Array items;
        if (seq.is_array()) {
            items = seq.arr();
        } else if (seq.is_object()) {
            for (const auto &kv : seq.obj()) items.push_back(key_value(kv.first));
        } else if (seq.is_string()) {
            for (std::string &c : utf8_chars(seq.str())) items.emplace_back(std::move(c));
        } else if (!seq.is_undefined()) {
            fail_at(s.expr->line, s.expr->col, std::string("cannot iterate over ") + seq.type_name());
        }
        auto bind = [&](const FramePtr &scope, const Value &item) {
            if (s.targets.size() == 1) {
                scope->vars[s.targets[0]] = item;
            } else {
                const Array parts = unpack(item, s.targets.size(), s.line, s.col);
                for (size_t i = 0; i < parts.size(); ++i) scope->vars[s.targets[i]] = parts[i];
            }
        };
        if (s.cond) {
            // The `if` of a for loop filters before loop.index and loop.length are counted.
            Array kept;
            for (const Value &item : items) {
                auto scope = std::make_shared<Frame>();
                scope->parent = f;
                bind(scope, item);
                if (eval(*s.cond, scope).truthy()) kept.push_back(item);
            }
            items = std::move(kept);
        }
        if (items.empty()) return exec(s.else_body, f, out);
        const int64_t n = static_cast<int64_t>(items.size());
        for (int64_t i = 0; i < n; ++i) {
            auto scope = std::make_shared<Frame>();
            scope->parent = f;
            bind(scope, items[static_cast<size_t>(i)]);
            step(s);
            Value loop = Value::object();
            loop.set("index", Value(i + 1));
            loop.set("index0", Value(i));
            loop.set("revindex", Value(n - i));
            loop.set("revindex0", Value(n - i - 1));
            loop.set("first", Value(i == 0));
            loop.set("last", Value(i == n - 1));
            loop.set("length", Value(n));
            loop.set("depth", Value(static_cast<int64_t>(1)));
            loop.set("depth0", Value(static_cast<int64_t>(0)));
            loop.set("previtem", i > 0 ? items[static_cast<size_t>(i - 1)] : Value());
            loop.set("nextitem", i + 1 < n ? items[static_cast<size_t>(i + 1)] : Value());
            loop.set("cycle", Value::function([i](CallArgs &a) {
                         if (a.pos.empty()) throw JinjaError("loop.cycle() needs arguments");
                         return a.pos[static_cast<size_t>(i) % a.pos.size()];
                     }));
            scope->vars["loop"] = loop;
            if (exec(s.body, scope, out) == Flow::Break) break;
        }
        return Flow::Normal;
    }

    Value make_macro(const Stmt &s, const FramePtr &f) {
        return make_callable(s.params, s.body, f, s.line, s.col, s.text);
    }

    // A macro or a caller(): binds its parameters in a new scope over the one it was defined in.
    Value make_callable(const std::vector<MacroParam> &params, const Body &body, const FramePtr &defined_in,
                        int line, int col, const std::string &name) {
        std::weak_ptr<Frame> weak = defined_in;  // a macro stored in its own frame must not keep it alive
        return Value::function([this, &params, &body, weak, line, col, name](CallArgs &a) {
            FramePtr parent = weak.lock();
            if (!parent) throw JinjaError("macro '" + name + "' called after its template ended");
            if (++depth_ > 100) {
                --depth_;
                fail_at(line, col, "macro '" + name + "' recursion too deep");
            }
            auto scope = std::make_shared<Frame>();
            scope->parent = parent;
            if (a.pos.size() > params.size())
                fail_at(line, col,
                        "macro '" + name + "' takes " + std::to_string(params.size()) + " arguments");
            for (size_t i = 0; i < params.size(); ++i) {
                const Value *v = a.get(i, params[i].name);
                scope->vars[params[i].name] = v ? *v
                                              : params[i].default_value
                                                  ? eval(*params[i].default_value, scope)
                                                  : Value();
            }
            for (const auto &[k, v] : a.kw) {
                bool known = false;
                for (const MacroParam &p : params) known = known || p.name == k;
                if (!known) {
                    if (k != "caller")
                        fail_at(line, col, "macro '" + name + "' has no parameter '" + k + "'");
                    scope->vars[k] = v;
                }
            }
            std::string out;
            try {
                exec(body, scope, out);
            } catch (...) {
                --depth_;
                throw;
            }
            --depth_;
            return Value(std::move(out));
        });
    }

    CallArgs eval_args(const Expr &e, const FramePtr &f) {
        CallArgs a;
        for (const ExprPtr &x : e.items) a.pos.push_back(eval(*x, f));
        for (const auto &[k, x] : e.kwargs) a.kw.emplace_back(k, eval(*x, f));
        return a;
    }

    static Value invoke(const Value &fn, CallArgs &args, int line, int col) {
        if (!fn.is_function())
            fail_at(line, col, std::string("cannot call a value of type ") + fn.type_name());
        try {
            return fn.fn()(args);
        } catch (const JinjaError &err) {
            if (has_location(err)) throw;
            fail_at(line, col, err.what());
        }
    }

    Value eval_filter_chain(const Expr &e, Value input, const FramePtr &f) {
        if (e.kind != Expr::Kind::Filter) return input;
        Value v = eval_filter_chain(*e.a, std::move(input), f);
        CallArgs args = eval_args(e, f);
        try {
            return apply_filter(e.name, v, args);
        } catch (const JinjaError &err) {
            if (has_location(err)) throw;
            fail_at(e.line, e.col, err.what());
        }
    }

    Value eval(const Expr &e, const FramePtr &f) {
        Nesting n(*this, e.line, e.col);
        try {
            return eval_inner(e, f);
        } catch (const JinjaError &err) {
            if (has_location(err)) throw;
            fail_at(e.line, e.col, err.what());
        }
    }

    Value eval_inner(const Expr &e, const FramePtr &f) {
        switch (e.kind) {
            case Expr::Kind::Literal:
                return e.value;
            case Expr::Kind::Name: {
                const Value *v = f->lookup(e.name);
                return v ? *v : Value();
            }
            case Expr::Kind::List:
            case Expr::Kind::Tuple: {
                Array a;
                for (const ExprPtr &x : e.items) a.push_back(eval(*x, f));
                return Value::array(std::move(a));
            }
            case Expr::Kind::Dict: {
                Value d = Value::object();
                for (size_t i = 0; i + 1 < e.items.size(); i += 2)
                    d.set_key(eval(*e.items[i], f), eval(*e.items[i + 1], f));
                return d;
            }
            case Expr::Kind::Attr: {
                const Value obj = eval(*e.a, f);
                if (const Value *v = obj.find(e.name)) return *v;
                return bound_method(obj, e.name);
            }
            case Expr::Kind::Subscript:
                return subscript(eval(*e.a, f), eval(*e.b, f));
            case Expr::Kind::Slice: {
                const Value obj = eval(*e.a, f);
                const Value start = e.b ? eval(*e.b, f) : Value(), stop = e.c ? eval(*e.c, f) : Value();
                const Value step = e.items.empty() ? Value() : eval(*e.items[0], f);
                return slice(obj, start, stop, step);
            }
            case Expr::Kind::Call: {
                const Value fn = eval(*e.a, f);
                CallArgs args = eval_args(e, f);
                if (fn.is_undefined() && e.a->kind == Expr::Kind::Name)
                    throw JinjaError("'" + e.a->name + "' is undefined");
                if (fn.is_undefined() && e.a->kind == Expr::Kind::Attr)
                    throw JinjaError("no method '" + e.a->name + "' on " + eval(*e.a->a, f).type_name());
                return invoke(fn, args, e.line, e.col);
            }
            case Expr::Kind::Filter: {
                const Value v = eval(*e.a, f);
                CallArgs args = eval_args(e, f);
                return apply_filter(e.name, v, args);
            }
            case Expr::Kind::Test: {
                const Value v = eval(*e.a, f);
                CallArgs args = eval_args(e, f);
                return Value(apply_test(e.name, v, args) != e.negated);
            }
            case Expr::Kind::Unary: {
                const Value v = eval(*e.a, f);
                if (e.name == "not") return Value(!v.truthy());
                if (v.is_int()) return Value(e.name == "-" ? -v.as_int() : v.as_int());
                if (v.is_float()) return Value(e.name == "-" ? -v.as_float() : v.as_float());
                throw JinjaError(std::string("bad operand type for unary ") + e.name + ": " + v.type_name());
            }
            case Expr::Kind::Binary:
                return binary(e, f);
            case Expr::Kind::Cond:
                if (eval(*e.a, f).truthy()) return eval(*e.b, f);
                return e.c ? eval(*e.c, f) : Value();
        }
        return Value();
    }

    static Value subscript(const Value &obj, const Value &key) {
        if (obj.is_object()) {
            const Value *v = obj.find(key.to_string());
            return v ? *v : Value();
        }
        if (obj.is_array() || obj.is_string()) {
            if (!key.is_int()) {
                if (key.is_string()) return bound_method(obj, key.str());
                throw JinjaError(std::string("index must be an integer, not ") + key.type_name());
            }
            std::vector<std::string> chars;
            if (obj.is_string()) chars = utf8_chars(obj.str());
            const int64_t n = static_cast<int64_t>(obj.is_array() ? obj.arr().size() : chars.size());
            int64_t i = key.as_int();
            if (i < 0) i += n;
            if (i < 0 || i >= n) return Value();
            return obj.is_array() ? obj.arr()[static_cast<size_t>(i)] : Value(chars[static_cast<size_t>(i)]);
        }
        return Value();
    }

    static Value slice(const Value &obj, const Value &start, const Value &stop, const Value &step_v) {
        if (!obj.is_array() && !obj.is_string()) {
            if (obj.is_undefined()) return obj;
            throw JinjaError(std::string("cannot slice ") + obj.type_name());
        }
        std::vector<std::string> chars;
        if (obj.is_string()) chars = utf8_chars(obj.str());
        const int64_t n = static_cast<int64_t>(obj.is_array() ? obj.arr().size() : chars.size());
        const int64_t step = step_v.is_int() ? step_v.as_int() : 1;
        if (step == 0) throw JinjaError("slice step cannot be zero");
        auto clamp = [&](const Value &v, int64_t def) {
            if (!v.is_int()) return def;
            int64_t i = v.as_int();
            if (i < 0) i += n;
            if (step > 0) return std::clamp<int64_t>(i, 0, n);
            return std::clamp<int64_t>(i, -1, n - 1);
        };
        const int64_t b = clamp(start, step > 0 ? 0 : n - 1), e = clamp(stop, step > 0 ? n : -1);
        Array items;
        std::string text;
        for (int64_t i = b; step > 0 ? i < e : i > e; i += step) {
            if (obj.is_array())
                items.push_back(obj.arr()[static_cast<size_t>(i)]);
            else
                text += chars[static_cast<size_t>(i)];
        }
        return obj.is_array() ? Value::array(std::move(items)) : Value(std::move(text));
    }

    Value binary(const Expr &e, const FramePtr &f) {
        const std::string &op = e.name;
        if (op == "and") {
            Value l = eval(*e.a, f);
            return l.truthy() ? eval(*e.b, f) : l;
        }
        if (op == "or") {
            Value l = eval(*e.a, f);
            return l.truthy() ? l : eval(*e.b, f);
        }
        const Value l = eval(*e.a, f), r = eval(*e.b, f);
        if (op == "~") return Value(checked(l.to_string() + r.to_string()));
        if (op == "==") return Value(values_equal(l, r));
        if (op == "!=") return Value(!values_equal(l, r));
        if (op == "<") return Value(values_compare(l, r) < 0);
        if (op == ">") return Value(values_compare(l, r) > 0);
        if (op == "<=") return Value(values_compare(l, r) <= 0);
        if (op == ">=") return Value(values_compare(l, r) >= 0);
        if (op == "in" || op == "not in") {
            CallArgs a;
            a.pos.push_back(r);
            if (!r.is_string() && !r.is_array() && !r.is_object() && !r.is_undefined())
                throw JinjaError(std::string("argument of type ") + r.type_name() + " is not iterable");
            return Value(apply_test("in", l, a) == (op == "in"));
        }
        if (op == "+") {
            // An undefined operand next to a string counts as "" (llama.cpp renders such templates).
            if ((l.is_string() || l.is_undefined()) && (r.is_string() || r.is_undefined()) &&
                (l.is_string() || r.is_string()))
                return Value(checked(l.to_string() + r.to_string()));
            if (l.is_array() && r.is_array()) {
                Array out = l.arr();
                out.insert(out.end(), r.arr().begin(), r.arr().end());
                return Value::array(std::move(out));
            }
        }
        if (op == "*" && (l.is_string() || l.is_array()) && r.is_int()) return repeat(l, r.as_int());
        if (op == "*" && (r.is_string() || r.is_array()) && l.is_int()) return repeat(r, l.as_int());
        if (op == "+" && l.is_array() && r.is_array() &&
            l.arr().size() + r.arr().size() > env_.max_string / 16)
            throw JinjaError("list too long");
        const bool ln = l.is_number() || l.is_bool(), rn = r.is_number() || r.is_bool();
        if (!ln || !rn)
            throw JinjaError("unsupported operand types for " + op + ": " + l.type_name() + " and " +
                             r.type_name());
        const bool ints = !l.is_float() && !r.is_float();
        const int64_t li = l.is_bool() ? l.as_bool() : l.as_int(),
                      ri = r.is_bool() ? r.as_bool() : r.as_int();
        const double lf = l.is_bool() ? l.as_bool() : l.as_float(),
                     rf = r.is_bool() ? r.as_bool() : r.as_float();
        if (op == "+") return ints ? Value(li + ri) : Value(lf + rf);
        if (op == "-") return ints ? Value(li - ri) : Value(lf - rf);
        if (op == "*") return ints ? Value(li * ri) : Value(lf * rf);
        if (op == "/") {
            if (rf == 0) throw JinjaError("division by zero");
            return Value(lf / rf);
        }
        if (op == "//" || op == "%") {
            if (rf == 0) throw JinjaError(op == "//" ? "integer division by zero" : "modulo by zero");
            if (ints) {
                // Python rounds toward negative infinity.
                int64_t q = li / ri, m = li % ri;
                if (m != 0 && ((m < 0) != (ri < 0))) {
                    --q;
                    m += ri;
                }
                return op == "//" ? Value(q) : Value(m);
            }
            const double q = std::floor(lf / rf);
            return op == "//" ? Value(q) : Value(lf - q * rf);
        }
        if (op == "**") {
            if (ints && ri >= 0) {
                int64_t out = 1;
                for (int64_t i = 0; i < ri && i < 64; ++i) out *= li;
                return Value(out);
            }
            return Value(std::pow(lf, rf));
        }
        throw JinjaError("unknown operator " + op);
    }

    std::string checked(std::string s) const {
        if (s.size() > env_.max_string) throw JinjaError("string too long");
        return s;
    }

    Value repeat(const Value &v, int64_t n) const {
        const size_t unit = v.is_string() ? v.str().size() : v.arr().size() * 16;
        if (n > 0 && unit > 0 && static_cast<uint64_t>(n) > env_.max_string / unit)
            throw JinjaError("repetition too large");
        if (v.is_string()) {
            std::string out;
            for (int64_t i = 0; i < n; ++i) out += v.str();
            return Value(out);
        }
        Array out;
        for (int64_t i = 0; i < n; ++i) out.insert(out.end(), v.arr().begin(), v.arr().end());
        return Value::array(std::move(out));
    }
};

std::tm system_now() {
    const std::time_t t = std::time(nullptr);
    std::tm tm{};
    localtime_r(&t, &tm);
    return tm;
}

}  // namespace

Template Template::parse(const std::string &src, const LexOptions &opts) {
    Template t;
    t.body_ = std::make_shared<const Body>(jinja::parse(src, opts));
    return t;
}

std::string Template::render(const Value &context, const Environment &env) const {
    auto globals = std::make_shared<Frame>();
    for (auto &[k, v] : builtin_globals(env.now ? env.now : system_now)) globals->vars[k] = v;
    auto top = std::make_shared<Frame>();
    top->parent = globals;
    if (context.is_object())
        for (const auto &[k, v] : context.obj()) top->vars[k] = v;
    std::string out;
    Evaluator ev(env);
    struct LimitScope {  // the built-ins' string bound for this render, restored after it
        size_t saved;
        explicit LimitScope(size_t v) : saved(builtin_string_limit()) { builtin_string_limit() = v; }
        ~LimitScope() { builtin_string_limit() = saved; }
    } limit(env.max_string);
    ev.exec(*body_, top, out);
    return out;
}

}  // namespace lctx::jinja
