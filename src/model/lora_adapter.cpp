#include "model/lora_adapter.h"

#include <map>

#include "kernels/dot.h"
#include "model/blocks.h"
#include "model/forward.h"
#include "model/model.h"
#include "model/projection.h"
#include "tensor/types.h"
#include "util/error.h"

namespace lctx {

namespace {

bool ends_with(const std::string &s, const std::string &suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string shape_text(const gguf::TensorInfo &t) {
    std::string s = "[";
    for (size_t i = 0; i < t.ne.size(); ++i) s += (i ? ", " : "") + std::to_string(t.ne[i]);
    return s + "]";
}

// A 2-D adapter tensor as a weight view of ne[1] rows of ne[0] elements, in its stored type.
kernels::WeightView adapter_view(const gguf::File &f, const gguf::TensorInfo &t) {
    if (t.ne.size() > 2 && t.n_elements() != t.ne[0] * t.ne[1])
        throw Error("LoRA tensor '" + t.name + "' has more than 2 dimensions");
    const TypeTraits &tt = type_traits(t.type);
    // has_compute alone also admits activation-only types (q8_1) that no weight kernel reads: such a pair
    // would load and then fail inside the first decode (fuzz_lora found it).
    if (!tt.has_compute || !kernels::has_kernels(t.type) || t.ne[0] % tt.block_size != 0)
        throw Error("LoRA tensor '" + t.name + "' has type " + type_name(t.type) + " with rows of " +
                    std::to_string(t.ne[0]) + " elements, which lctx cannot compute with");
    kernels::WeightView w;
    w.type = t.type;
    w.data = f.tensor_data(t);
    w.cols = t.ne[0];
    w.rows = t.ne.size() > 1 ? t.ne[1] : 1;
    w.row_bytes = row_size(t.type, w.cols);
    return w;
}

}  // namespace

LoraAdapter::~LoraAdapter() = default;

float LoraAdapter::effective_scale(float scale, int64_t rank) const {
    return alpha_ != 0.0f ? scale * alpha_ / static_cast<float>(rank) : scale;
}

std::unique_ptr<LoraAdapter> LoraAdapter::load(const Model &base, const std::string &path) {
    if (base.vocab_only()) throw Error("a vocab-only model has no weights to adapt");
    std::unique_ptr<LoraAdapter> ad(new LoraAdapter(base));
    ad->file_ = gguf::File::open(path);
    const gguf::File &f = *ad->file_;

    const std::string general_type = f.get_string("general.type").value_or("");
    if (general_type != "adapter")
        throw Error("expected general.type to be 'adapter', but got '" + general_type + "'");
    const std::string adapter_type = f.get_string("adapter.type").value_or("");
    if (adapter_type != "lora")
        throw Error("expected adapter.type to be 'lora', but got '" + adapter_type + "'");
    const std::string arch = f.get_string("general.architecture").value_or("");
    const std::string base_arch = base.file().get_string("general.architecture").value_or("");
    if (arch != base_arch)
        throw Error("the adapter's architecture '" + arch + "' is not the model's '" + base_arch + "'");
    ad->alpha_ = static_cast<float>(f.get_float("adapter.lora.alpha").value_or(0.0));

    // Pair the tensors by the base matrix's name (".lora_a" / ".lora_b" cut off); norms are ignored.
    std::map<std::string, std::pair<const gguf::TensorInfo *, const gguf::TensorInfo *>> pairs;
    for (const gguf::TensorInfo &t : f.tensors()) {
        if (ends_with(t.name, "_norm.weight")) continue;
        const bool is_a = ends_with(t.name, ".lora_a"), is_b = ends_with(t.name, ".lora_b");
        if (!is_a && !is_b) throw Error("unexpected tensor '" + t.name + "' (neither .lora_a nor .lora_b)");
        auto &pair = pairs[t.name.substr(0, t.name.size() - 7)];
        (is_a ? pair.first : pair.second) = &t;
    }
    for (const auto &[name, pair] : pairs) {
        const auto [ta, tb] = pair;
        if (!ta || !tb) throw Error("LoRA tensor pair for '" + name + "' is missing one component");
        const gguf::TensorInfo *base_t = base.file().find_tensor(name);
        if (!base_t) throw Error("LoRA base tensor '" + name + "' not found in base model");
        const std::span<const Model::MatrixPart> parts = base.matrix_parts(name);
        if (parts.empty()) throw Error("base tensor '" + name + "' is not a matrix lctx can adapt");
        const kernels::WeightView a = adapter_view(f, *ta), b = adapter_view(f, *tb);
        const int64_t base_cols = base_t->ne[0], base_rows = base_t->ne.size() > 1 ? base_t->ne[1] : 1;
        const bool embd = name == "token_embd.weight";
        // token_embd's A is stored transposed: one row of rank values per token (the lookup reads rows).
        const bool shape_ok = embd ? (base_cols == b.rows && base_rows == a.rows && a.cols == b.cols)
                                   : (base_cols == a.cols && base_rows == b.rows && a.rows == b.cols);
        if (!shape_ok)
            throw Error("tensor '" + name + "' has incorrect shape (hint: maybe wrong base model?): base " +
                        shape_text(*base_t) + ", lora_a " + shape_text(*ta) + ", lora_b " + shape_text(*tb));
        for (const Model::MatrixPart &p : parts) {
            Target tg{a, b};
            if (!embd) tg.b = row_range(b, p.first_row, p.view->rows);  // a fused tensor's rows of B
            ad->targets_.emplace(p.view, tg);
        }
        ++ad->n_pairs_;
    }
    for (const gguf::KeyValue &kv : f.metadata())
        if (kv.value.type != gguf::ValueType::ARRAY)
            ad->meta_.emplace_back(kv.key, kv.value.to_display_string());
    return ad;
}

void add_lora_products(std::span<const LoraActive> lora, std::initializer_list<Projection> outs,
                       const float *x, int64_t ldx, int64_t n_rows, kernels::ThreadPool &pool,
                       ProjectionScratch &scratch) {
    for (const Projection &p : outs) {
        for (const LoraActive &la : lora) {
            const LoraAdapter::Target *tg = la.adapter->find(p.w);
            if (!tg) continue;
            const int64_t rank = tg->a.rows, n_out = tg->b.rows;
            const float s = la.adapter->effective_scale(la.scale, rank);
            grow(scratch.lora_ax, static_cast<size_t>(n_rows * rank));
            grow(scratch.lora_bax, static_cast<size_t>(n_rows * n_out));
            kernels::matmul(tg->a, x, ldx, n_rows, scratch.lora_ax.data(), rank, pool, scratch.mm);
            kernels::matmul(tg->b, scratch.lora_ax.data(), rank, n_rows, scratch.lora_bax.data(), n_out, pool,
                            scratch.mm);
            for (int64_t r = 0; r < n_rows; ++r) {
                float *y = p.y + r * p.ldy;
                const float *d = scratch.lora_bax.data() + r * n_out;
                for (int64_t i = 0; i < n_out; ++i) y[i] += s * d[i];
            }
        }
    }
}

void add_lora_embeddings(std::span<const LoraActive> lora, const kernels::WeightView *token_embd,
                         const ForwardBatch &b, int64_t n_embd, float *x) {
    if (!b.tokens) return;  // input embeddings pass no lookup
    std::vector<float> ax, brow;
    for (const LoraActive &la : lora) {
        const LoraAdapter::Target *tg = la.adapter->find(token_embd);
        if (!tg) continue;
        const int64_t rank = tg->a.cols;
        const float s = la.adapter->effective_scale(la.scale, rank);
        ax.resize(static_cast<size_t>(rank));
        brow.resize(static_cast<size_t>(rank));
        for (int64_t t = 0; t < b.n_tokens; ++t) {
            kernels::weight_row_to_f32(tg->a, b.tokens[t], ax.data());
            float *y = x + t * n_embd;
            for (int64_t i = 0; i < n_embd; ++i) {
                kernels::weight_row_to_f32(tg->b, i, brow.data());
                float d = 0.0f;
                for (int64_t k = 0; k < rank; ++k) d += brow[k] * ax[k];
                y[i] += s * d;
            }
        }
    }
}

}  // namespace lctx
