// Jinja values: the dynamic type a template computes with (Python's semantics: undefined, none, bool,
// int, float, str, list, dict, callable). Lists and dicts are shared by reference, as in Python, so a
// namespace() or a list changed through one name is seen through every other.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace lctx::jinja {

// A template error: the message already carries "line L, column C" where it is known.
class JinjaError : public std::runtime_error {
  public:
    explicit JinjaError(const std::string &what) : std::runtime_error(what) {}
};

class Value;
using Array = std::vector<Value>;

// A dict key: its text, plus the key's own value when it is not a string ({1: 'a'} keeps the int 1,
// which dictsort and items() give back; lookups go by the text).
struct Key : std::string {
    std::shared_ptr<const Value> typed;
    Key(std::string s) : std::string(std::move(s)) {}
    Key(const char *s) : std::string(s) {}
};
// Insertion-ordered, as Python dicts are (templates iterate messages' keys and print tojson in order).
using Object = std::vector<std::pair<Key, Value>>;

struct CallArgs {
    std::vector<Value> pos;
    std::vector<std::pair<std::string, Value>> kw;
    const Value *kwarg(const std::string &name) const;
    // Positional i, else keyword `name`, else nullptr.
    const Value *get(size_t i, const std::string &name) const;
};
using Function = std::function<Value(CallArgs &)>;

class Value {
  public:
    enum class Kind { Undefined, None, Bool, Int, Float, String, Array, Object, Function };

    Value() = default;
    static Value none();
    Value(bool b);
    Value(int v) : Value(static_cast<int64_t>(v)) {}
    Value(int64_t v);
    Value(double v);
    Value(std::string s);
    Value(const char *s) : Value(std::string(s)) {}
    static Value array(Array a = {});
    static Value object(Object o = {});
    static Value function(Function f);

    Kind kind() const { return kind_; }
    bool is_undefined() const { return kind_ == Kind::Undefined; }
    bool is_none() const { return kind_ == Kind::None; }
    bool is_bool() const { return kind_ == Kind::Bool; }
    bool is_int() const { return kind_ == Kind::Int; }
    bool is_float() const { return kind_ == Kind::Float; }
    bool is_number() const { return kind_ == Kind::Int || kind_ == Kind::Float; }
    bool is_string() const { return kind_ == Kind::String; }
    bool is_array() const { return kind_ == Kind::Array; }
    bool is_object() const { return kind_ == Kind::Object; }
    bool is_function() const { return kind_ == Kind::Function; }

    bool as_bool() const { return b_; }
    int64_t as_int() const { return kind_ == Kind::Float ? static_cast<int64_t>(f_) : i_; }
    double as_float() const { return kind_ == Kind::Int ? static_cast<double>(i_) : f_; }
    const std::string &str() const { return s_; }
    Array &arr() const { return *arr_; }
    Object &obj() const { return *obj_; }
    const Function &fn() const { return *fn_; }

    // Dict lookup (nullptr when absent) and insert-or-replace.
    const Value *find(const std::string &key) const;
    void set(const std::string &key, Value v);
    // set() with a key of any type (dict literals).
    void set_key(const Value &key, Value v);

    bool truthy() const;
    // What {{ v }} prints: Python's str() (True, None, ['a', 1], {'k': 'v'}); undefined prints nothing.
    std::string to_string() const;
    // Python's repr(): strings quoted with single quotes.
    std::string repr() const;
    const char *type_name() const;

  private:
    Kind kind_ = Kind::Undefined;
    bool b_ = false;
    int64_t i_ = 0;
    double f_ = 0;
    std::string s_;
    std::shared_ptr<Array> arr_;
    std::shared_ptr<Object> obj_;
    std::shared_ptr<Function> fn_;
};

// The value of a dict key: the typed key when there is one, else the text.
Value key_value(const Key &k);

bool values_equal(const Value &a, const Value &b);
// <0, 0, >0; throws JinjaError for values Python cannot order.
int values_compare(const Value &a, const Value &b);
// Python's repr of a float (shortest text that reads back to the same double, "1.0" not "1").
std::string float_repr(double v);
// JSON text of a value: separators ", " and ": " (Python's json.dumps), or an indented layout when
// indent >= 0; strings keep their UTF-8 as is.
std::string to_json(const Value &v, int indent = -1);

}  // namespace lctx::jinja
