// Every filter, test, method and global of src/chat/jinja_builtins.cpp with the edge cases Jinja2 documents
// (and Python's str / list / dict methods, which templates call): each expectation is what Jinja2 3.1
// prints for the template. A built-in that is added to jinja_builtins.cpp gets its cases here.
#include <gtest/gtest.h>

#include "chat/chat_template.h"
#include "chat/jinja_eval.h"

namespace lctx::jinja::jinja_builtins_test {
namespace {

const nlohmann::ordered_json kCtx = {
    {"neg", -3},
    {"negf", -2.5},
    {"users",
     {{{"name", "ann"}, {"age", 31}, {"active", true}, {"box", {{"n", 2}}}},
      {{"name", "bob"}, {"age", 25}, {"active", false}, {"box", {{"n", 5}}}},
      {{"name", "cy"}, {"age", 40}, {"active", true}}}},
    {"d", {{"b", 1}, {"a", 2}, {"C", 0}}},
};

std::string render(const std::string &src) {
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
    return Template::parse(src).render(chat::to_jinja_value(kCtx), env);
}

std::string error_of(const std::string &src) {
    try {
        render(src);
    } catch (const JinjaError &e) {
        return e.what();
    }
    return "(rendered)";
}

struct Case {
    const char *tmpl, *want;
};

void check(const std::vector<Case> &cases) {
    for (const Case &c : cases) {
        std::string got;
        try {
            got = render(c.tmpl);
        } catch (const JinjaError &e) {
            got = std::string("error: ") + e.what();
        }
        EXPECT_EQ(got, c.want) << c.tmpl;
    }
}

TEST(JinjaFilters, Strings) {
    check({
        {"{{ '  a b \\n'|trim }}|{{ 'xxhixx'|trim('x') }}|{{ ' s '|strip }}", "a b|hi|s"},
        {"{{ 'hELLO wORLD'|upper }} {{ 'hELLO'|lower }}", "HELLO WORLD hello"},
        {"{{ 'hELLO wORLD'|capitalize }}|{{ ''|capitalize }}", "Hello world|"},
        // Jinja2's title starts a word after spaces, '-', '(', '{', '[' and '<' only (not after "'").
        {"{{ \"hello wORLD they're up-to (date)\"|title }}", "Hello World They're Up-To (Date)"},
        {"{{ 1|string }} {{ none|string }} {{ [1, 'a']|string }} {{ true|string }}", "1 None [1, 'a'] True"},
        {"{{ '<b>'|safe }}", "<b>"},
        {"{{ '<a href=\\'x\\'>&\"'|e }}|{{ '<'|escape }}|{{ '&'|forceescape }}",
         "&lt;a href=&#39;x&#39;&gt;&amp;&#34;|&lt;|&amp;"},
        {"{{ 'aaa'|replace('a', 'b') }} {{ 'aaa'|replace('a', 'b', 2) }} {{ 'ab'|replace('', '-') }}",
         "bbb bba -a-b-"},
        {"{{ 'Hello, world! it\\'s a_b 42'|wordcount }} {{ '   '|wordcount }} {{ 'a-b'|wordcount }}",
         "6 0 2"},
        {"{{ 'a\\nb'|indent(2) }}|{{ 'a\\nb'|indent(2, true) }}|{{ 'a\\n\\nb'|indent(2) }}|"
         "{{ 'a\\n\\nb'|indent(2, blank=true) }}|{{ 'a\\nb'|indent('> ') }}|{{ 'a\\nb'|indent }}|{{ "
         "'a\\n'|indent(2) }}",
         "a\n  b|  a\n  b|a\n\n  b|a\n  \n  b|a\n> b|a\n    b|a\n"},
        // printf-style, as Python's % operator.
        {"{{ '%s, %s!'|format('Hello', 'World') }} {{ '%d%%'|format(42) }} {{ '%.2f'|format(3.14159) }} "
         "{{ '%5d|%-3s|'|format(7, 'x') }} {{ '%x'|format(255) }}",
         "Hello, World! 42% 3.14     7|x  | ff"},
        {"{{ '%-4s|%.2s|%3s|%s'|format('\xc3\xa9', 'abc', 'ab', [1]) }}", "\xc3\xa9   |ab| ab|[1]"},
    });
    EXPECT_NE(error_of("{{ '%s %s'|format(1) }}").find("not enough arguments"), std::string::npos);
    EXPECT_NE(error_of("{{ '%999999999d'|format(1) }}").find("too wide"), std::string::npos);
    EXPECT_NE(error_of("{{ '%d'|format('x') }}").find("needs a number"), std::string::npos);
}

TEST(JinjaFilters, Numbers) {
    check({
        {"{{ neg|abs }} {{ negf|abs }} {{ 4|abs }} {{ (-0.0)|abs }}", "3 2.5 4 0.0"},
        {"{{ 3.14159|round(2) }} {{ 3.14159|round(2, 'floor') }} {{ 3.14159|round(3, 'ceil') }} {{ "
         "42.0|round }} "
         "{{ 2.7|round }} {{ -1.5|round(0, 'floor') }} {{ 1234.0|round(-2) }}",
         "3.14 3.14 3.142 42.0 3.0 -2.0 1200.0"},
        {"{{ '42'|int }} {{ ' 7 '|int }} {{ 'x'|int }} {{ 'x'|int(7) }} {{ 3.9|int }} {{ '3.9'|int }} {{ "
         "true|int }} "
         "{{ 'ff'|int(base=16) }} {{ '1A'|int(0, 16) }} {{ '101'|int(0, 2) }}",
         "42 7 0 7 3 3 1 255 26 5"},
        {"{{ '3.5'|float }} {{ 'x'|float }} {{ 'x'|float(1.5) }} {{ 2|float }}", "3.5 0.0 1.5 2.0"},
        {"{{ [1, 2, 3]|sum }} {{ [1, 2]|sum(start=10) }} {{ [1.5, 2]|sum }} {{ users|sum(attribute='age') }} "
         "{{ []|sum }}",
         "6 13 3.5 96 0"},
        {"{{ [3, 1, 2]|min }} {{ [3, 1, 2]|max }} {{ []|min }}|{{ 'bca'|min }} {{ 'bca'|max }}", "1 3 |a c"},
        // Case-insensitive unless asked; by attribute.
        {"{{ ['B', 'a']|min }} {{ ['B', 'a']|max }} {{ ['B', 'a']|min(case_sensitive=true) }} "
         "{{ (users|max(attribute='age')).name }} {{ (users|min(attribute='age')).name }}",
         "a B B cy bob"},
    });
}

TEST(JinjaFilters, Sequences) {
    check({
        {"{{ 'h\xc3\xa9llo'|length }} {{ [1, 2]|count }} {{ d|length }} {{ undefined_x|length }}", "5 2 3 0"},
        // Keys in their order, as llama.cpp (Jinja2 would sort them and escape <, >, & and ').
        {"{{ {'b': 1, 'a': [1, 'x', none, true]}|tojson }}|{{ [1]|tojson(indent=2) }}|{{ 'q\"'|tojson }}",
         "{\"b\": 1, \"a\": [1, \"x\", null, true]}|[\n  1\n]|\"q\\\"\""},
        {"{{ [1, 2]|join(',') }} {{ 'abc'|join('-') }} {{ users|join(', ', attribute='name') }} {{ [1, "
         "2]|join }}",
         "1,2 a-b-c ann, bob, cy 12"},
        {"{{ undefined_x|default('x') }} {{ none|default('x') }} {{ ''|default('x', true) }} {{ false|d('x') "
         "}} "
         "{{ 0|d('x', boolean=true) }} {{ undefined_x|d }}|",
         "x None x False x |"},
        {"{% for k, v in d|items %}{{ k }}={{ v }};{% endfor %}|{{ undefined_x|items|length }}",
         "b=1;a=2;C=0;|0"},
        {"{% for k, v in d|dictsort %}{{ k }}{% endfor %} {% for k, v in d|dictsort(true) %}{{ k }}{% endfor "
         "%} "
         "{% for k, v in d|dictsort(by='value') %}{{ k }}{% endfor %} "
         "{% for k, v in d|dictsort(reverse=true) %}{{ k }}{% endfor %}",
         "abC Cab Cba Cba"},
        {"{{ [1, 2, 3, 4]|select('odd')|list }} {{ [0, 1, '', none, 'x']|select|list }} "
         "{{ [1, 2, 3, 4]|reject('odd')|list }} {{ [3, 4, 6]|select('divisibleby', 3)|list }} "
         "{{ [1, 5, 3]|select('gt', 2)|list }} {{ [1, 5, 3]|select('>', 2)|list }}",
         "[1, 3] [1, 'x'] [2, 4] [3, 6] [5, 3] [5, 3]"},
        {"{{ users|selectattr('active')|map(attribute='name')|join }} "
         "{{ users|rejectattr('active')|map(attribute='name')|join }} "
         "{{ users|selectattr('age', 'gt', 30)|map(attribute='name')|join }} "
         "{{ users|selectattr('box.n', 'eq', 5)|map(attribute='name')|join }} "
         "{{ users|selectattr('box')|list|length }}",
         "anncy bob anncy bob 2"},
        {"{{ [1, 2]|map('string')|join('+') }} {{ ['a', 'b']|map('upper')|join }} "
         "{{ users|map(attribute='box.n', default=0)|join }} {{ [' a ', 'b ']|map('trim')|join }} "
         "{{ ['aa', 'b']|map('replace', 'a', 'x')|join(',') }}",
         "1+2 AB 250 ab xx,b"},
        {"{{ [1, 2, 3]|first }} {{ [1, 2, 3]|last }} {{ 'abc'|first }}{{ 'abc'|last }} {{ []|first }}|{{ "
         "d|first }}",
         "1 3 ac |b"},
        {"{{ 'ab'|list }} {{ d|list }} {{ (1, 2)|list }}", "['a', 'b'] ['b', 'a', 'C'] [1, 2]"},
        {"{{ [1, 2, 1, 3]|unique|list }} {{ ['a', 'A', 'b']|unique|list }} "
         "{{ ['a', 'A', 'b']|unique(case_sensitive=true)|list }} "
         "{{ users|unique(attribute='active')|map(attribute='name')|join }}",
         "[1, 2, 3] ['a', 'b'] ['a', 'A', 'b'] annbob"},
        {"{{ [3, 1, 2]|sort }} {{ [3, 1, 2]|sort(reverse=true) }} {{ ['b', 'a', 'C']|sort }} "
         "{{ ['b', 'a', 'C']|sort(case_sensitive=true) }} {{ "
         "users|sort(attribute='age')|map(attribute='name')|join }} "
         "{{ [2, 1]|sort(true) }}",
         "[1, 2, 3] [3, 2, 1] ['a', 'b', 'C'] ['C', 'a', 'b'] bobanncy [2, 1]"},
        {"{{ 'abc'|reverse }} {{ [1, 2]|reverse|list }} {{ 'h\xc3\xa9'|reverse }}", "cba [2, 1] \xc3\xa9h"},
        {"{{ users[0]|attr('name') }} {{ users[0]|attr('nope') }}|", "ann |"},
        {"{{ [1, 2, 3, 4, 5]|batch(2)|list }} {{ [1, 2, 3]|batch(2, 'x')|list }} {{ []|batch(3)|list }} "
         "{{ [1, 2]|batch(2, 0)|list }}",
         "[[1, 2], [3, 4], [5]] [[1, 2], [3, 'x']] [] [[1, 2]]"},
    });
    EXPECT_NE(error_of("{{ [1]|batch(0) }}").find("batch"), std::string::npos);
    EXPECT_NE(error_of("{{ 'x'|abs }}").find("abs"), std::string::npos);
    EXPECT_NE(error_of("{{ 1|nosuchfilter }}").find("unknown filter 'nosuchfilter'"), std::string::npos);
}

TEST(JinjaTests, Types) {
    check({
        {"{{ x is defined }} {{ x is undefined }} {{ neg is defined }} {{ none is none }} {{ 0 is none }}",
         "False True True True False"},
        {"{{ true is boolean }} {{ 1 is boolean }} {{ true is true }} {{ 1 is true }} {{ false is false }} "
         "{{ 0 is false }}",
         "True False True False True False"},
        {"{{ 1 is integer }} {{ 1.0 is integer }} {{ true is integer }} {{ 1.0 is float }} {{ 1 is float }} "
         "{{ 1 is number }} {{ 1.5 is number }} {{ 'x' is number }}",
         "True False False True False True True False"},
        {"{{ 'a' is string }} {{ 1 is string }} {{ d is mapping }} {{ [] is mapping }}",
         "True False True False"},
        {"{{ [] is iterable }} {{ 'a' is iterable }} {{ d is iterable }} {{ 1 is iterable }} {{ 'a' is "
         "sequence }} "
         "{{ [] is sequence }} {{ 1 is sequence }}",
         "True True True False True True False"},
        {"{{ range is callable }} {{ 'a'.upper is callable }} {{ 'a' is callable }}", "True True False"},
    });
}

TEST(JinjaTests, Values) {
    check({
        {"{{ 3 is odd }} {{ 3 is even }} {{ 0 is even }} {{ -3 is odd }}", "True False True True"},
        {"{{ 9 is divisibleby 3 }} {{ 7 is divisibleby(3) }}", "True False"},
        // Python's str.islower / isupper: at least one cased character.
        {"{{ 'abc1' is lower }} {{ 'aBc' is lower }} {{ '123' is lower }} {{ 'AB1' is upper }} {{ '12' is "
         "upper }} "
         "{{ 1 is lower }}",
         "True False False True False False"},
        {"{{ 1 is in [1, 2] }} {{ 3 is in [1, 2] }} {{ 'b' is in 'abc' }} {{ 'b' is in d }} {{ 'z' is in d "
         "}}",
         "True False True True False"},
        // The operator names (==, <, ...) are reached through select(), as `is` takes a name.
        {"{{ 1 is eq 1 }} {{ 1 is equalto 2 }} {{ 1 is ne 2 }} {{ [1, 2]|select('==', 1)|list }} "
         "{{ [1, 2]|select('!=', 1)|list }}",
         "True False True [1] [2]"},
        {"{{ 1 is sameas 1 }} {{ 1 is sameas true }} {{ none is sameas none }}", "True False True"},
        {"{{ 1 is lt 2 }} {{ 1 is lessthan 1 }} {{ 2 is le 2 }} {{ 3 is le 2 }} {{ [1, 2]|select('<', "
         "2)|list }} "
         "{{ [1, 2]|select('<=', 1)|list }}",
         "True False True False [1] [1]"},
        {"{{ 2 is gt 1 }} {{ 1 is greaterthan 1 }} {{ 2 is ge 2 }} {{ 1 is ge 2 }} {{ [1, 2]|select('>', "
         "1)|list }} "
         "{{ [1, 2]|select('>=', 2)|list }}",
         "True False True False [2] [2]"},
        {"{{ 'b' is gt 'a' }} {{ [1, 2] is lt [1, 3] }}", "True True"},
    });
    EXPECT_NE(error_of("{{ 1 is divisibleby 0 }}").find("divisibleby"), std::string::npos);
    EXPECT_NE(error_of("{{ 1 is nosuchtest }}").find("unknown test 'nosuchtest'"), std::string::npos);
}

TEST(JinjaMethods, Strings) {
    check({
        {"{{ '  a  '.strip() }}|{{ 'xax'.strip('x') }}|{{ '  a  '.lstrip() }}|{{ '  a  '.rstrip() }}|"
         "{{ 'xax'.rstrip('x') }}",
         "a|a|a  |  a|xa"},
        {"{{ 'a,b,,c'.split(',') }} {{ ' a  b '.split() }} {{ 'a,b,c'.split(',', 1) }} {{ ' a b c "
         "'.split(none, 1) }} "
         "{{ ''.split() }} {{ ''.split(',') }}",
         "['a', 'b', '', 'c'] ['a', 'b'] ['a', 'b,c'] ['a', 'b c '] [] ['']"},
        {"{{ 'a,b,c'.rsplit(',', 1) }} {{ 'a,b,c'.rsplit(',') }} {{ ' a b c '.rsplit(none, 1) }} "
         "{{ ' a b '.rsplit() }}",
         "['a,b', 'c'] ['a', 'b', 'c'] [' a b', 'c'] ['a', 'b']"},
        {"{{ 'abc'.startswith('ab') }} {{ 'abc'.startswith(('x', 'a')) }} {{ 'abc'.endswith('bc') }} "
         "{{ 'abc'.endswith('abcd') }} {{ 'abc'.startswith('') }}",
         "True True True False True"},
        {"{{ 'aB'.upper() }} {{ 'aB'.lower() }} {{ \"they're wORLD\".title() }} {{ 'hELLO "
         "wORLD'.capitalize() }}",
         "AB ab They'Re World Hello world"},
        {"{{ 'aaa'.replace('a', 'b') }} {{ 'aaa'.replace('a', 'b', 1) }} {{ 'ab'.replace('', '.') }}",
         "bbb baa .a.b."},
        {"{{ 'h\xc3\xa9llo'.find('l') }} {{ 'hello'.rfind('l') }} {{ 'abc'.find('z') }} {{ 'abca'.index('a') "
         "}} "
         "{{ 'aaa'.count('a') }} {{ 'aaaa'.count('aa') }} {{ 'ab'.count('') }}",
         "2 3 -1 0 3 2 3"},
        {"{{ ', '.join(['a', 'b']) }} {{ '-'.join('xy') }} {{ ''.join([]) }}|", "a, b x-y |"},
        {"{{ '{} {}'.format(1, 'a') }} {{ '{0}{0}{1}'.format('x', 'y') }} {{ '{name}!'.format(name='n') }} "
         "{{ '{{}}'.format() }}",
         "1 a xxy n! {}"},
        {"{{ 'abc'.removeprefix('ab') }} {{ 'abc'.removeprefix('x') }} {{ 'abc'.removeprefix('') }} "
         "{{ 'abab'.removeprefix('ab') }}",
         "c abc abc ab"},
        {"{{ 'abc'.removesuffix('bc') }} {{ 'abc'.removesuffix('x') }} {{ 'abc'.removesuffix('') }} "
         "{{ 'bc'.removesuffix('abc') }}",
         "a abc abc bc"},
        {"{{ '123'.isdigit() }} {{ ''.isdigit() }} {{ '1a'.isdigit() }} {{ 'ab'.isalpha() }} {{ "
         "'a1'.isalpha() }} "
         "{{ 'a1'.isalnum() }} {{ 'a-'.isalnum() }} {{ ' \\t\\n'.isspace() }} {{ ''.isspace() }}",
         "True False False True False True False True False"},
        {"{{ 'AB1'.isupper() }} {{ 'aB'.isupper() }} {{ '1'.isupper() }} {{ 'ab1'.islower() }} {{ "
         "'1'.islower() }}",
         "True False False True False"},
    });
    EXPECT_NE(error_of("{{ 'abc'.index('z') }}").find("substring not found"), std::string::npos);
    EXPECT_NE(error_of("{{ 'a'.split('') }}").find("empty separator"), std::string::npos);
}

TEST(JinjaMethods, DictsAndLists) {
    check({
        {"{% for k, v in d.items() %}{{ k }}{{ v }}{% endfor %} {{ d.keys()|list }} {{ d.values()|list }}",
         "b1a2C0 ['b', 'a', 'C'] [1, 2, 0]"},
        {"{{ d.get('a') }} {{ d.get('x') }} {{ d.get('x', 5) }} {{ d.get('x', default=6) }}", "2 None 5 6"},
        {"{% set e = {'a': 1, 'b': 2} %}{{ e.pop('a') }} {{ e }} {{ e.pop('z', 0) }}", "1 {'b': 2} 0"},
        {"{% set e = {'a': 1} %}{% set _ = e.update({'a': 3, 'c': 4}) %}{% set _ = e.update(z=5) %}{{ e }}",
         "{'a': 3, 'c': 4, 'z': 5}"},
        {"{% set e = {'a': 1} %}{% set c = e.copy() %}{% set _ = c.update({'z': 1}) %}{{ e }} {{ c }}",
         "{'a': 1} {'a': 1, 'z': 1}"},
        {"{% set l = [1] %}{% set _ = l.append(2) %}{% set _ = l.extend([3, 4]) %}{{ l }}", "[1, 2, 3, 4]"},
        {"{% set l = [1, 2] %}{% set _ = l.insert(0, 'a') %}{% set _ = l.insert(-1, 'b') %}"
         "{% set _ = l.insert(99, 'c') %}{{ l }}",
         "['a', 1, 'b', 2, 'c']"},
        {"{% set l = [1, 2, 3] %}{{ l.pop() }} {{ l.pop(0) }} {{ l }}", "3 1 [2]"},
        {"{{ [1, 2, 1].index(1) }} {{ [1, 2, 1].index(2) }} {{ [1, 2, 1].count(1) }} {{ [1].count(5) }}",
         "0 1 2 0"},
    });
    EXPECT_NE(error_of("{{ {}.pop('k') }}").find("not found"), std::string::npos);
    EXPECT_NE(error_of("{{ [].pop() }}").find("pop from empty list"), std::string::npos);
    EXPECT_NE(error_of("{{ [1].index(5) }}").find("not in list"), std::string::npos);
}

TEST(JinjaGlobals, All) {
    check({
        {"{{ range(3)|list }} {{ range(1, 4)|list }} {{ range(5, 0, -2)|list }} {{ range(0)|list }} "
         "{{ range(3, 1)|list }}",
         "[0, 1, 2] [1, 2, 3] [5, 3, 1] [] []"},
        {"{% set ns = namespace(a=1, b='x') %}{% for i in [1, 2] %}{% set ns.a = ns.a + i %}{% endfor %}{{ "
         "ns.a }}{{ ns.b }}",
         "4x"},
        {"{{ dict(a=1, b=2) }} {{ dict({'x': 1}, y=2) }} {{ dict() }}",
         "{'a': 1, 'b': 2} {'x': 1, 'y': 2} {}"},
        {"{{ strftime_now('%Y-%m-%d %H:%M') }}", "2026-03-04 05:06"},
    });
    EXPECT_NE(error_of("{{ raise_exception('bad input here') }}").find("bad input here"), std::string::npos);
    EXPECT_NE(error_of("{{ range(1, 2, 0) }}").find("step"), std::string::npos);
}

}  // namespace
}  // namespace lctx::jinja::jinja_builtins_test
