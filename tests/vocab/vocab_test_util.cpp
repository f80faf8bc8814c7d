#include "vocab/vocab_test_util.h"

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace lctx::test {

const Vocab &fixture_vocab(const std::string &name) {
    static std::mutex mu;
    static std::map<std::string, std::unique_ptr<Vocab>> cache;
    std::lock_guard<std::mutex> lock(mu);
    auto &slot = cache[name];
    if (!slot) {
        const auto file = gguf::File::open(vocab_path(name));
        slot = Vocab::load(*file);
    }
    return *slot;
}

static std::string read_file(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot open " + path);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

std::vector<VocabCase> read_cases(const std::string &name) {
    const std::string inp = read_file(vocab_path(name) + ".inp");
    const std::string outp = read_file(vocab_path(name) + ".out");
    const std::string sep = "\n__ggml_vocab_test__\n";
    std::vector<std::string> texts;
    size_t pos = 0;
    for (size_t hit; (hit = inp.find(sep, pos)) != std::string::npos; pos = hit + sep.size())
        texts.push_back(inp.substr(pos, hit - pos));
    if (pos != inp.size()) throw std::runtime_error(name + ".inp does not end with the separator");

    std::vector<std::string> lines;
    std::istringstream ls(outp);
    for (std::string line; std::getline(ls, line);) lines.push_back(line);
    if (lines.size() != texts.size())
        throw std::runtime_error(name + ": " + std::to_string(texts.size()) + " texts but " +
                                 std::to_string(lines.size()) + " id lines");
    std::vector<VocabCase> cases;
    for (size_t i = 0; i < texts.size(); ++i) {
        VocabCase c{texts[i], {}};
        std::istringstream is(lines[i]);
        for (long v; is >> v;) c.ids.push_back(int32_t(v));
        cases.push_back(std::move(c));
    }
    return cases;
}

std::string escape(const std::string &s) {
    std::string out;
    for (unsigned char c : s) {
        if (c == '\n')
            out += "\\n";
        else if (c == '\t')
            out += "\\t";
        else if (c < 0x20 || c == 0x7F) {
            char buf[8];
            snprintf(buf, sizeof(buf), "\\x%02X", c);
            out += buf;
        } else
            out += char(c);
    }
    return out;
}

}  // namespace lctx::test
