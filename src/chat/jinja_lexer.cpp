#include "chat/jinja_lexer.h"

#include <cctype>
#include <cstring>

#include "chat/jinja_value.h"

namespace lctx::jinja {

std::string where(int line, int col) {
    return "line " + std::to_string(line) + ", column " + std::to_string(col);
}

namespace {

class Lexer {
  public:
    Lexer(const std::string &src, const LexOptions &o) : s_(src), opts_(o) {}

    std::vector<Token> run() {
        // Set when the previous tag asked to strip the whitespace that follows it.
        bool strip_next = false, trim_newline = false;
        while (pos_ < s_.size()) {
            size_t open = find_open(pos_);
            std::string text = s_.substr(pos_, open - pos_);
            const int text_line = line_, text_col = col_;
            advance_to(open);
            if (strip_next) {
                size_t k = 0;
                while (k < text.size() && std::isspace(static_cast<unsigned char>(text[k]))) ++k;
                text.erase(0, k);
            } else if (trim_newline) {
                if (text.rfind("\r\n", 0) == 0)
                    text.erase(0, 2);
                else if (!text.empty() && text[0] == '\n')
                    text.erase(0, 1);
            }
            strip_next = trim_newline = false;
            if (open < s_.size()) {
                const char kind = s_[open + 1];
                const char mod = open + 2 < s_.size() ? s_[open + 2] : 0;
                if (mod == '-') {
                    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
                        text.pop_back();
                } else if (kind != '{' && mod != '+' && opts_.lstrip_blocks) {
                    // Only spaces and tabs between the line start and the tag go.
                    size_t b = open;
                    while (b > 0 && (s_[b - 1] == ' ' || s_[b - 1] == '\t')) --b;
                    if (b == 0 || s_[b - 1] == '\n') {
                        size_t n = open - b;
                        while (n > 0 && !text.empty() && (text.back() == ' ' || text.back() == '\t')) {
                            text.pop_back();
                            --n;
                        }
                    }
                }
            }
            if (!text.empty()) toks_.push_back({Token::Type::Text, text, text_line, text_col});
            if (open >= s_.size()) break;
            bool strip_after = false;
            const char kind = s_[open + 1];
            if (kind == '#') {
                strip_after = lex_comment();
            } else if (kind == '{') {
                strip_after = lex_tag(false);
            } else {
                if (lex_raw()) {
                    continue;
                }
                strip_after = lex_tag(true);
            }
            strip_next = strip_after;
            trim_newline = !strip_after && kind != '{' && opts_.trim_blocks;
        }
        toks_.push_back({Token::Type::Eof, "", line_, col_});
        return std::move(toks_);
    }

  private:
    const std::string &s_;
    LexOptions opts_;
    size_t pos_ = 0;
    int line_ = 1, col_ = 1;
    std::vector<Token> toks_;

    bool at_line_start(size_t p) const { return p == 0 || s_[p - 1] == '\n'; }

    [[noreturn]] void fail(const std::string &msg, int line, int col) const {
        throw JinjaError(where(line, col) + ": " + msg);
    }

    size_t find_open(size_t from) const {
        for (size_t p = from; p + 1 < s_.size(); ++p)
            if (s_[p] == '{' && (s_[p + 1] == '{' || s_[p + 1] == '%' || s_[p + 1] == '#')) return p;
        return s_.size();
    }

    void advance_to(size_t p) {
        for (; pos_ < p && pos_ < s_.size(); ++pos_) {
            if (s_[pos_] == '\n') {
                ++line_;
                col_ = 1;
            } else if ((static_cast<unsigned char>(s_[pos_]) & 0xC0) != 0x80) {
                ++col_;
            }
        }
    }

    // Returns whether the comment ends with `-#}`.
    bool lex_comment() {
        const int l = line_, c = col_;
        size_t end = s_.find("#}", pos_ + 2);
        if (end == std::string::npos) fail("unterminated comment", l, c);
        const bool strip = end > pos_ + 2 && s_[end - 1] == '-';
        advance_to(end + 2);
        return strip;
    }

    // `{% raw %}...{% endraw %}`: the body is text, untouched.
    bool lex_raw() {
        size_t p = pos_ + 2;
        if (p < s_.size() && (s_[p] == '-' || s_[p] == '+')) ++p;
        while (p < s_.size() && std::isspace(static_cast<unsigned char>(s_[p]))) ++p;
        if (s_.compare(p, 3, "raw") != 0) return false;
        size_t q = p + 3;
        while (q < s_.size() && std::isspace(static_cast<unsigned char>(s_[q]))) ++q;
        if (q < s_.size() && s_[q] == '-') ++q;
        if (s_.compare(q, 2, "%}") != 0) return false;
        const int l = line_, c = col_;
        size_t body = q + 2;
        for (size_t e = s_.find("{%", body); e != std::string::npos; e = s_.find("{%", e + 2)) {
            size_t k = e + 2;
            if (k < s_.size() && (s_[k] == '-' || s_[k] == '+')) ++k;
            while (k < s_.size() && std::isspace(static_cast<unsigned char>(s_[k]))) ++k;
            if (s_.compare(k, 6, "endraw") != 0) continue;
            size_t close = s_.find("%}", k);
            if (close == std::string::npos) break;
            std::string text = s_.substr(body, e - body);
            if (!text.empty()) toks_.push_back({Token::Type::Text, text, l, c});
            advance_to(close + 2);
            return true;
        }
        fail("{% raw %} without {% endraw %}", l, c);
    }

    // Lexes one `{{ ... }}` or `{% ... %}`; returns whether it ends with `-}}` / `-%}`.
    bool lex_tag(bool block) {
        const int l = line_, c = col_;
        toks_.push_back({block ? Token::Type::BlockBegin : Token::Type::VarBegin, block ? "{%" : "{{", l, c});
        size_t p = pos_ + 2;
        if (p < s_.size() && (s_[p] == '-' || s_[p] == '+')) ++p;
        advance_to(p);
        const char *close = block ? "%}" : "}}";
        int depth = 0;  // brackets, so that `}}` inside a dict literal does not end the tag
        while (true) {
            while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_])))
                advance_to(pos_ + 1);
            if (pos_ >= s_.size()) fail(std::string("unterminated tag, expected '") + close + "'", l, c);
            const int tl = line_, tc = col_;
            if (s_[pos_] == '-' && s_.compare(pos_ + 1, 2, close) == 0 && depth == 0) {
                advance_to(pos_ + 3);
                toks_.push_back({block ? Token::Type::BlockEnd : Token::Type::VarEnd, close, tl, tc});
                return true;
            }
            if (s_.compare(pos_, 2, close) == 0 && (depth == 0 || block)) {
                advance_to(pos_ + 2);
                toks_.push_back({block ? Token::Type::BlockEnd : Token::Type::VarEnd, close, tl, tc});
                return false;
            }
            const char ch = s_[pos_];
            if (std::isalpha(static_cast<unsigned char>(ch)) || ch == '_') {
                size_t e = pos_;
                while (e < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[e])) || s_[e] == '_'))
                    ++e;
                toks_.push_back({Token::Type::Name, s_.substr(pos_, e - pos_), tl, tc});
                advance_to(e);
            } else if (std::isdigit(static_cast<unsigned char>(ch))) {
                size_t e = pos_;
                bool is_float = false;
                while (e < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[e])) || s_[e] == '_'))
                    ++e;
                if (e + 1 < s_.size() && s_[e] == '.' &&
                    std::isdigit(static_cast<unsigned char>(s_[e + 1]))) {
                    is_float = true;
                    ++e;
                    while (e < s_.size() && std::isdigit(static_cast<unsigned char>(s_[e]))) ++e;
                }
                if (e < s_.size() && (s_[e] == 'e' || s_[e] == 'E')) {
                    size_t k = e + 1;
                    if (k < s_.size() && (s_[k] == '+' || s_[k] == '-')) ++k;
                    if (k < s_.size() && std::isdigit(static_cast<unsigned char>(s_[k]))) {
                        is_float = true;
                        e = k;
                        while (e < s_.size() && std::isdigit(static_cast<unsigned char>(s_[e]))) ++e;
                    }
                }
                std::string digits;
                for (size_t k = pos_; k < e; ++k)
                    if (s_[k] != '_') digits += s_[k];
                toks_.push_back({is_float ? Token::Type::Float : Token::Type::Int, digits, tl, tc});
                advance_to(e);
            } else if (ch == '\'' || ch == '"') {
                toks_.push_back({Token::Type::String, lex_string(ch, tl, tc), tl, tc});
            } else {
                static const char *ops[] = {"**", "//", "==", "!=", "<=", ">=", "+", "-", "*",
                                            "/",  "%",  "~",  "<",  ">",  "(",  ")", "[", "]",
                                            "{",  "}",  ",",  ":",  ".",  "|",  "="};
                const char *match = nullptr;
                for (const char *op : ops)
                    if (s_.compare(pos_, std::strlen(op), op) == 0) {
                        match = op;
                        break;
                    }
                if (!match) fail(std::string("unexpected character '") + ch + "'", tl, tc);
                if (*match == '(' || *match == '[' || *match == '{') ++depth;
                if ((*match == ')' || *match == ']' || *match == '}') && depth > 0) --depth;
                toks_.push_back({Token::Type::Op, match, tl, tc});
                advance_to(pos_ + std::strlen(match));
            }
        }
    }

    std::string lex_string(char q, int l, int c) {
        std::string out;
        size_t p = pos_ + 1;
        while (true) {
            if (p >= s_.size()) fail("unterminated string", l, c);
            const char ch = s_[p];
            if (ch == q) break;
            if (ch == '\\' && p + 1 < s_.size()) {
                const char e = s_[p + 1];
                switch (e) {
                    case 'n':
                        out += '\n';
                        break;
                    case 't':
                        out += '\t';
                        break;
                    case 'r':
                        out += '\r';
                        break;
                    case 'b':
                        out += '\b';
                        break;
                    case 'f':
                        out += '\f';
                        break;
                    case '0':
                        out += '\0';
                        break;
                    case '\\':
                        out += '\\';
                        break;
                    case '\'':
                        out += '\'';
                        break;
                    case '"':
                        out += '"';
                        break;
                    case '\n':
                        break;
                    case 'u':
                    case 'x': {
                        const size_t n = e == 'u' ? 4 : 2;
                        if (p + 2 + n > s_.size()) fail("bad escape in string", l, c);
                        unsigned cp = 0;
                        for (size_t k = 0; k < n; ++k) {
                            const char h = s_[p + 2 + k];
                            if (!std::isxdigit(static_cast<unsigned char>(h)))
                                fail("bad escape in string", l, c);
                            cp = cp * 16 + static_cast<unsigned>(std::isdigit(static_cast<unsigned char>(h))
                                                                     ? h - '0'
                                                                     : std::tolower(h) - 'a' + 10);
                        }
                        append_utf8(out, cp);
                        p += n;
                        break;
                    }
                    default:
                        out += '\\';
                        out += e;
                }
                p += 2;
                continue;
            }
            out += ch;
            ++p;
        }
        advance_to(p + 1);
        return out;
    }

    static void append_utf8(std::string &out, unsigned cp) {
        if (cp < 0x80) {
            out += static_cast<char>(cp);
        } else if (cp < 0x800) {
            out += static_cast<char>(0xC0 | (cp >> 6));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        } else {
            out += static_cast<char>(0xE0 | (cp >> 12));
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        }
    }
};

}  // namespace

std::vector<Token> lex(const std::string &src, const LexOptions &opts) {
    return Lexer(src, opts).run();
}

}  // namespace lctx::jinja
