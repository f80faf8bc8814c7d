// llama_model_quantize and `lctx quantize`: the same bytes as the quantize layer (and so as llama-quantize),
// refusals and bad arguments leave nothing behind, the output loads and generates.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "../cli/cli_run.h"
#include "context/context.h"
#include "gguf/gguf.h"
#include "llama.h"
#include "model/model.h"
#include "quantize/file_types.h"
#include "quantize/model_quantizer.h"

namespace lctx::quantize::api_cli_test {
namespace {

namespace fs = std::filesystem;

std::string golden(const std::string &name) {
    return std::string(LCTX_FIXTURES_DIR) + "/golden/models/" + name;
}

struct TempDir {
    fs::path path;
    explicit TempDir(const std::string &tag) {
        path = fs::temp_directory_path() / ("lctx_quantapi_" + std::to_string(getpid()) + "_" + tag);
        fs::remove_all(path);
        fs::create_directories(path);
    }
    ~TempDir() { fs::remove_all(path); }
    size_t n_entries() const { return static_cast<size_t>(std::distance(fs::directory_iterator(path), {})); }
    std::string file(const std::string &n) const { return (path / n).string(); }
};

std::vector<char> read_all(const std::string &p) {
    std::ifstream in(p, std::ios::binary);
    return std::vector<char>(std::istreambuf_iterator<char>(in), {});
}

TEST(QuantizeCApi, WritesWhatTheLayerWrites) {
    TempDir dir("capi");
    llama_model_quantize_params p = llama_model_quantize_default_params();
    p.ftype = LLAMA_FTYPE_MOSTLY_Q4_K_M;
    p.nthread = 2;
    ASSERT_EQ(llama_model_quantize(golden("llama-F16.gguf").c_str(), dir.file("a.gguf").c_str(), &p), 0u);
    Options o;
    o.ftype = kFtypeQ4_K_M;
    quantize_model(golden("llama-F16.gguf"), dir.file("b.gguf"), o);
    EXPECT_TRUE(read_all(dir.file("a.gguf")) == read_all(dir.file("b.gguf")));
}

TEST(QuantizeCApi, OutputTypeOverridesAndKvOverrides) {
    TempDir dir("capi_kv");
    llama_model_quantize_params p = llama_model_quantize_default_params();
    p.ftype = LLAMA_FTYPE_MOSTLY_Q8_0;
    p.output_tensor_type = GGML_TYPE_Q4_0;
    std::vector<llama_model_kv_override> kv(2);
    kv[0].tag = LLAMA_KV_OVERRIDE_TYPE_STR;
    std::snprintf(kv[0].key, sizeof kv[0].key, "general.name");
    std::snprintf(kv[0].val_str, sizeof kv[0].val_str, "renamed");
    kv[1].key[0] = '\0';
    p.kv_overrides = &kv;
    ASSERT_EQ(llama_model_quantize(golden("llama-F16.gguf").c_str(), dir.file("o.gguf").c_str(), &p), 0u);
    std::unique_ptr<gguf::File> f = gguf::File::open(dir.file("o.gguf"));
    EXPECT_EQ(f->find_tensor("output.weight")->type, GgmlType::Q4_0);
    EXPECT_EQ(f->find_tensor("blk.0.attn_q.weight")->type, GgmlType::Q8_0);
    EXPECT_EQ(f->get_string("general.name"), "renamed");
    EXPECT_EQ(f->get_int("general.file_type"), LLAMA_FTYPE_MOSTLY_Q8_0);
}

TEST(QuantizeCApi, RefusalsReturnOneAndLeaveNothing) {
    TempDir dir("capi_refuse");
    const std::string out = dir.file("x.gguf");
    llama_model_quantize_params p = llama_model_quantize_default_params();
    p.ftype = LLAMA_FTYPE_MOSTLY_Q4_0;  // stories260K's ffn_down rows of 172 do not fit 32-element blocks
    EXPECT_EQ(llama_model_quantize(golden("stories260K.gguf").c_str(), out.c_str(), &p), 1u);
    p.ftype = LLAMA_FTYPE_MOSTLY_Q4_K_M;
    p.pure = true;  // no fallback with --pure: rows of 64 cannot be Q4_K
    EXPECT_EQ(llama_model_quantize(golden("stories260K.gguf").c_str(), out.c_str(), &p), 1u);
    p = llama_model_quantize_default_params();
    p.ftype = LLAMA_FTYPE_MOSTLY_IQ2_XXS;  // a type lctx does not write
    EXPECT_EQ(llama_model_quantize(golden("llama-F16.gguf").c_str(), out.c_str(), &p), 1u);
    p.ftype = LLAMA_FTYPE_MOSTLY_Q6_K;
    p.output_tensor_type = GGML_TYPE_Q8_K;  // an activation type, not one a file holds
    EXPECT_EQ(llama_model_quantize(golden("llama-F16.gguf").c_str(), out.c_str(), &p), 1u);
    p.output_tensor_type = GGML_TYPE_COUNT;
    EXPECT_EQ(llama_model_quantize((dir.path / "missing.gguf").c_str(), out.c_str(), &p), 1u);
    // Already quantized input without allow_requantize.
    EXPECT_EQ(llama_model_quantize(golden("llama-Q4_0.gguf").c_str(), out.c_str(), &p), 1u);
    EXPECT_EQ(llama_model_quantize(golden("llama-F16.gguf").c_str(), nullptr, &p), 1u);
    EXPECT_EQ(dir.n_entries(), 0u);
    // A device is not overwritten.
    EXPECT_EQ(llama_model_quantize(golden("llama-F16.gguf").c_str(), "/dev/null", &p), 1u);
    // An existing output stays as it was when quantizing fails.
    { std::ofstream(out) << "keep me"; }
    p.ftype = LLAMA_FTYPE_MOSTLY_Q5_0;
    EXPECT_EQ(llama_model_quantize(golden("stories260K.gguf").c_str(), out.c_str(), &p), 1u);
    std::ifstream in(out);
    std::string s;
    std::getline(in, s);
    EXPECT_EQ(s, "keep me");
    EXPECT_EQ(dir.n_entries(), 1u);
}

// quantize_output_tensor off (llama-quantize's --leave-output-tensor): output.weight keeps its type and
// bytes, the other matrices are quantized; by the C API and the CLI alike.
TEST(QuantizeCApi, LeaveOutputTensorKeepsItAsItWas) {
    TempDir dir("leave_output");
    llama_model_quantize_params p = llama_model_quantize_default_params();
    p.ftype = LLAMA_FTYPE_MOSTLY_Q8_0;
    p.quantize_output_tensor = false;
    ASSERT_EQ(llama_model_quantize(golden("llama-F16.gguf").c_str(), dir.file("c.gguf").c_str(), &p), 0u);
    const testing::CliResult r = testing::run_cli(
        "quantize --leave-output-tensor " + golden("llama-F16.gguf") + " " + dir.file("l.gguf") + " Q8_0",
        true);
    ASSERT_EQ(r.status, 0) << r.out;
    std::unique_ptr<gguf::File> in = gguf::File::open(golden("llama-F16.gguf"));
    const gguf::TensorInfo *src = in->find_tensor("output.weight");
    ASSERT_NE(src, nullptr);
    ASSERT_EQ(src->type, GgmlType::F16);
    for (const char *name : {"c.gguf", "l.gguf"}) {
        std::unique_ptr<gguf::File> f = gguf::File::open(dir.file(name));
        const gguf::TensorInfo *t = f->find_tensor("output.weight");
        ASSERT_NE(t, nullptr) << name;
        EXPECT_EQ(t->type, GgmlType::F16) << name;
        ASSERT_EQ(t->nbytes, src->nbytes) << name;
        EXPECT_EQ(std::memcmp(f->tensor_data(*t), in->tensor_data(*src), src->nbytes), 0) << name;
        EXPECT_EQ(f->find_tensor("blk.0.attn_q.weight")->type, GgmlType::Q8_0) << name;
    }
}

// Each part of a split model is refused (lctx quantizes whole files: `lctx split --merge` first), by the C
// API and the CLI alike, naming the problem and writing nothing.
TEST(QuantizeCApi, OnePartOfASplitModelIsRefused) {
    TempDir dir("split_in");
    TempDir parts("split_parts");
    const size_t n_tensors = gguf::File::open(golden("llama-F16.gguf"))->tensors().size();
    ASSERT_GE(n_tensors, 2u);
    const testing::CliResult s =
        testing::run_cli("split --split-max-tensors " + std::to_string((n_tensors + 1) / 2) + " " +
                             golden("llama-F16.gguf") + " " + parts.file("m"),
                         true);
    ASSERT_EQ(s.status, 0) << s.out;
    ASSERT_EQ(parts.n_entries(), 2u);
    for (const std::string &part :
         {parts.file("m-00001-of-00002.gguf"), parts.file("m-00002-of-00002.gguf")}) {
        ASSERT_EQ(gguf::File::open(part)->get_int("split.count"), 2) << part;
        llama_model_quantize_params p = llama_model_quantize_default_params();
        p.ftype = LLAMA_FTYPE_MOSTLY_Q8_0;
        EXPECT_EQ(llama_model_quantize(part.c_str(), dir.file("q.gguf").c_str(), &p), 1u) << part;
        const testing::CliResult r =
            testing::run_cli("quantize " + part + " " + dir.file("q.gguf") + " Q8_0", true);
        EXPECT_EQ(r.status, 1) << r.out;
        EXPECT_NE(r.out.find("one part of a split model"), std::string::npos) << r.out;
        EXPECT_EQ(dir.n_entries(), 0u) << part;
    }
}

// only_copy (`COPY`): every tensor as it was, general.file_type the input's.
TEST(QuantizeCApi, OnlyCopyKeepsEveryTensor) {
    TempDir dir("copy");
    llama_model_quantize_params p = llama_model_quantize_default_params();
    p.only_copy = true;
    ASSERT_EQ(llama_model_quantize(golden("llama-Q4_K.gguf").c_str(), dir.file("c.gguf").c_str(), &p), 0u);
    std::unique_ptr<gguf::File> in = gguf::File::open(golden("llama-Q4_K.gguf")),
                                out = gguf::File::open(dir.file("c.gguf"));
    ASSERT_EQ(in->tensors().size(), out->tensors().size());
    for (const gguf::TensorInfo &t : in->tensors()) {
        const gguf::TensorInfo *o = out->find_tensor(t.name);
        ASSERT_NE(o, nullptr) << t.name;
        EXPECT_EQ(o->type, t.type) << t.name;
        ASSERT_EQ(o->nbytes, t.nbytes);
        EXPECT_EQ(std::memcmp(out->tensor_data(*o), in->tensor_data(t), t.nbytes), 0) << t.name;
    }
    EXPECT_EQ(out->get_int("general.file_type"), in->get_int("general.file_type"));
}

TEST(QuantizeCApi, RequantizeWhenAllowed) {
    TempDir dir("capi_req");
    llama_model_quantize_params p = llama_model_quantize_default_params();
    p.ftype = LLAMA_FTYPE_MOSTLY_Q8_0;
    p.allow_requantize = true;
    ASSERT_EQ(llama_model_quantize(golden("llama-Q4_0.gguf").c_str(), dir.file("r.gguf").c_str(), &p), 0u);
    std::unique_ptr<gguf::File> f = gguf::File::open(dir.file("r.gguf"));
    EXPECT_EQ(f->find_tensor("blk.1.ffn_up.weight")->type, GgmlType::Q8_0);
}

// Every file type lctx writes gives a model lctx loads and decodes to finite logits.
TEST(QuantizeOutput, EveryFileTypeLoadsAndDecodes) {
    TempDir dir("load");
    for (const FileType &ft : file_types()) {
        SCOPED_TRACE(ft.name);
        if (ft.id == kFtypeQ2_K_S) continue;  // needs an importance matrix (tested with one elsewhere)
        const std::string out = dir.file(std::string(ft.name) + ".gguf");
        Options o;
        o.ftype = ft.id;
        quantize_model(golden("llama-F16.gguf"), out, o);
        std::unique_ptr<Model> m = Model::load(out);
        ContextParams cp;
        cp.n_ctx = 64;
        Context ctx(*m, cp);
        const int32_t tok = 1;
        Batch b;
        b.n_tokens = 1;
        b.token = &tok;
        ASSERT_EQ(ctx.decode(b), DecodeStatus::Ok);
        const float *logits = ctx.logits_ith(0);
        ASSERT_NE(logits, nullptr);
        for (uint32_t i = 0; i < m->hparams().n_vocab; ++i) ASSERT_TRUE(std::isfinite(logits[i])) << i;
    }
}

TEST(QuantizeCli, WritesTheFileAndReportsSizes) {
    TempDir dir("cli");
    const std::string out = dir.file("q.gguf");
    const testing::CliResult r =
        testing::run_cli("quantize " + golden("llama-F16.gguf") + " " + out + " q4_k_m 2", true);
    ASSERT_EQ(r.status, 0) << r.out;
    EXPECT_NE(r.out.find("output.weight"), std::string::npos) << r.out;  // a line per tensor off a terminal
    EXPECT_NE(r.out.find("q6_K"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("MiB ->"), std::string::npos) << r.out;
    Options o;
    o.ftype = kFtypeQ4_K_M;
    quantize_model(golden("llama-F16.gguf"), dir.file("ref.gguf"), o);
    EXPECT_TRUE(read_all(out) == read_all(dir.file("ref.gguf")));
    // Numeric type ids, the pure and forced-type options.
    const testing::CliResult r2 =
        testing::run_cli("quantize --pure --token-embedding-type Q8_0 " + golden("llama-F16.gguf") + " " +
                             dir.file("p.gguf") + " 2",
                         true);
    ASSERT_EQ(r2.status, 0) << r2.out;
    std::unique_ptr<gguf::File> f = gguf::File::open(dir.file("p.gguf"));
    EXPECT_EQ(f->find_tensor("output.weight")->type, GgmlType::Q4_0);
    EXPECT_EQ(f->find_tensor("token_embd.weight")->type, GgmlType::Q8_0);
    // Metadata overrides, as llama-quantize's --override-kv.
    const testing::CliResult r3 = testing::run_cli(
        "quantize --override-kv general.name=str:small --override-kv "
        "llama.context_length=int:256 " +
            golden("llama-F16.gguf") + " " + dir.file("k.gguf") + " Q8_0",
        true);
    ASSERT_EQ(r3.status, 0) << r3.out;
    std::unique_ptr<gguf::File> k = gguf::File::open(dir.file("k.gguf"));
    EXPECT_EQ(k->get_string("general.name"), "small");
    EXPECT_EQ(k->get_int("llama.context_length"), 256);
}

// --imatrix with llama-imatrix's legacy file: weighted tensors say so, the output names the file.
TEST(QuantizeCli, ImatrixFileIsUsedAndRecorded) {
    TempDir dir("cli_imatrix");
    std::unique_ptr<gguf::File> in = gguf::File::open(golden("llama-F16.gguf"));
    {
        std::ofstream o(dir.file("im.dat"), std::ios::binary);
        auto put = [&](int32_t v) { o.write(reinterpret_cast<const char *>(&v), sizeof v); };
        std::vector<const gguf::TensorInfo *> mats;
        for (const gguf::TensorInfo &t : in->tensors())
            if (t.ne.size() >= 2) mats.push_back(&t);
        put(static_cast<int32_t>(mats.size()));
        for (const gguf::TensorInfo *t : mats) {
            put(static_cast<int32_t>(t->name.size()));
            o.write(t->name.data(), static_cast<std::streamsize>(t->name.size()));
            put(4);  // calls
            put(static_cast<int32_t>(t->ne[0]));
            for (int64_t j = 0; j < t->ne[0]; ++j) {
                const float v = 1.0f + static_cast<float>(j % 13);
                o.write(reinterpret_cast<const char *>(&v), sizeof v);
            }
        }
        put(9);  // chunks, then the dataset's name
        put(8);
        o.write("data.txt", 8);
    }
    const testing::CliResult r =
        testing::run_cli("quantize --imatrix " + dir.file("im.dat") + " " + golden("llama-F16.gguf") + " " +
                             dir.file("q.gguf") + " Q4_K_M",
                         true);
    ASSERT_EQ(r.status, 0) << r.out;
    EXPECT_NE(r.out.find("(imatrix)"), std::string::npos) << r.out;
    std::unique_ptr<gguf::File> f = gguf::File::open(dir.file("q.gguf"));
    EXPECT_EQ(f->get_string("quantize.imatrix.file"), dir.file("im.dat"));
    EXPECT_EQ(f->get_string("quantize.imatrix.dataset"), "data.txt");
    EXPECT_EQ(f->get_int("quantize.imatrix.chunks_count"), 9);
    EXPECT_EQ(f->get_int("quantize.imatrix.entries_count"), 16);
}

TEST(QuantizeCli, BadArgumentsAndRefusalsExitOneLeavingNothing) {
    TempDir dir("cli_bad");
    const std::string out = dir.file("q.gguf");
    for (const std::string &args :
         {"quantize " + golden("llama-F16.gguf") + " " + out + " Q9_9",
          "quantize " + golden("stories260K.gguf") + " " + out + " Q8_0",
          "quantize --output-tensor-type zz " + golden("llama-F16.gguf") + " " + out + " Q8_0",
          "quantize --imatrix " + dir.file("none.dat") + " " + golden("llama-F16.gguf") + " " + out + " Q4_0",
          "quantize --override-kv general.name=text:x " + golden("llama-F16.gguf") + " " + out + " Q8_0",
          "quantize --override-kv a=int:1.5 " + golden("llama-F16.gguf") + " " + out + " Q8_0",
          "quantize " + golden("llama-F16.gguf") + " " + out}) {
        const testing::CliResult r = testing::run_cli(args, true);
        EXPECT_EQ(r.status, 1) << args << "\n" << r.out;
        EXPECT_NE(r.out.find("lctx quantize"), std::string::npos) << r.out;
        EXPECT_EQ(dir.n_entries(), 0u) << args;
    }
}

}  // namespace
}  // namespace lctx::quantize::api_cli_test
