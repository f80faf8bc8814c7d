// The compute side of `lctx bench`'s roofline: the machine's peak f32 FMA, int8 and bf16 dot-product
// throughput, probed with the instructions the kernels use at the active ISA level (LCTX_ISA caps it), and
// the arithmetic a prompt token costs in a model. Prompt processing is compute-bound, so its speed reads best
// as a fraction of that peak (generation, bandwidth-bound, as a fraction of the read bandwidth).
#pragma once
#include <cstdint>
#include <string>

#include "model/model.h"

namespace lctx::bench {

enum class PeakKind { F32Fma, Int8Dot, Bf16Dot };
const char *peak_kind_name(PeakKind k);  // "f32 FMA", "int8 dot", "bf16 dot"

// Operations (a multiply-add counts as two) per second with n_threads threads running the probe loop of the
// active level at once: f32 FMAs (scalar: mul + add), or u8 x s8 products summed into i32 (VNNI dpbusd at the
// AVX-512 level, maddubs + madd at AVX2; AMX machines report the AVX-512 figure; at the AVX-512 level the
// 256-bit form counts too when it is faster), or bf16 pairs summed into f32 (vdpbf16ps at the AVX-512 level;
// below it the BF16 kernels convert to f32, so there the f32 FMA probe). The best of a few short tries spread
// over about 50 ms.
double compute_peak(PeakKind kind, int n_threads);

// What the weights of a model cost per prompt token, from its tensors and hyper-parameters.
struct ComputeFacts {
    uint64_t matmul_macs =
        0;  // multiply-adds of the weight matrices per token (token_embd's lookup excluded)
    uint64_t attn_macs_per_key =
        0;  // per token and per cached key it attends to: n_layer * n_head * (d_k + d_v)
    // int8 when most matrix bytes are block-quantized (activations go int8); else bf16 when most are BF16
    // and the active level has bf16 dot products (AVX-512)
    PeakKind kind = PeakKind::F32Fma;
};
ComputeFacts compute_facts(const Model &model);

// Operations of a prompt of n_prompt tokens after `depth` cached ones, per prompt token: the matrix products
// plus causal attention (token i attends to depth + i + 1 keys).
double ops_per_prompt_token(const ComputeFacts &f, int n_prompt, int depth);
// The same for an encoder's sequences of n_len tokens (bench's embedding mode): non-causal attention, every
// token attends to all n_len keys of its sequence.
double ops_per_encoded_token(const ComputeFacts &f, int n_len);

}  // namespace lctx::bench
