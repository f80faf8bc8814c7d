// The Jinja engine feature by feature: each expectation is what Jinja2 (with llama.cpp's
// trim_blocks/lstrip_blocks) prints for the template.
#include <gtest/gtest.h>

#include "chat/chat_template.h"
#include "chat/jinja_eval.h"

namespace lctx::jinja::jinja_engine_test {
namespace {

std::string render(const std::string &src,
                   const nlohmann::ordered_json &ctx = nlohmann::ordered_json::object()) {
    Environment env;
    env.now = [] {
        std::tm tm{};
        tm.tm_year = 2026 - 1900;
        tm.tm_mon = 2;
        tm.tm_mday = 4;
        tm.tm_hour = 5;
        tm.tm_min = 6;
        tm.tm_sec = 7;
        return tm;
    };
    return Template::parse(src).render(chat::to_jinja_value(ctx), env);
}

// The error message of rendering src ("" when it renders).
std::string error_of(const std::string &src) {
    try {
        render(src);
    } catch (const JinjaError &e) {
        return e.what();
    }
    return "";
}

TEST(JinjaEngine, TextAndExpressions) {
    EXPECT_EQ(render("Hello {{ name }}!", {{"name", "you"}}), "Hello you!");
    EXPECT_EQ(render("{{ 1 + 2 * 3 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 2 ** 10 }}"),
              "7 3 -4 1 2 1024");
    EXPECT_EQ(render("{{ 1 / 2 }} {{ 4 / 2 }} {{ 0.1 + 0.2 }}"), "0.5 2.0 0.30000000000000004");
    // Floats print as Python's repr does.
    EXPECT_EQ(
        render("{{ 1e10 }} {{ 1e16 }} {{ 0.0001 }} {{ 0.00001 }} {{ -2.5e-7 }} {{ 123.456 }} {{ 1.5e300 }}"),
        "10000000000.0 1e+16 0.0001 1e-05 -2.5e-07 123.456 1.5e+300");
    EXPECT_EQ(render("{{ 'a' ~ 1 ~ none }} {{ 'ab' * 3 }} {{ [1] + [2] }}"), "a1None ababab [1, 2]");
    EXPECT_EQ(render("{{ true }} {{ none }} {{ undefined_name }}|"), "True None |");
    EXPECT_EQ(render("{{ {'a': [1, 'x', none, true]} }}"), "{'a': [1, 'x', None, True]}");
    EXPECT_EQ(render("{{ 'it\\'s' }} {{ ['it\\'s'] }}"), "it's [\"it's\"]");
    EXPECT_EQ(render("{{ 'x' if false }}|{{ 'y' if 0 else 'z' }}"), "|z");
    EXPECT_EQ(render("{{ 'a' 'b' }}"), "ab");  // adjacent literals
    EXPECT_EQ(render("{{ 1 < 2 and 'b' or 'c' }} {{ not 1 == 2 }} {{ 'b' in 'abc' }} {{ 3 not in [1, 2] }}"),
              "b True True True");
}

TEST(JinjaEngine, WhitespaceControl) {
    EXPECT_EQ(render("a  {{- 'b' -}}  c"), "abc");
    // trim_blocks: the newline after a block tag goes; lstrip_blocks: the indentation before it.
    EXPECT_EQ(render("x\n  {% if true %}\n  y\n  {% endif %}\nz"), "x\n  y\nz");
    EXPECT_EQ(render("{% for i in [1, 2] %}{{ i }}\n{% endfor %}"), "1\n2\n");
    EXPECT_EQ(render("a\n{#- comment -#}\nb"), "ab");
    EXPECT_EQ(render("a {%+ if true %}b{% endif %}"), "a b");
    EXPECT_EQ(render("{{ 'x' }}\n"), "x\n");  // expressions keep their newline
    EXPECT_EQ(render("{% raw %}{{ not parsed }}{% endraw %}"), "{{ not parsed }}");
}

TEST(JinjaEngine, ForLoops) {
    EXPECT_EQ(render("{% for m in ms %}{{ loop.index }}{{ loop.index0 }}{{ loop.first }}{{ loop.last }}"
                     "{{ loop.length }}{{ loop.revindex }},{% endfor %}",
                     {{"ms", {"a", "b"}}}),
              "10TrueFalse22,21FalseTrue21,");
    EXPECT_EQ(render("{% for x in [] %}no{% else %}empty{% endfor %}"), "empty");
    EXPECT_EQ(render("{% for x in [1, 2, 3, 4] if x is even %}{{ x }}{{ loop.index }} {% endfor %}"),
              "21 42 ");
    EXPECT_EQ(
        render("{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}", {{"d", {{"b", 1}, {"a", 2}}}}),
        "b=1;a=2;");
    EXPECT_EQ(render("{% for k in d %}{{ k }}{% endfor %}", {{"d", {{"z", 1}, {"y", 2}}}}), "zy");
    EXPECT_EQ(render("{% for x in [1, 2, 3] %}{% if x == 2 %}{% continue %}{% endif %}{{ x }}{% endfor %}"),
              "13");
    EXPECT_EQ(render("{% for x in [1, 2, 3] %}{% if x == 2 %}{% break %}{% endif %}{{ x }}{% endfor %}"),
              "1");
    EXPECT_EQ(render("{% for x in 'hé' %}[{{ x }}]{% endfor %}"), "[h][é]");
    EXPECT_EQ(render("{% for x in [1, 2, 3] %}{{ loop.previtem }}{{ loop.cycle('a', 'b') }}{% endfor %}"),
              "a1b2a");
    EXPECT_EQ(render("{% for x in [1, 2, 3] %}[{{ loop.nextitem }}]{% endfor %}"), "[2][3][]");
    EXPECT_EQ(render("{% for x in [1, 2, 3] %}{{ loop.revindex0 }}{{ loop.revindex }}{% endfor %}"),
              "231201");
}

TEST(JinjaEngine, SetScopesAndNamespaces) {
    // A loop's set does not leak out; a namespace's attribute does.
    EXPECT_EQ(render("{% set x = 1 %}{% for i in [1] %}{% set x = 2 %}{% endfor %}{{ x }}"), "1");
    EXPECT_EQ(
        render("{% set ns = namespace(x=1) %}{% for i in [1] %}{% set ns.x = 2 %}{% endfor %}{{ ns.x }}"),
        "2");
    EXPECT_EQ(render("{% set a, b = 1, 2 %}{{ b }}{{ a }}"), "21");
    EXPECT_EQ(render("{% set t %}in {{ 'block' }}{% endset %}[{{ t }}]"), "[in block]");
    EXPECT_EQ(render("{% set l = [] %}{% do l.append(1) %}{{ l.append(2) or '' }}{{ l }}"), "[1, 2]");
}

TEST(JinjaEngine, MacrosAndCaller) {
    EXPECT_EQ(render("{% macro m(a, b='B') %}{{ a }}{{ b }}{% endmacro %}{{ m(1) }} {{ m(1, b=2) }}"),
              "1B 12");
    EXPECT_EQ(
        render("{% macro w(t) %}<{{ caller() }}:{{ t }}>{% endmacro %}{% call w('x') %}body{% endcall %}"),
        "<body:x>");
    EXPECT_EQ(
        render("{% macro f(n) %}{% if n > 0 %}{{ n }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(3) }}"),
        "321");
    EXPECT_EQ(render("{% filter upper %}a{{ 'b' }}{% endfilter %}"), "AB");
    EXPECT_EQ(render("{% generation %}kept{% endgeneration %}"), "kept");
}

TEST(JinjaEngine, Filters) {
    EXPECT_EQ(render("{{ '  a b  ' | trim }}|{{ 'xxaxx' | trim('x') }}|{{ 'ab' | upper }}{{ 'CD' | lower }}"),
              "a b|a|ABcd");
    EXPECT_EQ(render("{{ [1, 2] | length }} {{ 'héllo' | length }} {{ {'a': 1} | count }}"), "2 5 1");
    EXPECT_EQ(render("{{ {'a': [1, 2.5, 'x'], 'b': none, 'c': {}} | tojson }}"),
              "{\"a\": [1, 2.5, \"x\"], \"b\": null, \"c\": {}}");
    EXPECT_EQ(render("{{ {'a': [1]} | tojson(indent=2) }}"), "{\n  \"a\": [\n    1\n  ]\n}");
    EXPECT_EQ(render("{{ 'q\"\\n' | tojson }}"), "\"q\\\"\\n\"");
    EXPECT_EQ(render("{{ 'a-b-a' | replace('a', 'x') }} {{ [1, 2] | join(', ') }} {{ x | default('d') }}"),
              "x-b-x 1, 2 d");
    EXPECT_EQ(render("{{ '' | default('d', true) }} {{ none | default('d') }}"), "d None");
    const nlohmann::ordered_json ms = {
        {"ms", {{{"role", "system"}, {"c", 1}}, {{"role", "user"}, {"c", 2}}}}};
    EXPECT_EQ(render("{{ ms | selectattr('role', 'equalto', 'user') | map(attribute='c') | list }}", ms),
              "[2]");
    EXPECT_EQ(render("{{ ms | rejectattr('role', 'eq', 'user') | map(attribute='role') | first }}", ms),
              "system");
    EXPECT_EQ(
        render("{{ ms | map(attribute='c') | last }} {{ [3, 1, 2] | sort }} {{ [1, 1, 2] | unique | list }}",
               ms),
        "2 [1, 2, 3] [1, 2]");
    EXPECT_EQ(render("{{ {'b': 1, 'a': 2} | dictsort }} {{ {'b': 1} | items | list }}"),
              "[['a', 2], ['b', 1]] [['b', 1]]");
    EXPECT_EQ(render("{{ {2: 'x', 1: 'y'} | dictsort | first | first + 1 }}"), "2");  // int keys stay ints
    EXPECT_EQ(
        render("{{ '42' | int + 1 }} {{ 'x' | int }} {{ 3 | string ~ '!' }} {{ 'hello world' | title }}"),
        "43 0 3! Hello World");
    EXPECT_EQ(render("{{ 'a\\nb\\n\\nc' | indent(2) }}|{{ 'a\\nb' | indent(2, true) }}"),
              "a\n  b\n\n  c|  a\n  b");
    EXPECT_EQ(render("{{ 'abc' | capitalize }} {{ [1, 2, 3] | reverse | list }} {{ [1, 2] | sum }}"),
              "Abc [3, 2, 1] 3");
    EXPECT_EQ(render("{{ [1, 2, 3] | select('odd') | list }} {{ ['a', ''] | reject | list }}"),
              "[1, 3] ['']");
    EXPECT_EQ(render("{{ ['a', 'b'] | map('upper') | join }}"), "AB");
}

TEST(JinjaEngine, Tests) {
    EXPECT_EQ(render("{{ x is defined }}{{ x is undefined }}{{ none is none }}{{ 'a' is string }}"),
              "FalseTrueTrueTrue");
    EXPECT_EQ(render("{{ {} is mapping }}{{ [] is iterable }}{{ 'a' is sequence }}{{ 1 is number }}"),
              "TrueTrueTrueTrue");
    EXPECT_EQ(render("{{ 1 is integer }}{{ 1.0 is float }}{{ true is boolean }}{{ 3 is odd }}{{ 9 is "
                     "divisibleby 3 }}"),
              "TrueTrueTrueTrueTrue");
    EXPECT_EQ(render("{{ 'a' is in 'cab' }}{{ 1 is not in [2] }}{{ false is false }}{{ x is not defined }}"),
              "TrueTrueTrueTrue");
}

TEST(JinjaEngine, MethodsAndSlices) {
    EXPECT_EQ(
        render("{{ ' a '.strip() }}|{{ 'xa'.lstrip('x') }}|{{ 'a\\n'.rstrip() }}|{{ 'a,b,,c'.split(',') }}"),
        "a|a|a|['a', 'b', '', 'c']");
    EXPECT_EQ(render("{{ ' a  b '.split() }} {{ 'a b c'.split(' ', 1) }} {{ 'a.b.c'.rsplit('.', 1) }}"),
              "['a', 'b'] ['a', 'b c'] ['a.b', 'c']");
    EXPECT_EQ(render("{{ 'abc'.startswith('ab') }}{{ 'abc'.endswith(('x', 'c')) }}{{ 'ab'.upper() }}"),
              "TrueTrueAB");
    EXPECT_EQ(render("{{ 'a{}b{}'.format(1, 'x') }} {{ 'aXa'.replace('a', '') }} {{ 'hi there'.title() }}"),
              "a1bx X Hi There");
    EXPECT_EQ(
        render("{{ d.get('a') }} {{ d.get('z') }} {{ d.get('z', 0) }} {{ d.keys() | list }} {{ d['a'] }}",
               {{"d", {{"a", 1}}}}),
        "1 None 0 ['a'] 1");
    EXPECT_EQ(render("{{ [1, 2, 3, 4][1:3] }} {{ [1, 2, 3][::-1] }} {{ [1, 2, 3][-1] }} {{ 'héllo'[1:3] }}"),
              "[2, 3] [3, 2, 1] 3 él");
    EXPECT_EQ(render("{{ [1, 2, 3][5] }}|{{ 'abc'[-2:] }}|{{ [1, 2][:-1] }}"), "|bc|[1]");
}

TEST(JinjaEngine, Globals) {
    EXPECT_EQ(render("{{ range(3) | list }} {{ range(1, 7, 2) | list }}"), "[0, 1, 2] [1, 3, 5]");
    EXPECT_EQ(render("{{ strftime_now('%Y-%m-%d %H:%M:%S') }} {{ strftime_now('%d %b %Y') }}"),
              "2026-03-04 05:06:07 04 Mar 2026");
    EXPECT_EQ(render("{{ dict(a=1, b='x') | tojson }}"), "{\"a\": 1, \"b\": \"x\"}");
    EXPECT_EQ(error_of("{{ raise_exception('No system role') }}"), "line 1, column 4: No system role");
}

TEST(JinjaEngine, SyntaxErrorsSayWhere) {
    EXPECT_EQ(error_of("ab\n{% if x %}"),
              "line 2, column 1: {% if %} is not closed: expected {% elif %} or {% else %} or {% endif %}");
    EXPECT_EQ(error_of("{% for x in y %}{% if x %}{% endfor %}"),
              "line 1, column 30: unexpected {% endfor %}: the {% if %} at line 1, column 17 is still open");
    EXPECT_EQ(error_of("{{ x "), "line 1, column 1: unterminated tag, expected '}}'");
    EXPECT_EQ(error_of("x\n  {% endfor %}"), "line 2, column 6: unexpected {% endfor %}");
    EXPECT_EQ(error_of("{% include 'x' %}"), "line 1, column 4: unknown or unsupported statement 'include'");
    EXPECT_EQ(error_of("{{ 'abc }}"), "line 1, column 4: unterminated string");
    EXPECT_EQ(error_of("{# never closed"), "line 1, column 1: unterminated comment");
    EXPECT_EQ(error_of("{{ 1 + }}"), "line 1, column 8: expected an expression, found '}}'");
    EXPECT_EQ(error_of("{{ a b }}"), "line 1, column 6: expected '}}', found 'b'");
    EXPECT_EQ(error_of("{{ x | }}"), "line 1, column 8: expected a name, found '}}'");
    EXPECT_EQ(error_of("{{ @ }}"), "line 1, column 4: unexpected character '@'");
    EXPECT_EQ(error_of("{% for in x %}{% endfor %}"),
              "line 1, column 11: expected 'in' in for loop, found 'x'");
    EXPECT_EQ(error_of("{% set 1 = 2 %}"), "line 1, column 8: cannot assign to this expression");
    EXPECT_EQ(error_of(std::string(500, '(')), "");  // plain text
    EXPECT_NE(error_of("{{ " + std::string(500, '(') + "1" + std::string(500, ')') + " }}")
                  .find("nested too deeply"),
              std::string::npos);
}

TEST(JinjaEngine, RuntimeErrorsSayWhere) {
    EXPECT_EQ(error_of("\n  {{ 1 + 'a' }}"),
              "line 2, column 8: unsupported operand types for +: int and string");
    EXPECT_EQ(error_of("{{ x | nosuchfilter }}"), "line 1, column 8: unknown filter 'nosuchfilter'");
    EXPECT_EQ(error_of("{{ x is nosuchtest }}"), "line 1, column 6: unknown test 'nosuchtest'");
    EXPECT_EQ(error_of("{{ nosuchfn() }}"), "line 1, column 4: 'nosuchfn' is undefined");
    EXPECT_EQ(error_of("{{ 1 // 0 }}"), "line 1, column 6: integer division by zero");
    EXPECT_EQ(error_of("{% for a, b in [1] %}{% endfor %}"),
              "line 1, column 1: cannot unpack int into 2 names");
    EXPECT_EQ(error_of("{% for x in 3 %}{% endfor %}"), "line 1, column 13: cannot iterate over int");
    EXPECT_NE(error_of("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}").find("recursion too deep"),
              std::string::npos);
}

TEST(JinjaEngine, HostileTemplatesAreBounded) {
    auto run = [](const std::string &src, uint64_t steps, size_t bytes) -> std::string {
        Environment env;
        env.max_steps = steps;
        env.max_string = bytes;
        try {
            Template::parse(src).render(Value::object(), env);
        } catch (const JinjaError &e) {
            return e.what();
        }
        return "";
    };
    EXPECT_EQ(
        run("{% for i in range(100) %}{% for j in range(100) %}{% endfor %}{% endfor %}", 1000, 1 << 20),
        "line 1, column 26: template runs too long (step limit)");
    EXPECT_EQ(run("{% for i in range(100) %}{% endfor %}", 1000, 1 << 20), "");
    EXPECT_EQ(run("{% set ns = namespace(s='ab') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% "
                  "endfor %}",
                  1000, 1 << 20),
              "line 1, column 76: string too long");
    EXPECT_EQ(run("{{ 'x' * 2000 }}", 1000, 1000), "line 1, column 8: repetition too large");
    EXPECT_EQ(run("{{ 'abc' | replace('', 'yyyyyyyyyy') }}", 1000, 20), "line 1, column 12: string too long");
    EXPECT_EQ(run("{% for i in range(50) %}{{ 'x' * 100 }}{% endfor %}", 1000, 1000).substr(0, 18),
              "line 1, column 25:");
    // Unbounded recursion through a macro ends as an error, not a stack overflow.
    EXPECT_NE(
        run("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", 1000000, 1 << 20).find("too deep"),
        std::string::npos);
}

}  // namespace
}  // namespace lctx::jinja::jinja_engine_test
