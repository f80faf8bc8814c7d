// Jinja lexer: template text -> tokens. Text between tags becomes one Text token; tags become
// VarBegin/BlockBegin ... VarEnd/BlockEnd around their expression tokens; comments vanish.
// Whitespace control is applied here: `{%-`/`-%}` (and the same on `{{ }}`, `{# #}`) strip all
// whitespace on that side, and with the settings llama.cpp uses (trim_blocks, lstrip_blocks) a block or
// comment tag also drops the first newline after it and the spaces before it on its own line.
#pragma once
#include <string>
#include <vector>

namespace lctx::jinja {

struct Token {
    enum class Type { Text, VarBegin, VarEnd, BlockBegin, BlockEnd, Name, String, Int, Float, Op, Eof };
    Type type;
    std::string text;  // Text: the text; Name/Op: the spelling; String: the decoded value; numbers: digits
    int line = 1, col = 1;
};

struct LexOptions {
    bool trim_blocks = true;
    bool lstrip_blocks = true;
};

// Throws JinjaError ("line L, column C: ...") on an unterminated tag, string or comment.
std::vector<Token> lex(const std::string &src, const LexOptions &opts = {});

std::string where(int line, int col);  // "line L, column C"

}  // namespace lctx::jinja
