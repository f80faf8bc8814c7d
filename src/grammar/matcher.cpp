#include "grammar/matcher.h"

#include <algorithm>

namespace lctx::grammar {

Matcher::Matcher(std::shared_ptr<const Grammar> grammar) : g_(std::move(grammar)) {
    reset();
}

void Matcher::reset() {
    stacks_.clear();
    for (uint32_t start : g_->rule_alts[g_->root]) {
        Stack s;
        if (g_->elements[start].kind != Element::Kind::End) s.push_back(start);
        expand(std::move(s), stacks_);
    }
    std::sort(stacks_.begin(), stacks_.end());
    stacks_.erase(std::unique(stacks_.begin(), stacks_.end()), stacks_.end());
}

void Matcher::expand(Stack s, std::vector<Stack> &out) const {
    if (s.empty() || g_->elements[s.back()].kind != Element::Kind::RuleRef) {  // a terminal on top
        out.push_back(std::move(s));
        return;
    }
    // A rule reference on top: replace it by each alternative, with what follows the reference below.
    const uint32_t at = s.back();
    s.pop_back();
    if (g_->elements[at + 1].kind != Element::Kind::End) s.push_back(at + 1);
    for (uint32_t start : g_->rule_alts[g_->elements[at].rule]) {
        Stack t = s;
        if (g_->elements[start].kind != Element::Kind::End) t.push_back(start);
        expand(std::move(t), out);
    }
}

bool Matcher::complete() const {
    return std::any_of(stacks_.begin(), stacks_.end(), [](const Stack &s) { return s.empty(); });
}

std::vector<Stack> Matcher::step(const std::vector<Stack> &from, uint32_t cp) const {
    std::vector<Stack> out;
    for (const Stack &s : from) {
        if (s.empty()) continue;
        const Element &e = g_->elements[s.back()];
        if (e.kind != Element::Kind::Chars || !g_->chars_match(e, cp)) continue;  // a token takes no byte
        Stack t(s.begin(), s.end() - 1);
        const uint32_t next = s.back() + 1;
        if (g_->elements[next].kind != Element::Kind::End) t.push_back(next);
        expand(std::move(t), out);
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}

std::vector<Stack> Matcher::step_token(const std::vector<Stack> &from, int32_t token) const {
    std::vector<Stack> out;
    for (const Stack &s : from) {
        if (s.empty()) continue;
        const Element &e = g_->elements[s.back()];
        if (e.kind != Element::Kind::Token || !g_->token_match(e, token)) continue;
        Stack t(s.begin(), s.end() - 1);
        const uint32_t next = s.back() + 1;
        if (g_->elements[next].kind != Element::Kind::End) t.push_back(next);
        expand(std::move(t), out);
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}

bool Matcher::accept(uint32_t cp) {
    std::vector<Stack> next = step(stacks_, cp);
    if (next.empty()) return false;
    stacks_ = std::move(next);
    return true;
}

bool Matcher::may_continue_with(const std::vector<Stack> &from, uint32_t lo, uint32_t hi) const {
    for (const Stack &s : from)
        if (!s.empty() && g_->elements[s.back()].kind == Element::Kind::Chars &&
            g_->chars_match_any(g_->elements[s.back()], lo, hi))
            return true;
    return false;
}

MatchResult match_text(std::shared_ptr<const Grammar> g, const std::vector<uint32_t> &code_points) {
    Matcher m(std::move(g));
    MatchResult r;
    for (size_t i = 0; i < code_points.size(); ++i) {
        if (!m.accept(code_points[i])) {
            r.position = i;
            return r;
        }
    }
    r.accepted = m.complete();
    r.unexpected_end = !r.accepted;
    r.position = code_points.size();
    return r;
}

}  // namespace lctx::grammar
