#include "generate/fim_prompt.h"

namespace lctx::generate {

std::vector<int32_t> fim_prompt(const FimTokens &t, const FimInput &in, const Tokenizer &tokenize) {
    std::vector<int32_t> out;
    auto append = [&out](const std::vector<int32_t> &v) { out.insert(out.end(), v.begin(), v.end()); };
    if (t.add_bos && t.bos >= 0) out.push_back(t.bos);
    if (!in.extra.empty()) {
        if (t.rep >= 0 && t.sep >= 0) {
            out.push_back(t.rep);
            append(tokenize("myproject\n"));
            for (const FimFile &f : in.extra) {
                out.push_back(t.sep);
                append(tokenize(f.filename + "\n"));
                append(tokenize(f.text));
            }
            out.push_back(t.sep);
            append(tokenize("filename\n"));
        } else {
            for (const FimFile &f : in.extra) append(tokenize(f.text));
        }
    }
    std::vector<int32_t> pre = {t.pre}, suf = {t.suf};
    const std::vector<int32_t> p = tokenize(in.prefix), s = tokenize(in.suffix);
    pre.insert(pre.end(), p.begin(), p.end());
    suf.insert(suf.end(), s.begin(), s.end());
    append(in.spm ? suf : pre);
    append(in.spm ? pre : suf);
    out.push_back(t.mid);
    if (!in.middle.empty()) append(tokenize(in.middle));
    return out;
}

}  // namespace lctx::generate
