// Options declared as rows of a table instead of one CLI11 call each: the names, where the value goes (a
// member pointer), the help, and for a number the range a check holds it to. A command's options and their
// checks then read as one list, and a new option is one row.
#pragma once
#include <CLI/CLI.hpp>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

namespace lctx::cli {

// "NAME: V is not a finite number" or "NAME: V is out of range (RANGE)", or "".
std::string check_float(const char *name, float v, float lo, float hi, const char *range);
// "NAME: V is out of range (RANGE)", or "".
std::string check_int(const char *name, int64_t v, int64_t lo, int64_t hi, const char *range);

// One option. Fields is a std::variant of the member pointers the table uses.
template <typename Fields>
struct OptionRow {
    const char *flags;  // CLI11's names; the last one names the option in errors
    Fields field;
    const char *help;
    double lo = 0, hi = 0;
    const char *range = nullptr;  // nullptr: any value (no check)
};

// The class a member pointer belongs to.
template <typename M>
struct MemberOf;
template <typename T, typename C>
struct MemberOf<T C::*> {
    using type = C;
};

// Registers each row: a bool as a flag, a list as a repeatable option (its default shown as []), any other
// value as an option.
// value(member pointer) is the member's reference.
template <typename Fields, size_t N, typename Value>
void add_option_rows(CLI::App &app, const OptionRow<Fields> (&rows)[N], Value &&value) {
    for (const OptionRow<Fields> &r : rows)
        std::visit(
            [&](auto member) {
                auto &v = value(member);
                using T = std::decay_t<decltype(v)>;
                if constexpr (std::is_same_v<T, bool>)
                    app.add_flag(r.flags, v, r.help);
                else if constexpr (std::is_same_v<T, std::vector<std::string>>)
                    // A list's default shows as [] (the DRY breakers hold a newline, which would cut the
                    // help's line).
                    app.add_option(r.flags, v, r.help)
                        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
                        ->default_str("[]");
                else
                    app.add_option(r.flags, v, r.help);
            },
            r.field);
}

// The first row whose number is outside its range, as one line, or "".
template <typename Fields, size_t N, typename Value>
std::string check_option_rows(const OptionRow<Fields> (&rows)[N], Value &&value) {
    for (const OptionRow<Fields> &r : rows) {
        if (!r.range) continue;
        const char *comma = std::strrchr(r.flags, ',');
        const char *name = comma ? comma + 1 : r.flags;
        std::string e;
        std::visit(
            [&](auto member) {
                const auto &v = value(member);
                using T = std::decay_t<decltype(v)>;
                if constexpr (std::is_floating_point_v<T>)
                    e = check_float(name, v, static_cast<float>(r.lo), static_cast<float>(r.hi), r.range);
                else if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>)
                    e = check_int(name, v, static_cast<int64_t>(r.lo), static_cast<int64_t>(r.hi), r.range);
            },
            r.field);
        if (!e.empty()) return e;
    }
    return "";
}

}  // namespace lctx::cli
