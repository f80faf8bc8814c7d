#include "context/state.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <memory>
#include <utility>

#include "context/context.h"
#include "util/error.h"

namespace lctx {

namespace {

constexpr uint32_t kSessionMagic = 0x6767736eu;  // 'ggsn'
constexpr uint32_t kSessionVersion = 9;
constexpr uint32_t kSeqMagic = 0x67677371u;  // 'ggsq'
constexpr uint32_t kSeqVersion = 2;

// ---- reading: every field is checked against the bytes that remain ----

class Reader {
  public:
    Reader(const uint8_t *data, size_t size) : data_(data), size_(size) {}

    size_t pos() const { return pos_; }
    size_t remaining() const { return size_ - pos_; }

    // A view of the next n bytes (valid as long as the caller's buffer).
    const uint8_t *take(size_t n, const char *field) {
        if (n > remaining())
            throw Error("state data is truncated: " + std::string(field) + " needs " + std::to_string(n) +
                        " bytes at offset " + std::to_string(pos_) + ", only " + std::to_string(remaining()) +
                        " remain");
        const uint8_t *p = data_ + pos_;
        pos_ += n;
        return p;
    }
    template <typename T>
    T get(const char *field) {
        T v;
        std::memcpy(&v, take(sizeof v, field), sizeof v);  // little-endian, unaligned
        return v;
    }

  private:
    const uint8_t *data_;
    size_t size_;
    size_t pos_ = 0;
};

size_t checked_mul(size_t a, size_t b, const char *field) {
    if (a != 0 && b > std::numeric_limits<size_t>::max() / a)
        throw Error("state data is malformed: the size of " + std::string(field) + " overflows");
    return a * b;
}

std::string str(uint64_t v) {
    return std::to_string(v);
}

// ---- staged loads: everything parsed and checked, nothing applied yet ----

struct StagedOutputs {
    int32_t n_outputs = 0;
    std::vector<int32_t> output_ids;  // [n_batch] batch index -> output row, -1 when none
    std::vector<float> logits;        // [n_outputs][n_vocab] or empty
    std::vector<float> embd;          // [n_outputs][n_embd] or empty
};

struct StagedKv {
    uint32_t cell_count = 0;
    std::vector<int32_t> pos;        // [cell_count]
    std::vector<SeqSet> seq;         // [cell_count] (whole-context restore only)
    std::vector<const uint8_t *> k;  // [n_layer] -> [cell_count][k_row_bytes] in the caller's buffer
    std::vector<const uint8_t *> v;  // [n_layer] -> rows like K, or [n_embd_v][cell_count] elements
};

StagedOutputs stage_outputs(Reader &r, const Context &ctx) {
    const HParams &hp = ctx.model().hparams();
    const uint32_t n_batch = ctx.params().n_batch;
    StagedOutputs out;

    const uint32_t n_outputs = r.get<uint32_t>("n_outputs");
    if (n_outputs > n_batch)
        throw Error("state has " + str(n_outputs) +
                    " outputs, more than this context's n_batch = " + str(n_batch));
    out.n_outputs = static_cast<int32_t>(n_outputs);
    out.output_ids.assign(n_batch, -1);
    const uint8_t *pos = r.take(checked_mul(n_outputs, sizeof(int32_t), "output_pos"), "output_pos");
    for (uint32_t i = 0; i < n_outputs; ++i) {
        int32_t id;
        std::memcpy(&id, pos + i * sizeof(int32_t), sizeof id);
        if (id < 0 || static_cast<uint32_t>(id) >= n_batch)
            throw Error("state output " + str(i) + " belongs to batch index " + std::to_string(id) +
                        ", outside [0, n_batch = " + str(n_batch) + ")");
        if (out.output_ids[id] >= 0)
            throw Error("state maps two outputs to batch index " + std::to_string(id));
        out.output_ids[id] = static_cast<int32_t>(i);
    }

    // Logits and embeddings are either absent or one full row per output.
    auto floats = [&](const char *field, uint64_t row, std::vector<float> &dst) {
        const uint64_t count = r.get<uint64_t>(field);
        const uint64_t full = static_cast<uint64_t>(n_outputs) * row;
        if (count != 0 && count != full)
            throw Error(std::string("state ") + field + " is " + str(count) + " floats; expected 0 or " +
                        str(full) + " (" + str(n_outputs) + " outputs of " + str(row) + ")");
        const uint8_t *src = r.take(checked_mul(count, sizeof(float), field), field);
        dst.resize(count);
        if (count) std::memcpy(dst.data(), src, count * sizeof(float));
    };
    floats("logits", hp.n_vocab, out.logits);
    floats("embeddings", hp.n_embd, out.embd);
    return out;
}

// dest < 0: whole-context layout (cells carry their sequence ids); otherwise the sequence layout.
StagedKv stage_kv(Reader &r, const Context &ctx, int32_t dest) {
    const KvCache &kv = ctx.kv();
    const KvView &view = kv.view();
    // The ids a cell can hold, as decode accepts them: any below kMaxSeqs, or below n_seq_max for recurrent
    // state (one cell per sequence).
    const uint32_t n_ids = kv.recurrent() ? kv.size() : kMaxSeqs;
    StagedKv st;

    st.cell_count = r.get<uint32_t>("cell_count");
    if (st.cell_count > kv.size())
        throw Error("state holds " + str(st.cell_count) + " KV cells, more than this context's KV size " +
                    str(kv.size()));
    if (kv.recurrent() && dest >= 0 && st.cell_count > 1)
        throw Error("sequence state holds " + str(st.cell_count) +
                    " cells; a recurrent model's sequence has one state cell");
    st.pos.resize(st.cell_count);
    if (dest < 0) st.seq.resize(st.cell_count);
    for (uint32_t i = 0; i < st.cell_count; ++i) {
        const int32_t pos = r.get<int32_t>("cell pos");
        if (pos < 0)
            throw Error("state KV cell " + str(i) + " has a negative position " + std::to_string(pos));
        st.pos[i] = pos;
        const uint32_t n_seq_id = r.get<uint32_t>("cell n_seq_id");
        if (dest >= 0) {
            if (n_seq_id != 0)
                throw Error("sequence state KV cell " + str(i) + " lists " + str(n_seq_id) +
                            " sequence ids; a sequence file must list none");
            continue;
        }
        if (n_seq_id == 0 || n_seq_id > n_ids)
            throw Error("state KV cell " + str(i) + " lists " + str(n_seq_id) + " sequence ids (must be 1.." +
                        str(n_ids) + ")");
        for (uint32_t s = 0; s < n_seq_id; ++s) {
            const int32_t id = r.get<int32_t>("cell seq_id");
            if (id < 0 || static_cast<uint32_t>(id) >= n_ids)
                throw Error("state KV cell " + str(i) + " belongs to sequence " + std::to_string(id) +
                            ", outside [0, " + str(n_ids) + ")");
            if (kv.recurrent())  // a sequence's state is in one cell
                for (uint32_t j = 0; j < i; ++j)
                    if (st.seq[j].test(id))
                        throw Error("state cells " + str(j) + " and " + str(i) +
                                    " both hold the state of sequence " + std::to_string(id));
            st.seq[i].set(id);
        }
    }

    const uint32_t v_trans = r.get<uint32_t>("v_trans");
    if (v_trans != (view.v_trans ? 1u : 0u))
        throw Error("state stores V " + std::string(v_trans ? "transposed" : "by rows") +
                    " but this context stores it " + (view.v_trans ? "transposed" : "by rows"));
    const uint32_t n_layer = r.get<uint32_t>("n_layer");
    if (n_layer != kv.n_layer())
        throw Error("state has " + str(n_layer) + " layers, this model has " + str(kv.n_layer()));

    // A state keeps the cache's bytes as they are: it loads only into a context of the same cache types.
    auto check_type = [](int32_t got, GgmlType want, const char *what, uint32_t il) {
        if (got != static_cast<int32_t>(want))
            throw Error("state " + std::string(what) + " cache of layer " + str(il) + " has type " +
                        (type_is_known(got) ? std::string(type_name(static_cast<GgmlType>(got))) + " " : "") +
                        "(id " + std::to_string(got) + "), this context uses " + type_name(want) + " (id " +
                        std::to_string(static_cast<int32_t>(want)) +
                        "): create the context with the state's " + what + " cache type");
    };
    st.k.resize(n_layer);
    for (uint32_t il = 0; il < n_layer; ++il) {
        check_type(r.get<int32_t>("k_type"), view.type_k, "K", il);
        const uint64_t row = r.get<uint64_t>("k_row_size");
        if (row != view.k_row_bytes)
            throw Error("state K row of layer " + str(il) + " is " + str(row) + " bytes, this context's is " +
                        str(view.k_row_bytes));
        st.k[il] = r.take(checked_mul(st.cell_count, row, "K"), "K rows");
    }
    st.v.resize(n_layer);
    for (uint32_t il = 0; il < n_layer; ++il) {
        check_type(r.get<int32_t>("v_type"), view.type_v, "V", il);
        if (!view.v_trans) {
            const uint64_t row = r.get<uint64_t>("v_row_size");
            if (row != view.v_row_bytes)
                throw Error("state V row of layer " + str(il) + " is " + str(row) +
                            " bytes, this context's is " + str(view.v_row_bytes));
            st.v[il] = r.take(checked_mul(st.cell_count, row, "V"), "V rows");
        } else {
            const uint32_t elem = r.get<uint32_t>("v_element_size");
            if (elem != view.v_elem_bytes)
                throw Error("state V element of layer " + str(il) + " is " + str(elem) +
                            " bytes, this context's is " + str(view.v_elem_bytes));
            const uint32_t n_embd_v = r.get<uint32_t>("n_embd_v_gqa");
            if (n_embd_v != kv.n_embd_v())
                throw Error("state V of layer " + str(il) + " has " + str(n_embd_v) +
                            " channels, this model has " + str(kv.n_embd_v()));
            st.v[il] = r.take(checked_mul(checked_mul(n_embd_v, st.cell_count, "V"), elem, "V"), "V columns");
        }
    }
    return st;
}

// Writes the staged K and V of cell i into KV cell `cell`.
void put_cell_kv(const KvCache &kv, const StagedKv &st, uint32_t i, uint32_t cell) {
    const KvView &view = kv.view();
    for (uint32_t il = 0; il < kv.n_layer(); ++il) {
        std::memcpy(view.k[il] + cell * view.k_row_bytes, st.k[il] + i * view.k_row_bytes, view.k_row_bytes);
        if (view.v_trans) {
            const size_t e = view.v_elem_bytes;
            for (uint32_t ch = 0; ch < kv.n_embd_v(); ++ch)
                std::memcpy(view.v[il] + (static_cast<size_t>(ch) * view.size + cell) * e,
                            st.v[il] + (static_cast<size_t>(ch) * st.cell_count + i) * e, e);
        } else {
            std::memcpy(view.v[il] + cell * view.v_row_bytes, st.v[il] + i * view.v_row_bytes,
                        view.v_row_bytes);
        }
    }
}

template <typename T>
void put(StateWriter &w, T v) {
    w.write(&v, sizeof v);
}

std::vector<uint8_t> read_whole_file(const std::string &path) {
    std::unique_ptr<std::FILE, int (*)(std::FILE *)> f(std::fopen(path.c_str(), "rb"), std::fclose);
    if (!f) throw Error("cannot open state file " + path + ": " + std::strerror(errno));
    // Only regular files: a device or a pipe could stream without end.
    struct stat st;
    if (fstat(fileno(f.get()), &st) != 0 || !S_ISREG(st.st_mode))
        throw Error("state file " + path + " is not a regular file");
    std::vector<uint8_t> bytes;
    bytes.reserve(static_cast<size_t>(st.st_size));
    uint8_t buf[1 << 16];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f.get())) > 0) bytes.insert(bytes.end(), buf, buf + n);
    if (std::ferror(f.get())) throw Error("cannot read state file " + path);
    return bytes;
}

// Magic, version and tokens of a state file; returns the tokens.
std::vector<int32_t> read_file_header(Reader &r, const std::string &path, uint32_t magic, uint32_t version,
                                      size_t token_capacity) {
    const uint32_t got_magic = r.get<uint32_t>("magic");
    const uint32_t got_version = r.get<uint32_t>("version");
    if (got_magic != magic || got_version != version) {
        char buf[160];
        std::snprintf(buf, sizeof buf, "magic 0x%08x version %u, expected magic 0x%08x version %u", got_magic,
                      got_version, magic, version);
        throw Error(path + " is not a state file of this kind: " + buf);
    }
    const uint32_t n_tokens = r.get<uint32_t>("n_token_count");
    if (n_tokens > token_capacity)
        throw Error(path + " holds " + str(n_tokens) + " tokens, more than the capacity of " +
                    str(token_capacity));
    std::vector<int32_t> tokens(n_tokens);
    const uint8_t *src = r.take(checked_mul(n_tokens, sizeof(int32_t), "tokens"), "tokens");
    if (n_tokens) std::memcpy(tokens.data(), src, n_tokens * sizeof(int32_t));
    return tokens;
}

void write_file_header(StateWriter &w, uint32_t magic, uint32_t version, const int32_t *tokens,
                       size_t n_tokens) {
    if (n_tokens > std::numeric_limits<uint32_t>::max()) throw Error("too many tokens for a state file");
    if (n_tokens && !tokens) throw Error("tokens is null but n_token_count is " + str(n_tokens));
    put<uint32_t>(w, magic);
    put<uint32_t>(w, version);
    put<uint32_t>(w, static_cast<uint32_t>(n_tokens));
    if (n_tokens) w.write(tokens, n_tokens * sizeof(int32_t));
}

void check_seq(const Context &ctx, int32_t seq) {
    // A recurrent model has a state cell for each id below n_seq_max only.
    const int32_t n_ids = ctx.kv().recurrent() ? static_cast<int32_t>(ctx.kv().size()) : kMaxSeqs;
    if (seq < 0 || seq >= n_ids)
        throw Error("sequence id " + std::to_string(seq) + " is outside [0, " + std::to_string(n_ids) + ")");
}

// Keys must match their positions before they are saved (a shift re-rotates them lazily).
void settle_shift(Context &ctx) {
    ctx.kv().apply_shift(ctx.model());
}

}  // namespace

// ---- writers ----

void BufferStateWriter::write(const void *src, size_t n) {
    if (n > capacity_ - written_)
        throw Error("the state does not fit in the buffer of " + str(capacity_) + " bytes");
    if (n) std::memcpy(dst_ + written_, src, n);
    written_ += n;
}

void FileStateWriter::write(const void *src, size_t n) {
    f_.write(src, n);
    written_ += n;
}

// ---- saving ----

void ContextState::write_kv(Context &ctx, StateWriter &w, int32_t seq) {
    const KvCache &kv = ctx.kv();
    const KvView &view = kv.view();
    const std::vector<KvCell> &cells = kv.cells();

    // Cells to save, as maximal runs [begin, end) of consecutive cells.
    std::vector<std::pair<uint32_t, uint32_t>> runs;
    uint32_t cell_count = 0;
    for (uint32_t i = 0; i < kv.size(); ++i) {
        const KvCell &c = cells[i];
        const bool take = c.pos >= 0 && (seq < 0 ? !c.empty() : c.seq.test(seq));
        if (!take) continue;
        if (!runs.empty() && runs.back().second == i)
            runs.back().second++;
        else
            runs.emplace_back(i, i + 1);
        cell_count++;
    }

    put<uint32_t>(w, cell_count);
    for (const auto &[b, e] : runs) {
        for (uint32_t i = b; i < e; ++i) {
            put<int32_t>(w, cells[i].pos);
            if (seq >= 0) {
                put<uint32_t>(w, 0);
                continue;
            }
            put<uint32_t>(w, static_cast<uint32_t>(cells[i].seq.count()));
            for (int32_t s = 0; s < kMaxSeqs; ++s)
                if (cells[i].seq.test(s)) put<int32_t>(w, s);
        }
    }

    put<uint32_t>(w, view.v_trans ? 1 : 0);
    put<uint32_t>(w, kv.n_layer());
    for (uint32_t il = 0; il < kv.n_layer(); ++il) {
        put<int32_t>(w, static_cast<int32_t>(view.type_k));
        put<uint64_t>(w, view.k_row_bytes);
        for (const auto &[b, e] : runs)
            w.write(view.k[il] + b * view.k_row_bytes, (e - b) * view.k_row_bytes);
    }
    for (uint32_t il = 0; il < kv.n_layer(); ++il) {
        put<int32_t>(w, static_cast<int32_t>(view.type_v));
        if (!view.v_trans) {
            put<uint64_t>(w, view.v_row_bytes);
            for (const auto &[b, e] : runs)
                w.write(view.v[il] + b * view.v_row_bytes, (e - b) * view.v_row_bytes);
            continue;
        }
        const size_t elem = view.v_elem_bytes;
        put<uint32_t>(w, static_cast<uint32_t>(elem));
        put<uint32_t>(w, kv.n_embd_v());
        for (uint32_t ch = 0; ch < kv.n_embd_v(); ++ch) {
            const uint8_t *row = view.v[il] + static_cast<size_t>(ch) * view.size * elem;  // one channel
            for (const auto &[b, e] : runs) w.write(row + b * elem, (e - b) * elem);
        }
    }
}

void ContextState::write(Context &ctx, StateWriter &w) {
    settle_shift(ctx);
    const HParams &hp = ctx.model().hparams();
    const ContextParams &p = ctx.params();

    put<uint32_t>(w, static_cast<uint32_t>(hp.arch_name.size()));
    w.write(hp.arch_name.data(), hp.arch_name.size());

    // Output map: for output row r, the batch index it belongs to.
    const uint32_t n_outputs = static_cast<uint32_t>(std::max(ctx.n_outputs_, 0));
    std::vector<int32_t> output_pos(n_outputs, 0);
    for (size_t i = 0; i < ctx.output_ids_.size(); ++i) {
        const int32_t row = ctx.output_ids_[i];
        if (row >= 0 && static_cast<uint32_t>(row) < n_outputs) output_pos[row] = static_cast<int32_t>(i);
    }
    put<uint32_t>(w, n_outputs);
    if (n_outputs) w.write(output_pos.data(), n_outputs * sizeof(int32_t));

    // Logits exist only outside embeddings mode; per-token embeddings only without pooling (as upstream).
    const uint64_t n_logits =
        p.embeddings ? 0
                     : std::min<uint64_t>(ctx.logits_.size(), static_cast<uint64_t>(n_outputs) * hp.n_vocab);
    put<uint64_t>(w, n_logits);
    if (n_logits) w.write(ctx.logits_.data(), n_logits * sizeof(float));
    const bool has_embd = p.embeddings && p.pooling == PoolingType::None;
    const uint64_t n_embd =
        has_embd ? std::min<uint64_t>(ctx.embd_.size(), static_cast<uint64_t>(n_outputs) * hp.n_embd) : 0;
    put<uint64_t>(w, n_embd);
    if (n_embd) w.write(ctx.embd_.data(), n_embd * sizeof(float));

    write_kv(ctx, w, -1);
}

size_t ContextState::size(Context &ctx) {
    CountingStateWriter w;
    write(ctx, w);
    return w.written();
}

void ContextState::write_seq(Context &ctx, StateWriter &w, int32_t seq) {
    check_seq(ctx, seq);
    settle_shift(ctx);
    write_kv(ctx, w, seq);
}

size_t ContextState::size_seq(Context &ctx, int32_t seq) {
    CountingStateWriter w;
    write_seq(ctx, w, seq);
    return w.written();
}

// ---- loading ----

size_t ContextState::read(Context &ctx, const uint8_t *src, size_t size, bool exact) {
    if (!src && size) throw Error("state source is null");
    Reader r(src, size);
    const std::string &arch = ctx.model().hparams().arch_name;
    const uint32_t arch_len = r.get<uint32_t>("arch_len");
    const uint8_t *arch_bytes = r.take(arch_len, "architecture name");
    const std::string got(reinterpret_cast<const char *>(arch_bytes), arch_len);
    if (got != arch)
        throw Error("state was saved for architecture '" + got + "', this model is '" + arch + "'");
    StagedOutputs out = stage_outputs(r, ctx);
    StagedKv st = stage_kv(r, ctx, -1);
    if (exact && r.remaining() != 0)
        throw Error("state data has " + str(r.remaining()) + " unread bytes after the KV cache");

    // ---- apply (nothing below can fail) ----
    ctx.logits_.swap(out.logits);
    ctx.embd_.swap(out.embd);
    ctx.output_ids_.swap(out.output_ids);
    ctx.n_outputs_ = out.n_outputs;

    KvCache &kv = ctx.kv();
    kv.clear();
    std::vector<KvCell> &cells = kv.mutable_cells();
    for (uint32_t i = 0; i < st.cell_count; ++i) {
        cells[i].pos = st.pos[i];
        cells[i].delta = 0;
        cells[i].seq = st.seq[i];
    }
    kv.set_head_used(0, st.cell_count);
    const KvView &view = kv.view();
    const size_t n = st.cell_count;
    for (uint32_t il = 0; il < kv.n_layer() && n; ++il) {
        std::memcpy(view.k[il], st.k[il], n * view.k_row_bytes);
        if (view.v_trans) {
            const size_t e = view.v_elem_bytes;
            for (uint32_t ch = 0; ch < kv.n_embd_v(); ++ch)
                std::memcpy(view.v[il] + static_cast<size_t>(ch) * view.size * e, st.v[il] + ch * n * e,
                            n * e);
        } else {
            std::memcpy(view.v[il], st.v[il], n * view.v_row_bytes);
        }
    }
    return r.pos();
}

size_t ContextState::read_seq(Context &ctx, const uint8_t *src, size_t size, int32_t dest, bool exact) {
    check_seq(ctx, dest);
    if (!src && size) throw Error("state source is null");
    Reader r(src, size);
    StagedKv st = stage_kv(r, ctx, dest);
    if (exact && r.remaining() != 0)
        throw Error("sequence state has " + str(r.remaining()) + " unread bytes after the KV cache");

    // Cells free once dest is removed: empty ones and those that belong to dest alone.
    KvCache &kv = ctx.kv();
    uint32_t n_free = 0;
    for (const KvCell &c : kv.cells())
        if (c.pos < 0 || c.empty() || (c.seq.count() == 1 && c.seq.test(dest))) n_free++;
    if (n_free < st.cell_count)
        throw Error("not enough free KV cells to restore the sequence: it needs " + str(st.cell_count) +
                    ", " + str(n_free) + " are free");
    // Everything occupy() needs is allocated before the cache changes.
    std::vector<uint32_t> placed;
    placed.reserve(st.cell_count);
    std::vector<int32_t> n_seq_id(st.cell_count, 1);
    int32_t dest_id = dest;
    std::vector<int32_t *> seq_ids(st.cell_count, &dest_id);

    // ---- apply ----
    kv.seq_rm(dest, -1, -1);
    if (st.cell_count == 0) return r.pos();
    // Contiguous from the head when possible, any free cells otherwise; cannot fail after the count above.
    if (!kv.find_cells(static_cast<int32_t>(st.cell_count), n_seq_id.data(), seq_ids.data(), placed))
        throw Error("internal error: free KV cells disappeared during a sequence restore");
    for (uint32_t i = 0; i < st.cell_count; ++i) put_cell_kv(kv, st, i, placed[i]);
    kv.occupy(placed, st.pos.data(), n_seq_id.data(), seq_ids.data());
    return r.pos();
}

// ---- files ----

void ContextState::save_file(Context &ctx, const std::string &path, const int32_t *tokens, size_t n_tokens) {
    AtomicFile f(path);
    FileStateWriter w(f);
    write_file_header(w, kSessionMagic, kSessionVersion, tokens, n_tokens);
    write(ctx, w);
    f.commit();
}

std::vector<int32_t> ContextState::load_file(Context &ctx, const std::string &path, size_t token_capacity) {
    const std::vector<uint8_t> bytes = read_whole_file(path);
    Reader r(bytes.data(), bytes.size());
    std::vector<int32_t> tokens = read_file_header(r, path, kSessionMagic, kSessionVersion, token_capacity);
    read(ctx, bytes.data() + r.pos(), r.remaining(), /*exact=*/true);
    return tokens;
}

size_t ContextState::save_seq_file(Context &ctx, const std::string &path, int32_t seq, const int32_t *tokens,
                                   size_t n_tokens) {
    check_seq(ctx, seq);
    AtomicFile f(path);
    FileStateWriter w(f);
    write_file_header(w, kSeqMagic, kSeqVersion, tokens, n_tokens);
    write_seq(ctx, w, seq);
    f.commit();
    return w.written();
}

std::vector<int32_t> ContextState::load_seq_file(Context &ctx, const std::string &path, int32_t dest,
                                                 size_t token_capacity, size_t *n_read) {
    check_seq(ctx, dest);
    const std::vector<uint8_t> bytes = read_whole_file(path);
    Reader r(bytes.data(), bytes.size());
    std::vector<int32_t> tokens = read_file_header(r, path, kSeqMagic, kSeqVersion, token_capacity);
    read_seq(ctx, bytes.data() + r.pos(), r.remaining(), dest, /*exact=*/true);
    if (n_read) *n_read = bytes.size();
    return tokens;
}

}  // namespace lctx
