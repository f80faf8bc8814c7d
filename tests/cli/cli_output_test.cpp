// Files and streams the CLI writes: only regular files are written (whole, through a temporary file), a
// device, FIFO or directory named as output is refused and left as it was, a symbolic link is followed,
// and a standard output that cannot be written makes the command fail.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "cli/cli_run.h"

namespace cli_output_test {
namespace {

namespace fs = std::filesystem;
using lctx::testing::run_cli;
using lctx::testing::temp_file;

std::string read_all(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A fresh directory for one test, so that leftover temporary files are seen.
std::string fresh_dir(const std::string &name) {
    const std::string d = temp_file(name);
    fs::remove_all(d);
    fs::create_directory(d);
    return d;
}

// `timeout 120 lctx ARGS` through bash with the output (stdout and stderr, unless ARGS redirect them)
// collected: for redirections run_cli would override.
lctx::testing::CliResult run_shell(const std::string &args) {
    lctx::testing::CliResult r{-1, {}};
    const std::string cmd = "/bin/bash -c 'timeout 120 " + lctx::testing::lctx_bin() + " " + args + "' 2>&1";
    FILE *p = popen(cmd.c_str(), "r");
    if (!p) return r;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
    const int st = pclose(p);
    r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return r;
}

size_t entries(const std::string &dir) {
    size_t n = 0;
    for ([[maybe_unused]] const auto &e : fs::directory_iterator(dir)) ++n;
    return n;
}

TEST(CliOutput, SynthRefusesFifosAndLinksToThem) {
    const std::string dir = fresh_dir("synth_fifo");
    const std::string fifo = dir + "/out.fifo", link = dir + "/link.gguf";
    ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
    fs::create_symlink(fifo, link);
    for (const std::string &target : {fifo, link}) {
        const auto r = run_cli("synth --shape tiny --type Q4_0 -t 2 -o " + target, true);
        EXPECT_EQ(r.status, 1) << target << ": " << r.out;
        EXPECT_NE(r.out.find("not a regular file"), std::string::npos) << r.out;
        EXPECT_TRUE(fs::is_fifo(fs::symlink_status(fifo))) << "the FIFO was replaced";
        EXPECT_TRUE(fs::is_symlink(fs::symlink_status(link))) << "the link was replaced";
        EXPECT_EQ(entries(dir), 2u) << "a temporary file was left behind";
    }
    fs::remove_all(dir);
}

TEST(CliOutput, SynthWritesThroughASymlink) {
    const std::string dir = fresh_dir("synth_link");
    const std::string file = dir + "/model.gguf", link = dir + "/link.gguf";
    std::ofstream(file) << "old";
    fs::create_symlink(file, link);
    const auto r = run_cli("synth --shape tiny --type Q4_0 -t 2 -o " + link, true);
    ASSERT_EQ(r.status, 0) << r.out;
    EXPECT_TRUE(fs::is_symlink(fs::symlink_status(link))) << "the link was replaced by a file";
    EXPECT_EQ(read_all(file).substr(0, 4), "GGUF");
    EXPECT_EQ(entries(dir), 2u);
    fs::remove_all(dir);
}

TEST(CliOutput, ChatSaveRefusesAFifoAndGoesOn) {
    const std::string dir = fresh_dir("chat_fifo");
    const std::string fifo = dir + "/state.fifo", cmds = temp_file("fifo_cmds.txt");
    ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
    std::ofstream(cmds) << "Hello\n/save " << fifo << "\n/quit\n";
    // Opening the FIFO for writing would block with no reader: `timeout` ends that.
    const auto r = run_shell("chat --json -n 4 --temp 0 -q < " + cmds);
    EXPECT_EQ(r.status, 0) << r.out;
    EXPECT_NE(r.out.find("not a regular file"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("[saved"), std::string::npos) << r.out;
    EXPECT_TRUE(fs::is_fifo(fs::symlink_status(fifo)));
    EXPECT_EQ(entries(dir), 1u);
    fs::remove_all(dir);
    fs::remove(cmds);
}

// Every other command that writes a file (split and its merge, quantize, perplexity --plot, run and chat
// --prompt-cache) refuses a FIFO as its output in one line and leaves it as it was, without a temporary file.
TEST(CliOutput, EveryFileWriterRefusesAFifo) {
    const std::string dir = fresh_dir("writers_fifo");
    const std::string model = std::string(LCTX_MODELS_DIR) + "/stories260K.gguf";
    const std::string parts = temp_file("writers_parts"), text = temp_file("writers_text.txt");
    fs::remove_all(parts);
    fs::create_directory(parts);
    ASSERT_EQ(run_cli("split --split-max-tensors 10 " + model + " " + parts + "/m").status, 0);
    std::string first;
    for (const auto &e : fs::directory_iterator(parts))
        if (e.path().string().find("-00001-of-") != std::string::npos) first = e.path().string();
    ASSERT_FALSE(first.empty());
    {
        std::ofstream f(text);
        for (int i = 0; i < 40; ++i) f << "Once upon a time there was a little girl named Lily. ";
    }
    struct Case {
        std::string fifo, args;
    };
    for (const Case &c : {
             Case{dir + "/q.gguf", "quantize " + std::string(LCTX_FIXTURES_DIR) +
                                       "/golden/models/llama-F16.gguf " + dir + "/q.gguf Q8_0"},
             Case{dir + "/s-00001-of-00001.gguf",
                  "split --split-max-tensors 1000 " + model + " " + dir + "/s"},
             Case{dir + "/m.gguf", "split --merge " + first + " " + dir + "/m.gguf"},
             Case{dir + "/p.svg", "perplexity -f " + text + " -c 128 --plot " + dir + "/p.svg"},
             Case{dir + "/r.cache", "run -n 2 -p Hi --prompt-cache-all --prompt-cache " + dir + "/r.cache"},
             Case{dir + "/c.cache", "chat -n 2 --prompt-cache " + dir + "/c.cache <<< Hi"},
         }) {
        ASSERT_EQ(mkfifo(c.fifo.c_str(), 0600), 0) << c.fifo;
        const auto r = run_shell(c.args + (c.args.find("<<<") == std::string::npos ? " </dev/null" : ""));
        EXPECT_EQ(r.status, 1) << c.args << ": " << r.out;
        EXPECT_NE(r.out.find("not a regular file"), std::string::npos) << c.args << ": " << r.out;
        EXPECT_TRUE(fs::is_fifo(fs::symlink_status(c.fifo))) << c.args << ": the FIFO was replaced";
        EXPECT_EQ(entries(dir), 1u) << c.args << ": another file was left";
        fs::remove(c.fifo);
    }
    fs::remove_all(dir);
    fs::remove_all(parts);
    fs::remove(text);
}

// perplexity --plot writes through a symbolic link as every other output does (the link stays, its file gets
// the chart), and refuses a link to nothing rather than replacing it.
TEST(CliOutput, PerplexityPlotWritesThroughASymlink) {
    const std::string dir = fresh_dir("plot_link");
    const std::string file = dir + "/chart.svg", link = dir + "/link.svg", dangling = dir + "/dangling.svg";
    const std::string text = dir + "/text.txt";
    {
        std::ofstream f(text);
        for (int i = 0; i < 40; ++i) f << "Once upon a time there was a little girl named Lily. ";
    }
    std::ofstream(file) << "old";
    fs::create_symlink(file, link);
    const auto r = run_cli("perplexity -f " + text + " -c 128 --plot " + link, true);
    ASSERT_EQ(r.status, 0) << r.out;
    EXPECT_TRUE(fs::is_symlink(fs::symlink_status(link))) << "the link was replaced by a file";
    EXPECT_NE(read_all(file).find("<svg "), std::string::npos) << read_all(file).substr(0, 80);
    fs::create_symlink(dir + "/nowhere/x.svg", dangling);
    const auto d = run_cli("perplexity -f " + text + " -c 128 --plot " + dangling, true);
    EXPECT_EQ(d.status, 1) << d.out;
    EXPECT_NE(d.out.find(dangling), std::string::npos) << d.out;
    EXPECT_TRUE(fs::is_symlink(fs::symlink_status(dangling))) << "the dangling link was replaced";
    EXPECT_EQ(entries(dir), 4u) << "a temporary file was left";
    fs::remove_all(dir);
}

TEST(CliOutput, StdoutWriteErrorsFail) {
    for (const char *cmd : {"run --json -n 4 --temp 0 -p Hello", "tokenize Hello", "--version"}) {
        const auto r = run_shell(std::string(cmd) + " </dev/null >/dev/full");
        EXPECT_EQ(r.status, 1) << cmd << ": " << r.out;
        EXPECT_NE(r.out.find("standard output"), std::string::npos) << cmd << ": " << r.out;
        EXPECT_NE(r.out.find("No space left on device"), std::string::npos) << cmd << ": " << r.out;
    }
}

}  // namespace
}  // namespace cli_output_test
