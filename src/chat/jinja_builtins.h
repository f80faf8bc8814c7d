// Jinja built-ins: filters (`x | trim`), tests (`x is string`), methods of strings, lists and dicts
// (`s.split(',')`, `d.get('k')`) and global functions (range, namespace, dict, raise_exception,
// strftime_now). Each throws JinjaError with a message (the evaluator adds the line and column).
#pragma once
#include <ctime>
#include <functional>
#include <string>
#include <vector>

#include "chat/jinja_value.h"

namespace lctx::jinja {

Value apply_filter(const std::string &name, const Value &v, CallArgs &args);
bool apply_test(const std::string &name, const Value &v, CallArgs &args);
// The method `name` of v bound to v (undefined when v has no such method).
Value bound_method(const Value &v, const std::string &name);

// Globals every template sees; `now` gives the local time for strftime_now (tests freeze it).
Object builtin_globals(std::function<std::tm()> now);

// The longest string a built-in may build (the render sets it from Environment::max_string for its
// thread), so that `replace`, `join` and friends cannot be made to allocate without bound.
size_t &builtin_string_limit();

// The UTF-8 characters of s (Python's str counts and slices code points, not bytes).
std::vector<std::string> utf8_chars(const std::string &s);

}  // namespace lctx::jinja
