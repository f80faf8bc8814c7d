#include "model/model.h"

#include <algorithm>
#include <array>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "gguf/gguf_split.h"
#include "kernels/dot.h"
#include "kernels/interleave.h"
#include "model/families.h"
#include "util/error.h"
#include "util/log.h"
#include "vocab/vocab.h"

namespace lctx {

Model::~Model() = default;

std::unique_ptr<Model> Model::load(const std::string &path, const ModelLoadOptions &opts) {
    return load_file(gguf::open_model(path), path, opts);
}

std::unique_ptr<Model> Model::load_parts(const std::vector<std::string> &paths,
                                         const ModelLoadOptions &opts) {
    return load_file(gguf::open_model_parts(paths), paths.empty() ? std::string() : paths[0], opts);
}

std::unique_ptr<Model> Model::load_file(std::unique_ptr<gguf::File> file, const std::string &path,
                                        const ModelLoadOptions &opts) {
    std::unique_ptr<Model> m(new Model());
    m->path_ = path;
    m->vocab_only_ = opts.vocab_only;
    m->file_ = std::move(file);
    if (!opts.overrides.empty()) m->file_->set_overrides(opts.overrides);
    // A vocab-only load reads what b4748's does: the architecture and vocabulary size, the vocabulary, and
    // the file's tensor statistics; it never reports progress.
    m->hparams_ = opts.vocab_only ? HParams::load_vocab_only(*m->file_) : HParams::load(*m->file_);
    m->vocab_ = Vocab::load(*m->file_);
    if (m->hparams_.n_vocab == 0) m->hparams_.n_vocab = static_cast<uint32_t>(m->vocab_->n_tokens());
    m->count_tensors();
    if (opts.vocab_only) return m;
    // A file without tensors (a vocabulary-only GGUF) says so, rather than naming the first tensor it lacks.
    if (m->file_->tensors().empty())
        throw Error("the file has no weights (a vocabulary-only GGUF? it loads with vocab_only)");
    if (opts.progress && !opts.progress(0.0f, opts.progress_user_data))
        throw Error("model loading cancelled");
    m->bind_weights();
    m->index_matrices();
    const char *env = std::getenv("LCTX_REPACK");
    if (opts.repack && !(env && std::string(env) == "0")) m->repack_weights(opts, 0.5f);
    if (opts.progress && !opts.progress(1.0f, opts.progress_user_data))
        throw Error("model loading cancelled");
    return m;
}

namespace {

// llama_ftype of a file whose tensors are mostly of type t (b4748's guess when general.file_type is
// absent); -1 for a type b4748 has no entry for (it then guesses all F32).
int64_t ftype_of_type(GgmlType t) {
    switch (t) {
        case GgmlType::F32:
            return 0;
        case GgmlType::F16:
            return 1;
        case GgmlType::BF16:
            return 32;
        case GgmlType::Q4_0:
            return 2;
        case GgmlType::Q4_1:
            return 3;
        case GgmlType::Q5_0:
            return 8;
        case GgmlType::Q5_1:
            return 9;
        case GgmlType::Q8_0:
            return 7;
        case GgmlType::Q2_K:
            return 10;
        case GgmlType::Q3_K:
            return 12;  // Q3_K - Medium
        case GgmlType::Q4_K:
            return 15;  // Q4_K - Medium
        case GgmlType::Q5_K:
            return 17;  // Q5_K - Medium
        case GgmlType::Q6_K:
            return 18;
        case GgmlType::TQ1_0:
            return 36;
        case GgmlType::TQ2_0:
            return 37;
        case GgmlType::IQ2_XXS:
            return 19;
        case GgmlType::IQ2_XS:
            return 20;
        case GgmlType::IQ2_S:
            return 28;
        case GgmlType::IQ3_XXS:
            return 23;
        case GgmlType::IQ1_S:
            return 24;
        case GgmlType::IQ1_M:
            return 31;
        case GgmlType::IQ4_NL:
            return 25;
        case GgmlType::IQ4_XS:
            return 30;
        case GgmlType::IQ3_S:
            return 26;
        default:
            return -1;
    }
}

constexpr int64_t kFtypeGuessed = 1024;  // LLAMA_FTYPE_GUESSED

// The layer of a "blk.<n>." tensor name, -1 for the others.
int layer_of(const std::string &name) {
    int layer = -1;
    if (name.rfind("blk.", 0) == 0) {
        const char *p = name.c_str() + 4;
        if (*p >= '0' && *p <= '9') {
            long v = 0;
            while (*p >= '0' && *p <= '9' && v < 1000000000) v = v * 10 + (*p++ - '0');
            if (*p == '.') layer = static_cast<int>(v);
        }
    }
    return layer;
}

}  // namespace

void Model::count_tensors() {
    const std::vector<gguf::TensorInfo> &ts = file_->tensors();
    size_bytes_ = 0;
    n_params_ = 0;
    for (const gguf::TensorInfo &t : ts) {
        size_bytes_ += t.nbytes;
        n_params_ += static_cast<uint64_t>(t.n_elements());
    }
    // b4748 visits the tensors by layer, then by name (its weight map's order), and takes the first type to
    // reach a new maximal count.
    std::vector<const gguf::TensorInfo *> order;
    order.reserve(ts.size());
    for (const gguf::TensorInfo &t : ts) order.push_back(&t);
    std::sort(order.begin(), order.end(), [](const gguf::TensorInfo *a, const gguf::TensorInfo *b) {
        const int la = layer_of(a->name), lb = layer_of(b->name);
        return la != lb ? la < lb : a->name < b->name;
    });
    std::vector<uint32_t> n_type(kGgmlTypeCount, 0);
    uint32_t n_max = 0;
    GgmlType type_max = GgmlType::F32;
    for (const gguf::TensorInfo *t : order) {
        const uint32_t n = ++n_type[static_cast<size_t>(t->type)];
        if (n > n_max) {
            n_max = n;
            type_max = t->type;
        }
    }
    const int64_t guess = ftype_of_type(type_max);
    ftype_ = (guess < 0 ? 0 : guess) | kFtypeGuessed;
    try {
        if (const std::optional<int64_t> ft = file_->get_int("general.file_type")) ftype_ = *ft;
    } catch (const std::exception &) {  // present with a non-integer type: keep the guess
    }
}

void Model::bind_weights() {
    const Family *family = find_family(hparams_.arch);
    if (!family || !family->runs())
        throw Error("lctx has no forward pass for the '" + hparams_.arch_name + "' architecture yet");
    WeightBinder b(*file_);
    family->bind(b, hparams_, weights_);
    b.finish();
}

namespace {

// Every matrix field of a layer (empty ones included).
std::array<kernels::WeightView *, 17> layer_matrices(LayerWeights &l) {
    return {&l.wq,       &l.wk,       &l.wv,       &l.wo,     &l.cross_wq, &l.cross_wk,
            &l.cross_wv, &l.cross_wo, &l.ffn_gate, &l.ffn_up, &l.ffn_down, &l.ssm_in_x,
            &l.ssm_in_z, &l.ssm_x_dt, &l.ssm_x_bc, &l.ssm_dt, &l.ssm_out};
}

}  // namespace

void Model::index_matrices() {
    // Each bound view still points into the file's mapping here (repack_weights comes later): the tensor
    // whose bytes hold its first row names it, and the row offset inside that tensor is the part it reads.
    std::vector<const gguf::TensorInfo *> by_data;
    for (const gguf::TensorInfo &t : file_->tensors()) by_data.push_back(&t);
    std::sort(by_data.begin(), by_data.end(), [&](const gguf::TensorInfo *a, const gguf::TensorInfo *b) {
        return file_->tensor_data(*a) < file_->tensor_data(*b);
    });
    auto add = [&](const kernels::WeightView *w) {
        if (!w->data) return;
        auto it = std::upper_bound(
            by_data.begin(), by_data.end(), w->data,
            [&](const uint8_t *p, const gguf::TensorInfo *t) { return p < file_->tensor_data(*t); });
        if (it == by_data.begin()) return;
        const gguf::TensorInfo *t = *(it - 1);
        const size_t off = static_cast<size_t>(w->data - file_->tensor_data(*t));
        if (off >= t->nbytes || w->row_bytes == 0) return;
        matrix_parts_[t->name].push_back({w, static_cast<int64_t>(off / w->row_bytes)});
    };
    // The embedding table is read by the lookup; a tied output matrix is the same table, whose adapter pair
    // (stored transposed for the lookup) does not fit a product, so only the lookup is indexed.
    add(&weights_.token_embd);
    if (weights_.output.data != weights_.token_embd.data) add(&weights_.output);
    add(&weights_.cls);
    add(&weights_.cls_out);
    for (std::vector<LayerWeights> *stack : {&weights_.enc_layers, &weights_.layers})
        for (LayerWeights &l : *stack)
            for (kernels::WeightView *w : layer_matrices(l)) add(w);
}

std::span<const Model::MatrixPart> Model::matrix_parts(const std::string &name) const {
    auto it = matrix_parts_.find(name);
    if (it == matrix_parts_.end()) return {};
    return it->second;
}

void Model::repack_weights(const ModelLoadOptions &opts, float p0) {
    std::vector<kernels::WeightView *> todo;
    // Every matrix a family binds, the row ranges of a fused tensor included (each range is a matrix of its
    // own to the kernels).
    for (std::vector<LayerWeights> *stack : {&weights_.enc_layers, &weights_.layers})
        for (LayerWeights &l : *stack)
            for (kernels::WeightView *w : layer_matrices(l))
                if (w->data) todo.push_back(w);
    // A tied output matrix is the embedding table: one interleaved copy serves both (a lookup de-interleaves
    // its row). An untied table is only looked up and stays in the mapping.
    const bool tied = weights_.output.data == weights_.token_embd.data;
    todo.push_back(tied ? &weights_.token_embd : &weights_.output);
    std::erase_if(todo, [](const kernels::WeightView *w) { return !w->data; });  // bert has no output matrix
    if (todo.empty()) return;
    // One buffer for all copies, laid out in the order a forward pass reads them (todo's order), each
    // copy starting on a cache line.
    // Each matrix in the groups the active level's kernels read. A matrix without an interleaved layout (a
    // type interleave.h gives none, or rows that are not whole blocks of it) is copied as it is: the buffer
    // lies in huge pages, where the file's mapping has 4 KiB ones, and a decoded token's matrix-vector
    // product streams its rows about 10% faster from there (the hardware prefetcher stops at page boundaries;
    // fewer TLB misses).
    auto interleaves = [](const kernels::WeightView &w) {
        return kernels::can_interleave(w.type, w.rows, w.cols);
    };
    auto group_of = [](const kernels::WeightView &w) { return kernels::type_kernels(w.type).group_rows; };
    auto copy_row_bytes = [&](const kernels::WeightView &w) {
        return interleaves(w) ? kernels::interleaved_row_bytes(w.type, w.cols) : w.row_bytes;
    };
    auto copy_bytes = [&](const kernels::WeightView &w) {
        const int64_t rows = interleaves(w) ? kernels::interleaved_rows(w.rows, group_of(w)) : w.rows;
        const size_t n = copy_row_bytes(w) * static_cast<size_t>(rows);
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
        const bool interleave = interleaves(*w);
        const int group = interleave ? group_of(*w) : 0;
        const size_t copy_row = copy_row_bytes(*w);
        const int64_t chunk_rows = std::max<int64_t>(1, static_cast<int64_t>(kChunkBytes / w->row_bytes) /
                                                            std::max(1, group)) *
                                   std::max(1, group);
        for (int64_t r0 = 0; r0 < w->rows; r0 += chunk_rows) {
            const int64_t n = std::min(chunk_rows, w->rows - r0);
            const uint8_t *src = w->data + r0 * w->row_bytes;
            if (interleave)
                kernels::interleave_rows(w->type, group, src, w->row_bytes, n, w->cols, dst + r0 * copy_row);
            else
                std::memcpy(dst + r0 * copy_row, src, w->row_bytes * static_cast<size_t>(n));
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

// b4748's names of the llama_ftype values (llama_model_ftype_name); a guessed type gets " (guessed)".
std::string ftype_name(int64_t ftype) {
    if (ftype & kFtypeGuessed) return ftype_name(ftype & ~kFtypeGuessed) + " (guessed)";
    switch (ftype) {
        case 0:
            return "all F32";
        case 1:
            return "F16";
        case 32:
            return "BF16";
        case 2:
            return "Q4_0";
        case 3:
            return "Q4_1";
        case 8:
            return "Q5_0";
        case 9:
            return "Q5_1";
        case 7:
            return "Q8_0";
        case 10:
            return "Q2_K - Medium";
        case 21:
            return "Q2_K - Small";
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
        case 36:
            return "TQ1_0 - 1.69 bpw ternary";
        case 37:
            return "TQ2_0 - 2.06 bpw ternary";
        case 19:
            return "IQ2_XXS - 2.0625 bpw";
        case 20:
            return "IQ2_XS - 2.3125 bpw";
        case 28:
            return "IQ2_S - 2.5 bpw";
        case 29:
            return "IQ2_M - 2.7 bpw";
        case 22:
            return "IQ3_XS - 3.3 bpw";
        case 23:
            return "IQ3_XXS - 3.0625 bpw";
        case 24:
            return "IQ1_S - 1.5625 bpw";
        case 31:
            return "IQ1_M - 1.75 bpw";
        case 25:
            return "IQ4_NL - 4.5 bpw";
        case 30:
            return "IQ4_XS - 4.25 bpw";
        case 26:
            return "IQ3_S - 3.4375 bpw";
        case 27:
            return "IQ3_S mix - 3.66 bpw";
        default:
            return "unknown, may not work";
    }
}

}  // namespace

std::string Model::description() const {
    if (vocab_only_) return {};
    return hparams_.arch_name + " " + model_size_name(hparams_) + " " + ftype_name(ftype_);
}

}  // namespace lctx
