// The quantization driver (see model_quantizer.h). Every tensor's type is chosen, and every reason to refuse
// found, before the output is created; then the header is written and each tensor converted and streamed.
#include "quantize/model_quantizer.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <thread>

#include "gguf/gguf_header.h"
#include "quantize/file_types.h"
#include "quantize/row_quantizer.h"
#include "quantize/tensor_type_rules.h"
#include "util/atomic_file.h"
#include "util/error.h"

namespace lctx::quantize {

namespace {

// llama.cpp's tensor order: tensors outside the layers first, then layer by layer (blk.N by number), each
// group by name.
int layer_number(const std::string &name) {
    int il = -1;
    return std::sscanf(name.c_str(), "blk.%d.", &il) == 1 ? il : -1;
}

bool file_order(const gguf::TensorInfo *a, const gguf::TensorInfo *b) {
    const int la = layer_number(a->name), lb = layer_number(b->name);
    if (la != lb) return la < lb;
    return a->name < b->name;
}

// ggml_n_dims: the dimensions up to the last one larger than 1.
int n_dims(const std::vector<int64_t> &ne) {
    for (int d = static_cast<int>(ne.size()) - 1; d > 0; --d)
        if (ne[static_cast<size_t>(d)] > 1) return d + 1;
    return 1;
}

int64_t meta_int(const gguf::File &f, const std::string &key, int64_t fallback) {
    if (const gguf::Value *v = f.find(key)) {
        if (v->type == gguf::ValueType::ARRAY) {  // per-layer values: layer 0's
            if (v->array_size() > 0)
                if (auto i = v->array_at(0).as_int()) return *i;
            return fallback;
        }
        if (auto i = v->as_int()) return *i;
    }
    return fallback;
}

ModelFacts model_facts(const gguf::File &f) {
    ModelFacts m;
    m.arch = f.get_string("general.architecture").value_or("");
    const std::string a = m.arch + ".";
    m.n_layer = static_cast<int>(meta_int(f, a + "block_count", 0));
    m.n_head = static_cast<int>(meta_int(f, a + "attention.head_count", 0));
    m.n_head_kv = static_cast<int>(meta_int(f, a + "attention.head_count_kv", m.n_head));
    m.n_expert = static_cast<int>(meta_int(f, a + "expert_count", 0));
    // llama.cpp's LLM_TYPE_70B: an 80-layer llama with grouped-query attention, or an 80-layer qwen2.
    m.is_70b = m.n_layer == 80 && ((m.arch == "llama" && m.n_head != m.n_head_kv) || m.arch == "qwen2");
    for (const gguf::TensorInfo &t : f.tensors()) {
        if (t.name == "output.weight") m.has_output = true;
        if (t.name.find("attn_v.weight") != std::string::npos ||
            t.name.find("attn_qkv.weight") != std::string::npos ||
            t.name.find("attn_kv_b.weight") != std::string::npos)
            ++m.n_attention_wv;
    }
    return m;
}

// The file type of a file that does not say: that of its most common matrix type.
int32_t guess_file_type(const gguf::File &f) {
    std::map<GgmlType, int> count;
    for (const gguf::TensorInfo &t : f.tensors())
        if (n_dims(t.ne) >= 2) ++count[t.type];
    GgmlType most = GgmlType::F32;
    int best = 0;
    for (const auto &[type, n] : count)
        if (n > best) most = type, best = n;
    for (const FileType &ft : file_types())  // the first file type of that base: the plain or _S/_M one
        if (ft.base == most && ft.id != kFtypeQ2_K_S && ft.id != kFtypeQ3_K_S && ft.id != kFtypeQ4_K_S &&
            ft.id != kFtypeQ5_K_S)
            return ft.id;
    return kFtypeAllF32;
}

struct Planned {
    const gguf::TensorInfo *in;
    TypeChoice choice;
    bool convert;
    const float *importance;  // ne[0] * n_matrices weights, or null
    uint64_t bytes_out;
};

void remove_key(std::vector<gguf::KeyValue> &kv, const std::string &key) {
    kv.erase(std::remove_if(kv.begin(), kv.end(), [&](const gguf::KeyValue &e) { return e.key == key; }),
             kv.end());
}

// gguf's set: a key that is set again moves to the end.
void set_key(std::vector<gguf::KeyValue> &kv, const std::string &key, gguf::Value v) {
    remove_key(kv, key);
    kv.push_back(gguf::KeyValue{key, std::move(v)});
}

}  // namespace

Summary quantize_model(const std::string &in_path, const std::string &out_path, const Options &opts) {
    std::unique_ptr<gguf::File> in = gguf::File::open(in_path);
    if (in->get_int("split.count").value_or(1) > 1)
        throw Error(in_path + ": one part of a split model; merge it first (lctx split --merge)");

    int32_t ftype = opts.ftype;
    GgmlType base = GgmlType::F32;
    if (opts.only_copy) {
        ftype = static_cast<int32_t>(in->get_int("general.file_type").value_or(guess_file_type(*in)));
    } else {
        const FileType *ft = find_file_type(opts.ftype);
        if (!ft)
            throw Error("quantize: file type " + std::to_string(opts.ftype) + " is not one lctx can write");
        base = ft->base;
    }
    for (const std::optional<GgmlType> &forced : {opts.output_type, opts.token_embd_type})
        if (forced && !is_storage_type(*forced))
            throw Error(std::string("quantize: lctx does not write tensors of type ") + type_name(*forced));

    std::vector<const gguf::TensorInfo *> order;
    for (const gguf::TensorInfo &t : in->tensors()) order.push_back(&t);
    std::stable_sort(order.begin(), order.end(), file_order);

    // Plan every tensor: its type, whether it is converted, its importance weights. All refusals happen here.
    RuleOptions ro;
    ro.ftype = ftype;
    ro.base = base;
    ro.output_type = opts.output_type;
    ro.token_embd_type = opts.token_embd_type;
    ro.pure = opts.pure;
    ro.has_imatrix = opts.imatrix != nullptr;
    TensorTypeRules rules(model_facts(*in), ro);
    std::vector<Planned> plan;
    for (const gguf::TensorInfo *t : order) {
        Planned p{t, TypeChoice{t->type, t->type, false}, false, nullptr, t->nbytes};
        if (!opts.only_copy && is_quantizable(t->name, n_dims(t->ne), opts.quantize_output_tensor)) {
            p.choice = rules.choose(t->name, t->ne);
            p.convert = p.choice.type != t->type;
        }
        if (p.convert) {
            const std::string where = "quantize: tensor '" + t->name + "': ";
            if (type_traits(t->type).is_quantized && !opts.allow_requantize)
                throw Error(where + "requantizing from " + type_name(t->type) +
                            " is disabled (allow it with --allow-requantize)");
            if (t->type != GgmlType::F32 && !type_traits(t->type).has_compute)
                throw Error(where + "lctx cannot read its type " + type_name(t->type));
            if (!can_quantize(p.choice.type))
                throw Error(where + "lctx cannot quantize to " + type_name(p.choice.type));
            const int64_t n_mat = (t->ne.size() > 2 ? t->ne[2] : 1) * (t->ne.size() > 3 ? t->ne[3] : 1);
            if (opts.imatrix) {
                const auto it = opts.imatrix->find(t->name);
                if (it != opts.imatrix->end()) {
                    if (static_cast<int64_t>(it->second.size()) == t->ne[0] * n_mat) {
                        p.importance = it->second.data();
                    } else if (t->name != "token_embd.weight") {
                        throw Error(where + "importance matrix has " + std::to_string(it->second.size()) +
                                    " values, the tensor " + std::to_string(t->ne[0] * n_mat));
                    }
                }
            }
            if (ftype == kFtypeQ2_K_S && p.choice.type == GgmlType::Q2_K && !p.importance &&
                t->name != "token_embd.weight")
                throw Error(where + "Q2_K_S needs an importance matrix for it (--imatrix)");
            p.bytes_out =
                row_size(p.choice.type, t->ne[0]) * static_cast<uint64_t>(t->n_elements() / t->ne[0]);
        } else {
            p.choice.type = t->type;
        }
        plan.push_back(p);
    }

    std::vector<gguf::KeyValue> kv = in->metadata();
    for (const char *k : {"split.no", "split.count", "split.tensors.count"}) remove_key(kv, k);
    set_key(kv, "general.quantization_version", gguf::Value::from_uint(gguf::ValueType::UINT32, 2));
    set_key(kv, "general.file_type",
            gguf::Value::from_uint(gguf::ValueType::UINT32, static_cast<uint32_t>(ftype)));
    for (const gguf::KeyValue &o : opts.kv_overrides) set_key(kv, o.key, o.value);
    size_t alignment = gguf::kDefaultAlignment;
    for (const gguf::KeyValue &e : kv)
        if (e.key == "general.alignment") {
            const std::optional<int64_t> a = e.value.as_int();
            if (!a || *a <= 0 || (*a & (*a - 1)) != 0)
                throw Error("quantize: general.alignment must be a non-zero power of two");
            alignment = static_cast<size_t>(*a);
        }

    std::vector<gguf::TensorEntry> dir;
    for (const Planned &p : plan)
        dir.push_back(gguf::TensorEntry{p.in->name, p.choice.type, p.in->ne, p.bytes_out});
    const std::vector<uint8_t> header = gguf::header_bytes(kv, dir, alignment);

    const int n_threads = opts.n_threads > 0
                              ? opts.n_threads
                              : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    Summary sum;
    sum.n_tensors = static_cast<int>(plan.size());
    sum.n_fallback = rules.n_fallback();
    sum.n_block_fit = rules.n_block_fit();
    AtomicFile out(out_path);  // whole or not at all: a refusal or failure leaves the target as it was
    out.write(header.data(), header.size());
    sum.file_bytes = header.size();
    std::vector<uint8_t> q;
    for (size_t i = 0; i < plan.size(); ++i) {
        const Planned &p = plan[i];
        const gguf::TensorInfo &t = *p.in;
        TensorReport rep;
        rep.index = static_cast<int>(i + 1);
        rep.count = sum.n_tensors;
        rep.name = t.name;
        rep.ne = t.ne;
        rep.from = t.type;
        rep.to = p.choice.type;
        rep.wanted = p.choice.wanted;
        rep.converted = p.convert;
        rep.weighted = p.importance && takes_importance(p.choice.type);
        rep.bytes_in = t.nbytes;
        if (opts.on_tensor) opts.on_tensor(rep, false);
        const uint8_t *src = in->tensor_data(t);
        if (!p.convert) {
            out.write(src, t.nbytes);
        } else {
            const int64_t ne0 = t.ne[0];
            const int64_t rows = t.ne.size() > 1 ? t.ne[1] : 1;
            const int64_t n_mat = t.n_elements() / (ne0 * rows);
            q.resize(p.bytes_out);
            const size_t in_mat = row_size(t.type, ne0) * static_cast<size_t>(rows);
            const size_t out_mat = row_size(p.choice.type, ne0) * static_cast<size_t>(rows);
            for (int64_t m = 0; m < n_mat; ++m)  // experts one by one: each has its own importance weights
                convert_rows(p.choice.type, t.type, src + m * in_mat, q.data() + m * out_mat, rows, ne0,
                             p.importance ? p.importance + m * ne0 : nullptr, n_threads);
            out.write(q.data(), q.size());
        }
        const uint64_t n = p.convert ? p.bytes_out : t.nbytes;
        const uint64_t padded = (n + alignment - 1) / alignment * alignment;
        out.write_zeros(padded - n);
        sum.file_bytes += padded;
        sum.bytes_in += t.nbytes;
        sum.bytes_out += n;
        rep.bytes_out = n;
        if (opts.on_tensor) opts.on_tensor(rep, true);
    }
    out.commit();
    return sum;
}

}  // namespace lctx::quantize
