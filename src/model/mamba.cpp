// The mamba family (selective state spaces, no attention): its tensors (bind_mamba) and its forward pass over
// one micro-batch, read top to bottom. Each sequence carries a recurrent state per layer in its cache cell:
// the convolution's last d_conv - 1 inputs and the SSM state h [d_inner][d_state].
//   x = embed(tokens)
//   for each layer:
//     u = rmsnorm(x) * attn_norm
//     xs, z = u Win_x, u Win_z                              (d_inner each)
//     xs = silu(conv1d(conv state, xs) + conv_b)             (causal, depthwise, continues the state)
//     dt, B, C = xs Wx_dt, xs Wx_B, xs Wx_C                 (rmsnorm'ed each when dt_b_c_rms)
//     dt = dt Wdt + dt_b
//     h = h * exp(softplus(dt) A) + softplus(dt) B xs;  y = h C + D xs    (per token, continues the state)
//     x += (y * silu(z)) Wout
//   logits = (rmsnorm(x) * output_norm) Woutput      (only for the rows that were asked for)
#include "kernels/rows.h"
#include "kernels/ssm.h"
#include "model/blocks.h"
#include "model/families.h"
#include "model/projection.h"

namespace lctx {

void bind_mamba(WeightBinder &b, const HParams &hp, ModelWeights &w) {
    const int64_t n_embd = hp.n_embd, d_inner = hp.ssm_d_inner, d_state = hp.ssm_d_state;
    const int64_t d_conv = hp.ssm_d_conv, dt_rank = hp.ssm_dt_rank;

    w.token_embd = b.matrix("token_embd.weight", n_embd, hp.n_vocab);
    w.output_norm = b.vector("output_norm.weight", n_embd);
    w.output = b.matrix("output.weight", n_embd, hp.n_vocab, Need::Optional);
    if (!w.output.data) w.output = w.token_embd;  // tied embeddings

    b.check_layer_count("mamba", hp.n_layer, 10);
    w.layers.resize(hp.n_layer);
    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        LayerWeights &l = w.layers[il];
        l.attn_norm = b.vector(p + "attn_norm.weight", n_embd);
        const kernels::WeightView in = b.matrix(p + "ssm_in.weight", n_embd, 2 * d_inner);
        l.ssm_in_x = row_range(in, 0, d_inner);
        l.ssm_in_z = row_range(in, d_inner, d_inner);
        l.ssm_conv1d = b.matrix_f32(p + "ssm_conv1d.weight", d_conv, d_inner);
        l.ssm_conv1d_b = b.vector(p + "ssm_conv1d.bias", d_inner);
        const kernels::WeightView xp = b.matrix(p + "ssm_x.weight", d_inner, dt_rank + 2 * d_state);
        l.ssm_x_dt = row_range(xp, 0, dt_rank);
        l.ssm_x_bc = row_range(xp, dt_rank, 2 * d_state);
        l.ssm_dt = b.matrix(p + "ssm_dt.weight", dt_rank, d_inner);
        l.ssm_dt_b = b.vector(p + "ssm_dt.bias", d_inner);
        l.ssm_a = b.matrix_f32(p + "ssm_a", d_state, d_inner);
        l.ssm_d = b.vector(p + "ssm_d", d_inner);
        l.ssm_out = b.matrix(p + "ssm_out.weight", d_inner, n_embd);
    }
}

bool forward_mamba(const Model &model, const KvView &kv, const ForwardBatch &b, ForwardScratch &s,
                   kernels::ThreadPool &pool) {
    const HParams &hp = model.hparams();
    const ModelWeights &w = model.weights();
    const int64_t n_tokens = b.n_tokens;
    const int64_t n_embd = hp.n_embd;
    const int64_t d_inner = hp.ssm_d_inner, d_state = hp.ssm_d_state, dt_rank = hp.ssm_dt_rank;
    const ParamVector no_bias;

    float *x = grow_layer_scratch(hp, n_tokens, s);
    grow(s.ssm_x, n_tokens * d_inner);       // ssm_x   [n_tokens][d_inner]    convolution input
    grow(s.ssm_z, n_tokens * d_inner);       // ssm_z   [n_tokens][d_inner]    gate
    grow(s.ssm_xc, n_tokens * d_inner);      // ssm_xc  [n_tokens][d_inner]    convolution output
    grow(s.ssm_dtr, n_tokens * dt_rank);     // ssm_dtr [n_tokens][dt_rank]    time steps, low rank
    grow(s.ssm_bc, n_tokens * 2 * d_state);  // ssm_bc  [n_tokens][2 d_state]  B | C
    grow(s.ssm_dt, n_tokens * d_inner);      // ssm_dt  [n_tokens][d_inner]    time steps
    grow(s.ssm_y, n_tokens * d_inner);       // ssm_y   [n_tokens][d_inner]    scan output
    float *xs = s.ssm_x.data(), *z = s.ssm_z.data(), *xc = s.ssm_xc.data(), *dtr = s.ssm_dtr.data();
    float *bc = s.ssm_bc.data(), *dt = s.ssm_dt.data(), *y = s.ssm_y.data();

    embed_tokens(w.token_embd, b, n_embd, x);

    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        const LayerWeights &l = w.layers[il];
        const LayerRows rows = layer_rows(hp, il, b, s);
        recurrent_state_rows(kv, il, b, s);

        // ---- input projections ----
        kernels::rms_norm_rows(x, l.attn_norm.data(), s.cur.data(), n_tokens, n_embd, hp.norm_rms_eps, pool);
        project({{&l.ssm_in_x, &no_bias, xs, d_inner}, {&l.ssm_in_z, &no_bias, z, d_inner}}, s.cur.data(),
                n_embd, n_tokens, pool, s.mm);

        // ---- causal convolution, continuing each sequence's last inputs ----
        kernels::SsmConvArgs conv;
        conv.x = xs;
        conv.ldx = d_inner;
        conv.y = xc;
        conv.ldy = d_inner;
        conv.n_rows = n_tokens;
        conv.state = s.conv_state.data();
        conv.w = l.ssm_conv1d.data();
        conv.b = l.ssm_conv1d_b.data();
        conv.d_inner = d_inner;
        conv.d_conv = static_cast<int>(hp.ssm_d_conv);
        kernels::ssm_conv(conv, pool);
        kernels::silu_inplace(xc, n_tokens * d_inner);

        // ---- selective scan, continuing each sequence's SSM state ----
        project({{&l.ssm_x_dt, &no_bias, dtr, dt_rank}, {&l.ssm_x_bc, &no_bias, bc, 2 * d_state}}, xc,
                d_inner, n_tokens, pool, s.mm);
        if (hp.ssm_dt_b_c_rms) {  // Falcon Mamba: dt, B and C each RMS-normalized, without a weight
            kernels::rms_norm_rows(dtr, nullptr, dtr, n_tokens, dt_rank, hp.norm_rms_eps, pool);
            kernels::rms_norm_rows(bc, nullptr, bc, 2 * n_tokens, d_state, hp.norm_rms_eps, pool);
        }
        project({{&l.ssm_dt, &l.ssm_dt_b, dt, d_inner}}, dtr, dt_rank, n_tokens, pool, s.mm);
        kernels::SsmScanArgs scan;
        scan.x = xc;
        scan.ldx = d_inner;
        scan.dt = dt;
        scan.lddt = d_inner;
        scan.bc = bc;
        scan.ldbc = 2 * d_state;
        scan.y = y;
        scan.ldy = d_inner;
        scan.n_rows = n_tokens;
        scan.state = s.ssm_state.data();
        scan.a = l.ssm_a.data();
        scan.d = l.ssm_d.data();
        scan.d_inner = d_inner;
        scan.d_state = d_state;
        kernels::ssm_scan(scan, pool);

        // ---- gate, output projection, residual ----
        kernels::swiglu_rows(z, y, y, n_tokens, d_inner, pool);  // y = silu(z) * y
        gather_rows(rows, x, n_embd);                            // from here on rows.n rows
        gather_rows(rows, y, d_inner);
        project({{&l.ssm_out, &no_bias, s.out.data(), n_embd}}, y, d_inner, rows.n, pool, s.mm);
        kernels::add_rows(x, s.out.data(), rows.n, n_embd, pool);
        add_control_vector(b, il, x, rows.n, n_embd);

        if (b.abort_cb && b.abort_cb(b.abort_data)) return false;
    }

    output_rms(hp, w, b, x, s, pool);
    return true;
}

}  // namespace lctx
