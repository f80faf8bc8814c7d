// Matching text against a compiled grammar (grammar/gbnf.h), one code point at a time.
//
// The state is a set of parse stacks. A stack lists element indices, the back being the next element to
// match; every stack in the set has a character set or a token reference on top (rule references are
// expanded into each of their alternatives as soon as they reach the top) or is empty, which means the
// input so far is a complete match. A code point moves each stack whose top accepts it to the element
// after, and the stacks whose top does not accept it drop out (a token reference takes no code point;
// step_token moves the stacks whose top is a token reference matching a whole token).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "grammar/gbnf.h"

namespace lctx::grammar {

using Stack = std::vector<uint32_t>;

class Matcher {
  public:
    explicit Matcher(std::shared_ptr<const Grammar> grammar);

    const Grammar &grammar() const { return *g_; }
    const std::vector<Stack> &stacks() const { return stacks_; }
    // The input so far is a complete match (some stack is empty).
    bool complete() const;
    // No continuation at all: the input so far cannot be extended to a match.
    bool dead() const { return stacks_.empty(); }

    // The stacks after `cp` from `from` (empty when nothing can take it).
    std::vector<Stack> step(const std::vector<Stack> &from, uint32_t cp) const;
    // The stacks after the whole token `token` from `from`, through token references only.
    std::vector<Stack> step_token(const std::vector<Stack> &from, int32_t token) const;
    // Feeds one code point; false (and nothing changed) when no stack can take it.
    bool accept(uint32_t cp);
    // Whether a code point in [lo, hi] (the completions of a partial UTF-8 sequence) could come next.
    bool may_continue_with(const std::vector<Stack> &from, uint32_t lo, uint32_t hi) const;

    void reset();
    // Takes stacks computed by step() from this matcher's (a caller that looked ahead commits them).
    void set_stacks(std::vector<Stack> stacks) { stacks_ = std::move(stacks); }

  private:
    // Adds `s` with its top rule references expanded into every alternative.
    void expand(Stack s, std::vector<Stack> &out) const;

    std::shared_ptr<const Grammar> g_;
    std::vector<Stack> stacks_;
};

// Where a text stops matching: the code-point index of the first character no stack takes ("unexpected
// character"), or the text's length when it is a valid but incomplete prefix ("unexpected end of input").
struct MatchResult {
    bool accepted = false;
    bool unexpected_end = false;
    size_t position = 0;  // code points
};
MatchResult match_text(std::shared_ptr<const Grammar> g, const std::vector<uint32_t> &code_points);

}  // namespace lctx::grammar
