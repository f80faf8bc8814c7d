// The grammar sampler (llama_sampler_init_grammar / _lazy): keeps only the candidates whose text keeps the
// output a valid prefix of the grammar, and end-of-generation tokens only where the output is a complete
// match. Token texts come in as plain bytes (the C API passes each token's piece), so this layer does not
// depend on the vocabulary.
//
// A token's bytes may end inside a UTF-8 character: the partial character is carried to the next token,
// and such a token is allowed when some character with that prefix could come next. Candidates are judged
// by walking a byte trie of every token text alongside the parse stacks, so tokens that share a prefix
// share the work. Parse states recur (inside a JSON string every character leads back to the same stacks),
// so each distinct set of stacks becomes a numbered state whose transitions are computed once, and the
// tokens a state allows are remembered: a token in the middle of a long string costs one lookup.
//
// Token references in the grammar (`<[id]>`, `<think>`, `!<...>`) are judged on token ids: a token a
// reference on top of some stack matches is allowed whatever its text. A token whose text starts with a
// NUL byte is never allowed through its text (as b4748, which reads texts as C strings).
//
// Lazy grammars (trigger words or trigger tokens) let everything through until a trigger appears in the
// output; the grammar then constrains the output from the trigger on. Of several trigger words in the
// output, the first in the list that occurs wins (b4748's order); an empty word occurs at once.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/matcher.h"
#include "sampling/sampler.h"

namespace lctx {

struct TokenTexts {
    std::vector<std::string> piece;  // [n_vocab] bytes a token adds to the output
    std::vector<char> is_eog;        // [n_vocab]
};

struct GrammarTriggers {
    bool lazy = false;
    std::vector<std::string> words;
    std::vector<Token> tokens;
};

class GrammarSampler final : public Sampler {
  public:
    // Throws grammar::GrammarError for a grammar that cannot be used. `token_of_text` resolves `<TEXT>`
    // token references (the id of the token whose text is exactly TEXT, or -1); without it, the token
    // whose piece is TEXT.
    GrammarSampler(std::shared_ptr<const TokenTexts> texts, const std::string &gbnf, const std::string &root,
                   GrammarTriggers triggers = {},
                   const std::function<int32_t(std::string_view)> &token_of_text = {});

    const char *name() const override { return "grammar"; }
    void accept(Token token) override;
    void apply(TokenDataArray &cur) override;
    void reset() override;
    std::unique_ptr<Sampler> clone() const override;

    // Whether the output so far is a complete match (tests, and callers that stop there).
    bool complete() const { return !awaiting_trigger_ && partial_.remaining == 0 && matcher_.complete(); }

    // The bytes a token adds (for callers that feed text directly); false when they break the grammar
    // (nothing changes then).
    bool accept_bytes(const std::string &bytes);

  private:
    struct Partial {  // a UTF-8 character begun but not finished
        uint32_t value = 0;
        int remaining = 0;
        int length = 0;  // bytes of the whole character
    };
    struct Trie;
    struct StateCache;

    void allowed_tokens(std::vector<char> &allowed) const;
    void allow_token_references(const std::vector<grammar::Stack> &stacks, std::vector<char> &allowed) const;
    // Moves the parse on by one token: through token references and through its bytes.
    void advance(Token token);
    void walk(const Trie &trie, uint32_t node, uint32_t state, Partial partial,
              std::vector<char> &allowed) const;

    std::shared_ptr<const TokenTexts> texts_;
    std::shared_ptr<const grammar::Grammar> grammar_;
    mutable std::shared_ptr<const Trie> trie_;  // built on first use, shared by clones
    // The parse states met so far, their transitions and the tokens each allows (see StateCache); a
    // clone starts its own.
    mutable std::shared_ptr<StateCache> cache_;
    grammar::Matcher matcher_;
    Partial partial_;
    GrammarTriggers triggers_;
    bool awaiting_trigger_ = false;
    std::string trigger_buffer_;  // output while a lazy grammar waits for its trigger
    std::vector<char> allowed_;   // scratch
};

}  // namespace lctx
