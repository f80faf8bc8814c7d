// llama.cpp's run / chat options of issue 38: the sampler order (--samplers, --sampling-seq), metadata
// overrides (--override-kv), the context's RoPE settings (--rope-*, --yarn-*), -sp, and the prompt cache
// (--prompt-cache, --prompt-cache-all, --prompt-cache-ro). Each is checked against what follows from its
// definition: an order that must reduce to greedy decoding, an override that must equal the option that
// sets the same value, a cache that must give the tokens a run without it gives.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_run.h"
#include "tools/lctx/gen_extra_options.h"

namespace lctx::testing::cli_options_test {
namespace {

const std::string kPrompt = "-p 'Once upon a time there was a little girl' ";

// `lctx run ARGS --json`: the parsed object (null when it failed).
nlohmann::json run_json(const std::string &args) {
    const CliResult r = run_cli("run -q --json " + args);
    if (r.status != 0) return nullptr;
    return nlohmann::json::parse(r.out, nullptr, false);
}

std::vector<int> ids_of(const std::string &args) {
    const nlohmann::json j = run_json(args);
    if (j.is_null() || j.is_discarded()) return {-1};
    return j["ids"].get<std::vector<int>>();
}

std::string file_bytes(const std::string &path) {
    std::ifstream f(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

// llama.cpp applies the samplers in the order given, then draws. min_p before a very high temperature keeps
// only the top token (greedy); after it, the flattened distribution keeps many, and the draw wanders.
TEST(RunOptions, SamplerOrderAsLlamaCpp) {
    const std::vector<int> greedy = ids_of(kPrompt + "-n 24 --temp 0");
    ASSERT_EQ(greedy.size(), 24u);
    const std::string flat = kPrompt + "-n 24 -s 7 --temp 100 --top-k 0 --top-p 1 --min-p 0.99 ";
    EXPECT_EQ(ids_of(flat + "--samplers 'min_p;temperature'"), greedy);
    EXPECT_EQ(ids_of(flat + "--sampling-seq mt"), greedy);
    EXPECT_EQ(ids_of(flat + "--samplers 'min-p;temp'"), greedy);  // llama.cpp's other spellings
    EXPECT_NE(ids_of(flat + "--samplers 'temperature;min_p'"), greedy);
    EXPECT_EQ(ids_of(flat + "--samplers 'temperature;min_p'"), ids_of(flat + "--sampling-seq tm"));
    // The default order written out gives the default's draw.
    const std::string sampled = kPrompt + "-n 24 -s 42 --temp 0.8 --repeat-penalty 1.2 ";
    const std::vector<int> def = ids_of(sampled);
    EXPECT_EQ(ids_of(sampled + "--sampling-seq edkypmxt"), def);
    EXPECT_EQ(ids_of(sampled + "--samplers 'penalties;dry;top_k;typ_p;top_p;min_p;xtc;temperature'"), def);
    // Only the samplers named run: top-k 1 alone is greedy at any temperature; without "penalties" a repeat
    // penalty has no effect.
    EXPECT_EQ(ids_of(kPrompt + "-n 24 -s 3 --temp 5 --top-k 1 --samplers top_k"), greedy);
    const std::string penalized = kPrompt + "-n 24 --temp 0 --repeat-penalty 3 ";
    EXPECT_NE(ids_of(penalized), greedy);
    EXPECT_EQ(ids_of(penalized + "--samplers top_k"), greedy);
    for (const std::string bad :
         {"--samplers 'top_k;bogus'", "--sampling-seq kz", "--samplers ';'",
          "--samplers top_k --sampling-seq k", "--samplers ''", "--sampling-seq ''"}) {
        const CliResult r = run_cli("run -n 1 " + bad, true);
        EXPECT_EQ(r.status, 1) << bad;
        EXPECT_NE(r.out.find(bad.find("--samplers") == 0 ? "--samplers" : "--sampling-seq"),
                  std::string::npos)
            << r.out;
    }
}

// --override-kv replaces a metadata value for the load: the RoPE base set through the file's key equals the
// context option that sets it; add_bos_token=false drops the BOS.
TEST(RunOptions, OverrideKvAndRopeOptions) {
    const std::string base = kPrompt + "-n 16 --temp 0 ";
    const std::vector<int> def = ids_of(base);
    ASSERT_EQ(def.size(), 16u);
    EXPECT_EQ(ids_of(base + "--rope-freq-base 10000"), def);  // stories260K's base
    const std::vector<int> b500 = ids_of(base + "--rope-freq-base 500");
    EXPECT_NE(b500, def);
    EXPECT_EQ(ids_of(base + "--override-kv llama.rope.freq_base=float:500"), b500);
    // --rope-scale N is --rope-freq-scale 1/N; linear scaling by 1 is none.
    const std::vector<int> half = ids_of(base + "--rope-freq-scale 0.5");
    EXPECT_NE(half, def);
    EXPECT_EQ(ids_of(base + "--rope-scale 2"), half);
    EXPECT_EQ(ids_of(base + "--rope-scaling linear --rope-freq-scale 0.5"), half);
    EXPECT_EQ(ids_of(base + "--rope-scaling none --rope-freq-scale 0.5"), def);
    // YaRN without its extrapolation mix (ext factor 0) is linear interpolation; with it (1, YaRN's default)
    // the fast dimensions keep their frequencies, and it is not. The attention factor scales every rotation.
    EXPECT_EQ(ids_of(base + "--rope-scaling yarn --rope-freq-scale 0.5 --yarn-ext-factor 0"), half);
    const std::vector<int> yarn = ids_of(base + "--rope-scaling yarn --rope-freq-scale 0.5");
    EXPECT_NE(yarn, half);
    EXPECT_NE(ids_of(base + "--rope-scaling yarn --rope-freq-scale 0.5 --yarn-attn-factor 2"), yarn);

    const nlohmann::json with_bos = run_json(base);
    const nlohmann::json no_bos = run_json(base + "--override-kv tokenizer.ggml.add_bos_token=bool:false");
    ASSERT_FALSE(with_bos.is_null());
    ASSERT_FALSE(no_bos.is_null());
    const std::vector<int> a = with_bos["prompt_ids"].get<std::vector<int>>(),
                           b = no_bos["prompt_ids"].get<std::vector<int>>();
    ASSERT_EQ(a.size(), b.size() + 1);
    EXPECT_EQ(a[0], 1);
    EXPECT_TRUE(std::equal(b.begin(), b.end(), a.begin() + 1));

    for (const std::string bad :
         {"--override-kv llama.rope.freq_base", "--override-kv k=double:1", "--override-kv k=int:x",
          "--rope-freq-base -1", "--rope-scaling cubic", "--rope-freq-scale nan", "--yarn-ext-factor -3",
          "--rope-scale 2 --rope-freq-scale 0.25"}) {
        const CliResult r = run_cli("run -n 1 " + bad, true);
        EXPECT_EQ(r.status, 1) << bad;
        EXPECT_NE(r.out.find(bad.substr(0, bad.find(' '))), std::string::npos) << r.out;
    }
}

// YaRN's ramp options reach the context: the defaults written out (beta fast 32, slow 1, the original
// context the model's 2048, or 0 for it) give the same probabilities as none; another value of each moves
// them. Linear scaling has no ramp, so they change nothing there.
TEST(RunOptions, YarnRampOptions) {
    auto probs = [](const std::string &args) {
        const nlohmann::json j =
            run_json(kPrompt + "-n 4 --temp 0 --n-probs 3 --rope-freq-scale 0.5 " + args);
        return j.is_null() ? nlohmann::json() : j["probs"];
    };
    const nlohmann::json yarn = probs("--rope-scaling yarn");
    ASSERT_FALSE(yarn.is_null());
    EXPECT_EQ(probs("--rope-scaling yarn --yarn-beta-fast 32 --yarn-beta-slow 1 --yarn-orig-ctx 2048"), yarn);
    EXPECT_EQ(probs("--rope-scaling yarn --yarn-orig-ctx 0"), yarn);
    for (const char *other : {"--yarn-beta-fast 0.5", "--yarn-beta-slow 0.01", "--yarn-orig-ctx 64"})
        EXPECT_NE(probs(std::string("--rope-scaling yarn ") + other), yarn) << other;
    const nlohmann::json linear = probs("--rope-scaling linear");
    EXPECT_NE(linear, yarn);
    EXPECT_EQ(probs("--rope-scaling linear --yarn-beta-fast 0.5 --yarn-beta-slow 0.01 --yarn-orig-ctx 64"),
              linear);
}

// -sp / --special prints special tokens' text (llama.cpp's -sp): a BOS forced by a logit bias shows as <s>.
TEST(RunOptions, SpecialTokensPrinted) {
    const std::string base = "-p hi -n 2 --temp 0 -s 1 --logit-bias 1+100 ";
    const nlohmann::json plain = run_json(base);
    const nlohmann::json sp = run_json(base + "-sp");
    const nlohmann::json lng = run_json(base + "--special");
    ASSERT_FALSE(plain.is_null());
    ASSERT_FALSE(sp.is_null());
    EXPECT_EQ(plain["ids"], (std::vector<int>{1, 1}));
    EXPECT_EQ(plain["text"], "");
    EXPECT_EQ(sp["text"], "<s><s>");
    EXPECT_EQ(lng, sp);
}

// --prompt-cache: the first run saves the prompt's state; a later prompt that extends it decodes only the new
// tokens, and every run gives the tokens a run without the cache gives.
TEST(RunOptions, PromptCacheReusesThePrefix) {
    const std::string cache = temp_file("prompt.cache");
    std::filesystem::remove(cache);
    const std::string p1 = "-p 'Once upon a time there was a little girl' -n 12 --temp 0 ";
    const std::string p2 = "-p 'Once upon a time there was a little girl named Lily. She' -n 12 --temp 0 ";
    const nlohmann::json plain1 = run_json(p1), plain2 = run_json(p2);
    ASSERT_FALSE(plain1.is_null());
    ASSERT_FALSE(plain2.is_null());

    const nlohmann::json first = run_json(p1 + "--prompt-cache " + cache);
    ASSERT_FALSE(first.is_null());
    EXPECT_EQ(first["prompt_cache"]["reused"], 0);
    EXPECT_EQ(first["ids"], plain1["ids"]);
    ASSERT_TRUE(std::filesystem::is_regular_file(cache));

    // The common prefix of the two prompts' tokens is reused; the output is the cache-less one.
    const std::vector<int> t1 = plain1["prompt_ids"].get<std::vector<int>>(),
                           t2 = plain2["prompt_ids"].get<std::vector<int>>();
    size_t common = 0;
    while (common < t1.size() && common < t2.size() && t1[common] == t2[common]) ++common;
    ASSERT_EQ(common, t1.size());  // the first prompt's tokens start the second's
    const nlohmann::json second = run_json(p2 + "--prompt-cache " + cache);
    ASSERT_FALSE(second.is_null());
    EXPECT_EQ(second["prompt_cache"]["reused"], common);
    EXPECT_EQ(second["ids"], plain2["ids"]);
    // The same prompt again: all but its last token reused (decoded again for its logits).
    const nlohmann::json again = run_json(p2 + "--prompt-cache " + cache);
    EXPECT_EQ(again["prompt_cache"]["reused"], t2.size() - 1);
    EXPECT_EQ(again["ids"], plain2["ids"]);
    const CliResult said = run_cli("run " + p2 + "--prompt-cache " + cache, true);
    ASSERT_EQ(said.status, 0) << said.out;
    EXPECT_NE(
        said.out.find(std::to_string(t2.size() - 1) + " of " + std::to_string(t2.size()) + " prompt tokens"),
        std::string::npos)
        << said.out;

    // Read-only: used, never written (the cache holds more than this prompt: all but its last token reused).
    const std::string before = file_bytes(cache);
    const nlohmann::json ro = run_json(p1 + "--prompt-cache-ro --prompt-cache " + cache);
    EXPECT_EQ(ro["prompt_cache"]["reused"], t1.size() - 1);
    EXPECT_EQ(ro["ids"], plain1["ids"]);
    EXPECT_EQ(file_bytes(cache), before);
    // A prompt that leaves the cached one after the common prefix: the cached tokens past it are removed, so
    // the output is the cache-less one.
    const std::string p3 = "-p 'Once upon a time there was a big dog. He' -n 12 --temp 0 ";
    const nlohmann::json plain3 = run_json(p3);
    const nlohmann::json branch = run_json(p3 + "--prompt-cache-ro --prompt-cache " + cache);
    ASSERT_FALSE(plain3.is_null());
    ASSERT_FALSE(branch.is_null());
    const std::vector<int> t3 = plain3["prompt_ids"].get<std::vector<int>>();
    size_t common3 = 0;
    while (common3 < t3.size() && common3 < t2.size() && t3[common3] == t2[common3]) ++common3;
    ASSERT_GT(common3, 1u);
    ASSERT_LT(common3, t3.size() - 1);
    EXPECT_EQ(branch["prompt_cache"]["reused"], common3);
    EXPECT_EQ(branch["ids"], plain3["ids"]);

    // --prompt-cache-all keeps the generated tokens too: a prompt of the prompt and its output reuses more
    // than the prompt.
    std::filesystem::remove(cache);
    const nlohmann::json all = run_json(p1 + "--prompt-cache-all --prompt-cache " + cache);
    ASSERT_FALSE(all.is_null());
    const std::string cont = "-p 'Once upon a time there was a little girl" + all["text"].get<std::string>() +
                             "' -n 4 --temp 0 --prompt-cache " + cache;
    const nlohmann::json more = run_json(cont);
    ASSERT_FALSE(more.is_null());
    EXPECT_GT(more["prompt_cache"]["reused"].get<size_t>(), t1.size());

    // A cache of another model is refused in one line and left as it is.
    const std::string other = std::string(LCTX_FIXTURES_DIR) + "/golden/models/llama-Q8_0.gguf";
    const std::string kept = file_bytes(cache);
    const CliResult wrong = run_cli("run -m " + other + " -n 2 --prompt-cache " + cache, true);
    EXPECT_EQ(wrong.status, 1);
    EXPECT_NE(wrong.out.find("--prompt-cache"), std::string::npos) << wrong.out;
    EXPECT_EQ(file_bytes(cache), kept);
    const CliResult dir = run_cli("run -n 2 --prompt-cache /tmp", true);
    EXPECT_EQ(dir.status, 1);
    EXPECT_NE(dir.out.find("not a regular file"), std::string::npos) << dir.out;
    const CliResult nowhere = run_cli("run -n 2 --prompt-cache /nonexistent-lctx-dir/cache");
    EXPECT_EQ(nowhere.status, 1);
    EXPECT_EQ(nowhere.out, "");  // refused before anything is generated
    const CliResult alone = run_cli("run -n 2 --prompt-cache-ro", true);
    EXPECT_EQ(alone.status, 1);
    const CliResult empty = run_cli("run -n 2 --prompt-cache ''", true);
    EXPECT_EQ(empty.status, 1);
    EXPECT_NE(empty.out.find("--prompt-cache"), std::string::npos) << empty.out;
    std::filesystem::remove(cache);
}

// --n-probs N (with --json): the N most likely tokens before each generated one. Greedy decoding follows the
// most likely token, so the first of each list is llama.cpp's greedy continuation (fixtures/golden).
TEST(RunOptions, NProbsListsTheMostLikelyTokens) {
    std::ifstream f(std::string(LCTX_FIXTURES_DIR) + "/golden/cases/stories_greedy_0.json");
    const nlohmann::json golden = nlohmann::json::parse(f);
    const nlohmann::json &step = golden["steps"][0];
    const std::vector<int> want = step["generated_tokens"].get<std::vector<int>>();
    ASSERT_GE(want.size(), 16u);
    const nlohmann::json j =
        run_json("-p '" + step["prompt"].get<std::string>() + "' -n 16 --temp 0 -c 256 --n-probs 3");
    ASSERT_FALSE(j.is_null());
    ASSERT_EQ(j["prompt_ids"], step["prompt_tokens"]);
    ASSERT_EQ(j["probs"].size(), 16u);
    for (size_t i = 0; i < 16; ++i) {
        const nlohmann::json &l = j["probs"][i];
        ASSERT_EQ(l.size(), 3u);
        EXPECT_EQ(l[0]["id"], want[i]) << i;
        EXPECT_EQ(l[0]["id"], j["ids"][i]);
        EXPECT_GE(l[0]["prob"].get<double>(), l[1]["prob"].get<double>());
        EXPECT_GE(l[1]["prob"].get<double>(), l[2]["prob"].get<double>());
        EXPECT_TRUE(l[0]["token"].is_string());
    }
    // Every token: the probabilities sum to 1.
    const nlohmann::json all = run_json("-p 'Once upon a time' -n 2 --temp 0 --n-probs 512");
    ASSERT_FALSE(all.is_null());
    for (const nlohmann::json &l : all["probs"]) {
        ASSERT_EQ(l.size(), 512u);
        double sum = 0;
        for (const nlohmann::json &e : l) sum += e["prob"].get<double>();
        EXPECT_NEAR(sum, 1.0, 1e-6);
    }
    EXPECT_EQ(run_cli("run -n 1 --n-probs 3", true).status, 1);  // without --json
    EXPECT_EQ(run_cli("run -n 1 --json --n-probs -1", true).status, 1);
}

// chat's --in-prefix / --in-suffix / --in-prefix-bos go around each typed line's turn, as llama-cli's do:
// with the raw format, the reply is the one run gives for the prefix, the line and the suffix as one prompt.
TEST(ChatOptions, InPrefixAndSuffixAroundTypedLines) {
    auto reply = [](const std::string &args) {
        const CliResult r = run_cli("chat -q --json --temp 0 -n 12 " + args + " <<< 'there was'");
        if (r.status != 0) return std::string("(failed)");
        return nlohmann::json::parse(r.out)["reply"].get<std::string>();
    };
    auto text = [](const std::string &prompt) {
        const nlohmann::json j = run_json("--temp 0 -n 12 -e -p '" + prompt + "'");
        return j.is_null() ? std::string("(failed)") : j["text"].get<std::string>();
    };
    const std::string plain = reply("");
    const std::string pre = reply("--in-prefix 'Once upon a time'");
    EXPECT_NE(pre, plain);
    EXPECT_EQ(pre, text("Once upon a time there was\\n"));
    EXPECT_EQ(reply("--in-prefix 'Once upon a time' --in-suffix a"), text("Once upon a time there was\\n a"));
    EXPECT_EQ(reply("--in-prefix 'Once upon a time' --in-prefix-bos"),
              text("<s>Once upon a time there was\\n"));
}

// The generation options of issue 38 reach chat as they reach run: --rope-freq-base and the --override-kv
// that sets the same value give the same reply, a sampler order that reduces to greedy gives the greedy
// reply, -sp prints special tokens.
TEST(ChatOptions, GenerationOptionsAsInRun) {
    auto reply = [](const std::string &args) {
        const CliResult r =
            run_cli("chat -q --json " + args + " <<< 'Once upon a time there was a little girl'");
        if (r.status != 0) return std::string("(failed)");
        return nlohmann::json::parse(r.out)["reply"].get<std::string>();
    };
    const std::string base = "--temp 0 -n 16 ";
    const std::string greedy = reply(base);
    ASSERT_NE(greedy, "(failed)");
    const std::string b500 = reply(base + "--rope-freq-base 500");
    EXPECT_NE(b500, greedy);
    EXPECT_EQ(reply(base + "--override-kv llama.rope.freq_base=float:500"), b500);
    const std::string flat = "-n 16 -s 7 --temp 100 --top-k 0 --top-p 1 --min-p 0.99 ";
    EXPECT_EQ(reply(flat + "--samplers 'min_p;temperature'"), greedy);
    EXPECT_NE(reply(flat + "--samplers 'temperature;min_p'"), greedy);
    EXPECT_EQ(reply("--temp 0 -n 2 --logit-bias 1+100"), "");
    EXPECT_EQ(reply("--temp 0 -n 2 --logit-bias 1+100 -sp"), "<s><s>");
}

// --chat-template-file with --jinja renders that template (here: "[role] content" lines); without --jinja the
// file is recognized as a built-in format, as --chat-template TEXT is.
TEST(ChatOptions, ChatTemplateFileAndJinja) {
    const std::string tpl = temp_file("tpl.jinja");
    {
        std::ofstream f(tpl);
        f << "{% for m in messages %}[{{ m.role }}] {{ m.content }}\n{% endfor %}"
             "{% if add_generation_prompt %}[assistant]{% endif %}";
    }
    const CliResult j = run_cli("chat -q --temp 0 -n 2 --jinja --chat-template-file " + tpl +
                                    " --verbose-prompt -sys 'Be kind.' <<< 'hello there'",
                                true);
    ASSERT_EQ(j.status, 0) << j.out;
    EXPECT_NE(j.out.find("[prompt] [system] Be kind.\n"), std::string::npos) << j.out;
    EXPECT_NE(j.out.find("[prompt] [user] hello there\n[assistant]"), std::string::npos) << j.out;
    const CliResult detected = run_cli("chat -v --temp 0 -n 2 --chat-template-file " + tpl + " <<< hi", true);
    // Without --jinja a template text must be one of the built-in formats: this one is not, so it is refused,
    // naming the option it came from and the way to render it.
    EXPECT_EQ(detected.status, 1) << detected.out;
    EXPECT_NE(detected.out.find("--chat-template-file"), std::string::npos) << detected.out;
    EXPECT_NE(detected.out.find("--jinja"), std::string::npos) << detected.out;
    {
        std::ofstream f(tpl);
        f << "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}";
    }
    const CliResult chatml = run_cli("chat -v --temp 0 -n 2 --chat-template-file " + tpl + " <<< hi", true);
    EXPECT_NE(chatml.out.find("format chatml"), std::string::npos) << chatml.out;
    const CliResult missing = run_cli("chat --chat-template-file " + tpl + ".missing <<< hi", true);
    EXPECT_EQ(missing.status, 1);
    EXPECT_NE(missing.out.find("--chat-template-file"), std::string::npos) << missing.out;
    EXPECT_EQ(run_cli("chat --chat-template-file '' <<< hi", true).status, 1);
    const CliResult both =
        run_cli("chat --chat-template-file " + tpl + " --chat-template chatml <<< hi", true);
    EXPECT_EQ(both.status, 1);
    std::filesystem::remove(tpl);
}

std::vector<int> token_ids(const std::string &text) {
    const CliResult r = run_cli("tokenize --no-special --json '" + text + "'");
    const nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
    if (r.status != 0 || j.is_discarded()) return {};
    return j["ids"].get<std::vector<int>>();
}

// lctx infill is llama-infill: [BOS] FIM_PRE prefix FIM_SUF suffix FIM_MID (--spm-infill: suffix first). The
// stories model gets FIM tokens through --override-kv (ids 3, 4, 5).
TEST(InfillCommand, FimPromptAsLlamaInfill) {
    const std::string fim =
        "--override-kv tokenizer.ggml.fim_pre_token_id=int:3 --override-kv "
        "tokenizer.ggml.fim_suf_token_id=int:4 --override-kv tokenizer.ggml.fim_mid_token_id=int:5 ";
    const std::vector<int> pre = token_ids("Once upon a time"), suf = token_ids("They were happy.");
    ASSERT_FALSE(pre.empty());
    ASSERT_FALSE(suf.empty());
    auto concat = [](std::initializer_list<std::vector<int>> parts) {
        std::vector<int> out;
        for (const std::vector<int> &p : parts) out.insert(out.end(), p.begin(), p.end());
        return out;
    };
    const CliResult r = run_cli("infill -q --json -n 6 --temp 0 " + fim +
                                "--in-prefix 'Once upon a time' --in-suffix 'They were happy.'");
    ASSERT_EQ(r.status, 0) << r.out;
    const nlohmann::json j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["prompt_ids"].get<std::vector<int>>(), concat({{1, 3}, pre, {4}, suf, {5}}));
    EXPECT_EQ(j["ids"].size(), 6u);
    const CliResult spm = run_cli("infill -q --json -n 6 --temp 0 --spm-infill " + fim +
                                  "--in-prefix 'Once upon a time' --in-suffix 'They were happy.'");
    ASSERT_EQ(spm.status, 0) << spm.out;
    EXPECT_EQ(nlohmann::json::parse(spm.out)["prompt_ids"].get<std::vector<int>>(),
              concat({{1, 4}, suf, {3}, pre, {5}}));
    const CliResult none = run_cli("infill -n 2 --in-prefix a --in-suffix b", true);
    EXPECT_EQ(none.status, 1);
    EXPECT_NE(none.out.find("fill-in-the-middle"), std::string::npos) << none.out;
    const CliResult p = run_cli("infill -n 2 " + fim + "-p hello", true);
    EXPECT_EQ(p.status, 1);
    const CliResult help = run_cli("--help");
    EXPECT_NE(help.out.find("  infill "), std::string::npos) << help.out;
}

// `lctx chat ARGS` with INPUT on standard input, one JSON object per reply (empty when it failed).
std::vector<nlohmann::json> chat_json(const std::string &args, const std::string &input) {
    const CliResult r = run_cli("chat -q --json " + args + " <<< '" + input + "'");
    std::vector<nlohmann::json> out;
    if (r.status != 0) return out;
    size_t at = 0;
    for (size_t end; (end = r.out.find('\n', at)) != std::string::npos; at = end + 1)
        out.push_back(nlohmann::json::parse(r.out.substr(at, end - at), nullptr, false));
    return out;
}

// The token count in a session file's header (magic, version, n_token_count: STATE-FORMAT.md); -1 when
// there is no such file.
int64_t session_token_count(const std::string &path) {
    const std::string b = file_bytes(path);
    if (b.size() < 12) return -1;
    uint32_t n = 0;
    for (int i = 3; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(b[8 + static_cast<size_t>(i)]);
    return n;
}

// chat --prompt-cache: the first prompt (BOS, the system prompt and the first message, as the raw format
// renders them) is saved; a later chat with the same system prompt decodes only what follows the longest
// common prefix of the tokens, and every reply is the one a chat without the cache gives.
TEST(ChatOptions, PromptCacheDecodesOnlyTheNewSuffix) {
    const std::string cache = temp_file("chat.cache");
    std::filesystem::remove(cache);
    const std::string sys = "Once upon a time there was a little girl named Lily.";
    const std::string base = "--temp 0 -n 10 -sys '" + sys + "' ";
    auto reply = [&](const std::string &args, const std::string &input) {
        const std::vector<nlohmann::json> r = chat_json(base + args, input);
        return r.size() == 1 && !r[0].is_discarded() ? r[0] : nlohmann::json();
    };
    const nlohmann::json plain_a = reply("", "She liked"), plain_b = reply("", "One day"),
                         plain_c = reply("", "Lily was sad");
    ASSERT_FALSE(plain_a.is_null());
    ASSERT_FALSE(plain_b.is_null());
    ASSERT_FALSE(plain_c.is_null());
    // BOS and the system prompt's line: what two first prompts with this system prompt share.
    const size_t n_head = 1 + token_ids(sys + "\n").size();
    ASSERT_GT(n_head, 5u);

    // No file yet: the whole first prompt is decoded and saved.
    const nlohmann::json first = reply("--prompt-cache " + cache, "She liked");
    ASSERT_FALSE(first.is_null());
    EXPECT_EQ(first["reply"], plain_a["reply"]);
    const nlohmann::json &c1 = first["prompt_cache"];
    EXPECT_EQ(c1["reused"], 0);
    const int64_t n_first = c1["prompt_tokens"].get<int64_t>();
    EXPECT_EQ(n_first, static_cast<int64_t>(n_head + token_ids("She liked\n").size()));
    EXPECT_EQ(c1["decoded"], n_first);
    EXPECT_EQ(session_token_count(cache), n_first);

    // Another first message: the head is reused, only the message is decoded.
    const nlohmann::json second = reply("--prompt-cache " + cache, "One day");
    ASSERT_FALSE(second.is_null());
    EXPECT_EQ(second["reply"], plain_b["reply"]);
    const nlohmann::json &c2 = second["prompt_cache"];
    const int64_t n_second = c2["prompt_tokens"].get<int64_t>();
    EXPECT_EQ(n_second, static_cast<int64_t>(n_head + token_ids("One day\n").size()));
    EXPECT_EQ(c2["reused"], n_head);
    EXPECT_EQ(c2["decoded"], n_second - static_cast<int64_t>(n_head));
    EXPECT_EQ(session_token_count(cache), n_second);  // saved again: it held less than this prompt

    // The same first message again: all but the last token reused (decoded again for its logits).
    const nlohmann::json again = reply("--prompt-cache " + cache, "One day");
    ASSERT_FALSE(again.is_null());
    EXPECT_EQ(again["reply"], plain_b["reply"]);
    EXPECT_EQ(again["prompt_cache"]["reused"], n_second - 1);
    EXPECT_EQ(again["prompt_cache"]["decoded"], 1);

    // On a terminal-less chat without --json the count is told on stderr.
    const CliResult said = run_cli("chat " + base + "--prompt-cache " + cache + " <<< 'One day'", true);
    ASSERT_EQ(said.status, 0) << said.out;
    EXPECT_NE(said.out.find(std::to_string(n_second - 1) + " of " + std::to_string(n_second) +
                            " prompt tokens reused (1 decoded)"),
              std::string::npos)
        << said.out;

    // Read-only: used, never written.
    const std::string before = file_bytes(cache);
    const nlohmann::json ro = reply("--prompt-cache-ro --prompt-cache " + cache, "Lily was sad");
    ASSERT_FALSE(ro.is_null());
    EXPECT_EQ(ro["reply"], plain_c["reply"]);
    EXPECT_EQ(ro["prompt_cache"]["reused"], n_head);
    EXPECT_EQ(file_bytes(cache), before);

    // A cache of another model, or a damaged file, is refused in one line and left as it is.
    const std::string other = std::string(LCTX_FIXTURES_DIR) + "/golden/models/llama-Q8_0.gguf";
    const CliResult wrong = run_cli("chat -m " + other + " -n 2 --prompt-cache " + cache + " <<< hi", true);
    EXPECT_EQ(wrong.status, 1);
    EXPECT_NE(wrong.out.find("lctx chat: --prompt-cache: cannot use"), std::string::npos) << wrong.out;
    EXPECT_EQ(std::count(wrong.out.begin(), wrong.out.end(), '\n'), 1) << wrong.out;
    EXPECT_EQ(file_bytes(cache), before);
    const std::string damaged = before.substr(0, before.size() / 2);
    {
        std::ofstream f(cache, std::ios::binary | std::ios::trunc);
        f << damaged;
    }
    const CliResult cut = run_cli("chat " + base + "--prompt-cache " + cache + " <<< hi", true);
    EXPECT_EQ(cut.status, 1);
    EXPECT_NE(cut.out.find("lctx chat: --prompt-cache: cannot use"), std::string::npos) << cut.out;
    EXPECT_EQ(file_bytes(cache), damaged);
    std::filesystem::remove(cache);

    for (const std::string &bad : std::vector<std::string>{
             "--prompt-cache-ro", "--prompt-cache-all", "--prompt-cache ''", "--prompt-cache /tmp",
             "--prompt-cache-all --prompt-cache-ro --prompt-cache " + cache}) {
        const CliResult r = run_cli("chat -n 2 " + bad + " <<< hi", true);
        EXPECT_EQ(r.status, 1) << bad;
        EXPECT_NE(r.out.find("--prompt-cache"), std::string::npos) << r.out;
    }
    EXPECT_FALSE(std::filesystem::exists(cache));
}

// chat --prompt-cache-all saves after every turn, with the generated tokens; without it the file keeps the
// first prompt only.
TEST(ChatOptions, PromptCacheAllSavesEveryTurn) {
    const std::string sys = "Once upon a time there was a little girl named Lily.";
    for (const bool all : {false, true}) {
        const std::string cache = temp_file(all ? "chat-all.cache" : "chat-prompt.cache");
        std::filesystem::remove(cache);
        std::vector<std::string> args = {"chat", "-q",   "--json", "--temp",         "0",  "-n",
                                         "6",    "-sys", sys,      "--prompt-cache", cache};
        if (all) args.push_back("--prompt-cache-all");
        CliProcess p(args);
        ASSERT_TRUE(p.started());
        p.write_line("She liked");
        ASSERT_TRUE(p.wait_for("}\n")) << p.output();
        const nlohmann::json r1 = nlohmann::json::parse(p.output().substr(0, p.output().find('\n')));
        const int64_t n_prompt = r1["prompt_cache"]["prompt_tokens"].get<int64_t>();
        const int64_t n_reply = r1["n_tokens"].get<int64_t>();
        ASSERT_GT(n_reply, 0);
        // The cache holds the prompt and the reply's tokens (an end of text is never decoded), saved before
        // the reply is printed.
        const int64_t after_turn1 = n_prompt + n_reply;
        EXPECT_EQ(session_token_count(cache), all ? after_turn1 : n_prompt);
        const size_t from = p.output().size();
        p.write_line("One day");
        ASSERT_TRUE(p.wait_for("}\n", from)) << p.output();
        const nlohmann::json r2 =
            nlohmann::json::parse(p.output().substr(from, p.output().find('\n', from) - from));
        EXPECT_FALSE(r2.contains("prompt_cache"));  // told once, with the first reply
        const int64_t n_reply2 = r2["n_tokens"].get<int64_t>();
        if (all)
            EXPECT_GT(session_token_count(cache), after_turn1 + n_reply2);  // the second message and reply
        else
            EXPECT_EQ(session_token_count(cache), n_prompt);
        p.close_stdin();
        EXPECT_EQ(p.wait_exit(), 0) << p.output();
        std::filesystem::remove(cache);
    }
}

// chat --n-probs N (with --json): each reply carries the N most likely tokens before each sampled one, as
// run --n-probs gives them for the same text (the raw format: the typed line and a newline).
TEST(ChatOptions, NProbsInEachReply) {
    const CliResult c = run_cli(
        "chat -q --json --temp 0 -n 8 --n-probs 3 --in-prefix 'Once upon a time' <<< $'there was\\nShe'");
    ASSERT_EQ(c.status, 0) << c.out;
    const size_t nl = c.out.find('\n');
    const nlohmann::json first = nlohmann::json::parse(c.out.substr(0, nl));
    const nlohmann::json second =
        nlohmann::json::parse(c.out.substr(nl + 1, c.out.find('\n', nl + 1) - nl - 1));
    const nlohmann::json run = run_json("--temp 0 -n 8 --n-probs 3 -e -p 'Once upon a time there was\\n'");
    ASSERT_FALSE(run.is_null());
    ASSERT_EQ(first["n_tokens"], 8);
    ASSERT_EQ(first["probs"].size(), 8u);
    std::string top;
    for (size_t i = 0; i < 8; ++i) {
        const nlohmann::json &l = first["probs"][i], &r = run["probs"][i];
        ASSERT_EQ(l.size(), 3u);
        for (size_t k = 0; k < 3; ++k) {
            EXPECT_EQ(l[k]["id"], r[k]["id"]) << i;
            EXPECT_EQ(l[k]["token"], r[k]["token"]) << i;
            // The same logits up to the summation order of another batch split.
            EXPECT_NEAR(l[k]["prob"].get<double>(), r[k]["prob"].get<double>(), 1e-5) << i;
        }
        top += l[0]["token"].get<std::string>();
    }
    EXPECT_EQ(top, first["reply"]);  // greedy: the most likely token is the one sampled
    EXPECT_EQ(first["reply"], run["text"]);
    // The second reply has lists of its own.
    ASSERT_TRUE(second.contains("probs")) << second;
    EXPECT_GE(second["probs"].size(), second["n_tokens"].get<size_t>());
    EXPECT_EQ(second["probs"][0].size(), 3u);
    EXPECT_FALSE(nlohmann::json::parse(run_cli("chat -q --json --temp 0 -n 2 <<< hi").out).contains("probs"));
    for (const std::string bad : {"--n-probs 3", "--json --n-probs -1", "--json --n-probs 1001"}) {
        const CliResult r = run_cli("chat -n 1 " + bad + " <<< hi", true);
        EXPECT_EQ(r.status, 1) << bad;
        EXPECT_NE(r.out.find("lctx chat: --n-probs"), std::string::npos) << r.out;
    }
}

TEST(GenExtraOptions, RopeOverridesFromOptions) {
    lctx::cli::RopeArgs a;
    lctx::RopeOverrides o;
    ASSERT_EQ(lctx::cli::rope_overrides(a, &o), "");
    EXPECT_EQ(o.scaling_type, -1);  // the model's
    EXPECT_EQ(o.freq_scale, 0.0f);
    a.scaling = "yarn";
    a.scale = 4.0f;
    a.yarn_orig_ctx = 4096;
    ASSERT_EQ(lctx::cli::rope_overrides(a, &o), "");
    EXPECT_EQ(o.scaling_type, 2);
    EXPECT_FLOAT_EQ(o.freq_scale, 0.25f);
    EXPECT_EQ(o.orig_ctx, 4096u);
    a.freq_scale = 0.5f;  // disagrees with --rope-scale 4
    EXPECT_NE(lctx::cli::rope_overrides(a, &o), "");
}

}  // namespace
}  // namespace lctx::testing::cli_options_test
