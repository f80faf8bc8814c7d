#include "model/model.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <optional>

#include "kernels/dot.h"
#include "kernels/interleave.h"
#include "util/error.h"
#include "util/log.h"
#include "vocab/vocab.h"

namespace lctx {

Model::~Model() = default;

namespace {

// Looks up a tensor and checks its shape (ne[0] = columns, ne[1] = rows) and that lctx can compute
// with its type.
class TensorBinder {
  public:
    explicit TensorBinder(const gguf::File &f) : f_(f) {}

    const gguf::TensorInfo *find(const std::string &name) const { return f_.find_tensor(name); }

    kernels::WeightView matrix(const std::string &name, int64_t cols, int64_t rows, bool required = true) {
        const gguf::TensorInfo *t = f_.find_tensor(name);
        if (!t) {
            if (required) throw Error("model is missing tensor '" + name + "'");
            return {};
        }
        if (t->ne.size() > 2 && t->n_elements() != t->ne[0] * t->ne[1])
            throw Error("tensor '" + name + "' has more than 2 dimensions");
        const int64_t ne1 = t->ne.size() > 1 ? t->ne[1] : 1;
        if (t->ne[0] != cols || ne1 != rows)
            throw Error("tensor '" + name + "' has shape [" + std::to_string(t->ne[0]) + ", " +
                        std::to_string(ne1) + "], expected [" + std::to_string(cols) + ", " +
                        std::to_string(rows) + "]");
        if (!type_traits(t->type).has_compute)
            throw Error("tensor '" + name + "' has type " + type_name(t->type) +
                        ", which lctx cannot compute with yet");
        kernels::WeightView w;
        w.type = t->type;
        w.data = f_.tensor_data(*t);
        w.rows = rows;
        w.cols = cols;
        w.row_bytes = row_size(t->type, cols);
        bytes_ += t->nbytes;
        params_ += static_cast<uint64_t>(t->n_elements());
        return w;
    }

    ParamVector vector(const std::string &name, int64_t n, bool required = true) {
        const gguf::TensorInfo *t = f_.find_tensor(name);
        if (!t) {
            if (required) throw Error("model is missing tensor '" + name + "'");
            return {};
        }
        if (t->n_elements() != n)
            throw Error("tensor '" + name + "' has " + std::to_string(t->n_elements()) +
                        " elements, expected " + std::to_string(n));
        if (!type_traits(t->type).has_compute || n % type_traits(t->type).block_size != 0)
            throw Error("tensor '" + name + "' has unsupported type " + type_name(t->type));
        ParamVector v(static_cast<size_t>(n));
        dequantize_row(t->type, f_.tensor_data(*t), v.data(), n);
        bytes_ += t->nbytes;
        params_ += static_cast<uint64_t>(n);
        return v;
    }

    uint64_t bytes() const { return bytes_; }
    uint64_t params() const { return params_; }

  private:
    const gguf::File &f_;
    uint64_t bytes_ = 0;
    uint64_t params_ = 0;
};

}  // namespace

std::unique_ptr<Model> Model::load(const std::string &path, const ModelLoadOptions &opts) {
    std::unique_ptr<Model> m(new Model());
    m->path_ = path;
    m->file_ = gguf::File::open(path);
    m->hparams_ = HParams::load(*m->file_);
    m->vocab_ = Vocab::load(*m->file_);
    if (m->hparams_.n_vocab == 0) m->hparams_.n_vocab = static_cast<uint32_t>(m->vocab_->n_tokens());
    if (opts.progress && !opts.progress(0.0f, opts.progress_user_data))
        throw Error("model loading cancelled");
    if (!opts.vocab_only) {
        m->bind_weights();
        const char *env = std::getenv("LCTX_REPACK");
        if (opts.repack && !(env && std::string(env) == "0")) m->repack_weights(opts, 0.5f);
    }
    if (opts.progress && !opts.progress(1.0f, opts.progress_user_data))
        throw Error("model loading cancelled");
    return m;
}

void Model::bind_weights() {
    const HParams &hp = hparams_;
    TensorBinder b(*file_);
    const int64_t n_embd = hp.n_embd;
    const int64_t n_vocab = hp.n_vocab;
    const int64_t q_dim = static_cast<int64_t>(hp.n_embd_head_k) * hp.n_head;
    const int64_t k_dim = hp.n_embd_k_gqa();
    const int64_t v_dim = hp.n_embd_v_gqa();
    const int64_t o_dim = static_cast<int64_t>(hp.n_embd_head_v) * hp.n_head;

    weights_.token_embd = b.matrix("token_embd.weight", n_embd, n_vocab);
    weights_.output_norm = b.vector("output_norm.weight", n_embd);
    weights_.output = b.matrix("output.weight", n_embd, n_vocab, /*required=*/false);
    if (!weights_.output.data) weights_.output = weights_.token_embd;  // tied embeddings
    weights_.rope_freqs = b.vector("rope_freqs.weight", hp.rope.n_rot / 2, /*required=*/false);

    // Each layer has at least 9 tensors: a block_count the file cannot back is refused before anything is
    // sized from it.
    if (hp.n_layer > file_->tensors().size() / 9)
        throw Error("llama.block_count = " + std::to_string(hp.n_layer) + " but the file holds only " +
                    std::to_string(file_->tensors().size()) + " tensors");
    weights_.layers.resize(hp.n_layer);
    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        LayerWeights &l = weights_.layers[il];
        l.attn_norm = b.vector(p + "attn_norm.weight", n_embd);
        l.wq = b.matrix(p + "attn_q.weight", n_embd, q_dim);
        l.wk = b.matrix(p + "attn_k.weight", n_embd, k_dim);
        l.wv = b.matrix(p + "attn_v.weight", n_embd, v_dim);
        l.wo = b.matrix(p + "attn_output.weight", o_dim, n_embd);
        l.ffn_norm = b.vector(p + "ffn_norm.weight", n_embd);
        l.ffn_gate = b.matrix(p + "ffn_gate.weight", n_embd, hp.n_ff);
        l.ffn_up = b.matrix(p + "ffn_up.weight", n_embd, hp.n_ff);
        l.ffn_down = b.matrix(p + "ffn_down.weight", hp.n_ff, n_embd);
    }
    size_bytes_ = b.bytes();
    n_params_ = b.params();
}

void Model::repack_weights(const ModelLoadOptions &opts, float p0) {
    std::vector<kernels::WeightView *> todo;
    for (LayerWeights &l : weights_.layers)
        for (kernels::WeightView *w : {&l.wq, &l.wk, &l.wv, &l.wo, &l.ffn_gate, &l.ffn_up, &l.ffn_down})
            todo.push_back(w);
    // A tied output matrix is the embedding table: one interleaved copy serves both (a lookup de-interleaves
    // its row). An untied table is only looked up and stays in the mapping.
    const bool tied = weights_.output.data == weights_.token_embd.data;
    todo.push_back(tied ? &weights_.token_embd : &weights_.output);
    std::erase_if(todo, [](const kernels::WeightView *w) {
        return !kernels::can_interleave(w->type, w->rows, w->cols);
    });
    if (todo.empty()) return;
    // One buffer for all copies, laid out in the order a forward pass reads them (todo's order), each
    // copy starting on a cache line.
    // Each matrix in the groups the active level's kernels read.
    auto group_of = [](const kernels::WeightView &w) { return kernels::type_kernels(w.type).group_rows; };
    auto copy_bytes = [&](const kernels::WeightView &w) {
        const size_t n = kernels::interleaved_row_bytes(w.type, w.cols) *
                         static_cast<size_t>(kernels::interleaved_rows(w.rows, group_of(w)));
        return (n + 63) / 64 * 64;
    };
    uint64_t total = 0, done = 0;
    size_t arena = 0;
    for (const kernels::WeightView *w : todo) {
        total += w->row_bytes * w->rows;
        arena += copy_bytes(*w);
    }
    repacked_ = PageBuffer(arena);
    uint8_t *dst = repacked_.data();
    // Each matrix is copied in chunks of whole groups, about 8 MiB of the file each, and a chunk's file pages
    // are released as soon as it is copied: the file's bytes and their copy are resident together for one
    // chunk at most (whole matrices at once held a 58 MiB embedding table twice, SmolLM F16).
    constexpr size_t kChunkBytes = size_t{8} << 20;
    for (kernels::WeightView *w : todo) {
        const size_t bytes = copy_bytes(*w);
        const int group = group_of(*w);
        const size_t copy_row = kernels::interleaved_row_bytes(w->type, w->cols);
        const int64_t chunk_rows =
            std::max<int64_t>(1, static_cast<int64_t>(kChunkBytes / w->row_bytes) / group) * group;
        for (int64_t r0 = 0; r0 < w->rows; r0 += chunk_rows) {
            const int64_t n = std::min(chunk_rows, w->rows - r0);
            const uint8_t *src = w->data + r0 * w->row_bytes;
            kernels::interleave_rows(w->type, group, src, w->row_bytes, n, w->cols, dst + r0 * copy_row);
            file_->release_pages(src, w->row_bytes * static_cast<size_t>(n));
            done += w->row_bytes * static_cast<size_t>(n);
            if (opts.progress &&
                !opts.progress(p0 + (1.0f - p0) * static_cast<float>(done) / static_cast<float>(total),
                               opts.progress_user_data))
                throw Error("model loading cancelled");
        }
        w->data = dst;
        w->row_bytes = copy_row;
        w->group_rows = group;
        dst += bytes;
    }
    if (tied) weights_.output = weights_.token_embd;
}

namespace {

// llama.cpp's names of the llama_ftype values a file declares in general.file_type (a mixture names its
// main type and size, e.g. "Q4_K - Medium"); nullptr for a value without one.
const char *file_type_name(int64_t ftype) {
    switch (ftype) {
        case 0:
            return "all F32";
        case 1:
            return "F16";
        case 2:
            return "Q4_0";
        case 3:
            return "Q4_1";
        case 7:
            return "Q8_0";
        case 8:
            return "Q5_0";
        case 9:
            return "Q5_1";
        case 10:
            return "Q2_K - Medium";
        case 11:
            return "Q3_K - Small";
        case 12:
            return "Q3_K - Medium";
        case 13:
            return "Q3_K - Large";
        case 14:
            return "Q4_K - Small";
        case 15:
            return "Q4_K - Medium";
        case 16:
            return "Q5_K - Small";
        case 17:
            return "Q5_K - Medium";
        case 18:
            return "Q6_K";
        case 21:
            return "Q2_K - Small";
        case 25:
            return "IQ4_NL - 4.5 bpw";
        case 30:
            return "IQ4_XS - 4.25 bpw";
        case 32:
            return "BF16";
        default:
            return nullptr;
    }
}

}  // namespace

std::string Model::description() const {
    // "<arch> <params> <type>" like llama.cpp's model desc: the file's declared type, else the type of the
    // first attention weight
    char buf[128];
    const double p = static_cast<double>(n_params_);
    const char *type = weights_.layers.empty() ? "?" : type_name(weights_.layers[0].wq.type);
    std::optional<int64_t> ftype;
    try {
        ftype = file_->get_int("general.file_type");
    } catch (const std::exception &) {  // present with a non-integer type: ignore it here
    }
    if (ftype)
        if (const char *name = file_type_name(*ftype)) type = name;
    if (p >= 1e9)
        std::snprintf(buf, sizeof buf, "%s %.1fB %s", hparams_.arch_name.c_str(), p / 1e9, type);
    else if (p >= 1e6)
        std::snprintf(buf, sizeof buf, "%s %.0fM %s", hparams_.arch_name.c_str(), p / 1e6, type);
    else
        std::snprintf(buf, sizeof buf, "%s %.0fK %s", hparams_.arch_name.c_str(), p / 1e3, type);
    return buf;
}

}  // namespace lctx
