// Dispatch of the dot-product kernels, and the portable path (the scalar reference itself).
#include "kernels/dot.h"

#include <array>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "kernels/cpu_features.h"
#include "kernels/interleave.h"
#include "kernels/isa_request.h"
#include "util/error.h"

namespace lctx::kernels {

namespace {

template <int32_t kType>
float ref_vec_dot(int64_t n, const void *x, const void *y) {
    return vec_dot_ref(static_cast<GgmlType>(kType), n, x, y);
}

// One reference dot per output (the scalar level's gemm).
template <int32_t kType>
void ref_gemm(int64_t n, const void *w, size_t ldw, int64_t nr, const void *act, size_t lda, int64_t nc,
              float *y, int64_t ldy) {
    const auto *wb = static_cast<const uint8_t *>(w);
    const auto *ab = static_cast<const uint8_t *>(act);
    for (int64_t c = 0; c < nc; ++c)
        for (int64_t r = 0; r < nr; ++r)
            y[c * ldy + r] = vec_dot_ref(static_cast<GgmlType>(kType), n, wb + r * ldw, ab + c * lda);
}

// F16 rows against F32 activations at the scalar level: each weight row as f32, then the F32 reference dot.
void ref_gemm_f16_by_f32(int64_t n, const void *w, size_t ldw, int64_t nr, const void *act, size_t lda,
                         int64_t nc, float *y, int64_t ldy) {
    thread_local std::vector<float> row;
    row.resize(static_cast<size_t>(n));
    const auto *wb = static_cast<const uint8_t *>(w);
    const auto *ab = static_cast<const uint8_t *>(act);
    for (int64_t r = 0; r < nr; ++r) {
        dequantize_row(GgmlType::F16, wb + r * ldw, row.data(), n);
        for (int64_t c = 0; c < nc; ++c)
            y[c * ldy + r] = vec_dot_ref(GgmlType::F32, n, row.data(), ab + c * lda);
    }
}

// The scalar level reads groups of 8 rows.
template <int32_t kType>
void ref_gemm_interleaved(int64_t n, const void *w, size_t ldw, int64_t nr, const void *act, size_t lda,
                          int64_t nc, float *y, int64_t ldy) {
    gemm_interleaved_ref(static_cast<GgmlType>(kType), kGroupRows256, n, w, ldw, nr, act, lda, nc, y, ldy);
}

template <int32_t kType>
void ref_quantize(const float *x, void *y, int64_t n) {
    quantize_row(static_cast<GgmlType>(kType), x, y, n);
}

void copy_f32(const float *x, void *y, int64_t n) {
    std::memcpy(y, x, static_cast<size_t>(n) * sizeof(float));
}

using Table = std::array<TypeKernels, kGgmlTypeCount>;

template <int32_t... kIds>
void fill_scalar(Table &t, std::integer_sequence<int32_t, kIds...>) {
    ((t[kIds] = TypeKernels{GgmlType::F32, &ref_vec_dot<kIds>, &ref_quantize<kIds>, &ref_gemm<kIds>,
                            &ref_gemm_interleaved<kIds>, kGroupRows256}),
     ...);
}

constexpr GgmlType kWeightTypes[] = {
    GgmlType::F32,  GgmlType::F16,  GgmlType::BF16, GgmlType::Q4_0,   GgmlType::Q4_1,
    GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::Q8_0, GgmlType::IQ4_NL, GgmlType::Q2_K,
    GgmlType::Q3_K, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K,   GgmlType::IQ4_XS,
};

// The scalar reference for every weight type with kernels; act_type / quantize_act per type.
Table build_scalar() {
    Table ref{};
    fill_scalar(ref, std::make_integer_sequence<int32_t, kGgmlTypeCount>{});
    Table t{};
    for (GgmlType w : kWeightTypes) {
        const int32_t id = static_cast<int32_t>(w);
        const TypeTraits &tr = type_traits(w);
        const int32_t act = static_cast<int32_t>(tr.vec_dot_type);
        t[id].act_type = tr.vec_dot_type;
        t[id].vec_dot = ref[id].vec_dot;
        t[id].gemm = ref[id].gemm;
        // Types with an interleaved layout (interleave.h says which) get the interleaved gemm too.
        if (interleave_block_elems(w) > 0) {
            t[id].gemm_interleaved = ref[id].gemm_interleaved;
            t[id].group_rows = ref[id].group_rows;
        }
        t[id].quantize_act = act == static_cast<int32_t>(GgmlType::F32) ? &copy_f32 : ref[act].quantize_act;
    }
    return t;
}

// A level's table: its own kernels where it has them, otherwise the level below. An interleaved gemm reads
// groups of `group_for(type)` rows (a level whose kernels read other groups than the level below).
Table build_level(const Table &below, VecDotFn (*dot_for)(GgmlType), QuantizeActFn (*quant_for)(GgmlType),
                  GemmFn (*gemm_for)(GgmlType), GemmFn (*interleaved_for)(GgmlType),
                  int (*group_for)(GgmlType)) {
    Table t = below;
    for (int32_t id = 0; id < kGgmlTypeCount; ++id) {
        const auto type = static_cast<GgmlType>(id);
        if (!t[id].vec_dot) continue;
        if (VecDotFn f = dot_for(type)) t[id].vec_dot = f;
        if (GemmFn g = gemm_for(type)) t[id].gemm = g;
        if (t[id].gemm_interleaved) {
            if (GemmFn g = interleaved_for(type)) {
                t[id].gemm_interleaved = g;
                if (group_for) t[id].group_rows = group_for(type);
            }
        }
        if (QuantizeActFn q = quant_for(t[id].act_type)) t[id].quantize_act = q;
    }
    return t;
}

struct Tables {
    Table scalar, avx2, avx512, amx;
    Table neon, dotprod, i8mm;
};

[[maybe_unused]] VecDotFn no_vec_dot(GgmlType) {
    return nullptr;
}
[[maybe_unused]] QuantizeActFn no_quantize_act(GgmlType) {
    return nullptr;
}
[[maybe_unused]] GemmFn no_gemm(GgmlType) {
    return nullptr;
}

const Tables &tables() {
    static const Tables t = [] {
        Tables r;
        r.scalar = build_scalar();
        r.avx2 = r.avx512 = r.amx = r.neon = r.dotprod = r.i8mm = r.scalar;
        // The ISA files are not entered at all (not even their lookup functions, which are compiled
        // with that ISA's flags) unless the CPU has the level; each architecture's are compiled only there.
        const Isa detected = isa_detected();
#if defined(__x86_64__)
        if (isa_at_least(detected, Isa::Avx2))
            r.avx2 = build_level(r.scalar, &detail::vec_dot_avx2, &detail::quantize_act_avx2,
                                 &detail::gemm_avx2, &detail::gemm_interleaved_avx2, nullptr);
        r.avx512 = isa_at_least(detected, Isa::Avx512)
                       ? build_level(r.avx2, &detail::vec_dot_avx512, &detail::quantize_act_avx512,
                                     &detail::gemm_avx512, &detail::gemm_interleaved_avx512,
                                     &detail::group_rows_avx512)
                       : r.avx2;
        if (isa_at_least(detected, Isa::Avx512)) {
            for (int32_t id = 0; id < kGgmlTypeCount; ++id) {
                TypeKernels &k = r.avx512[id];
                if (!k.gemm_interleaved) continue;
                k.gemm_interleaved_stages = detail::interleaved_stages_avx512(static_cast<GgmlType>(id));
                k.quantize_act_wide = detail::quantize_act_wide_avx512(k.act_type);
                k.gemm_interleaved_wide =
                    k.quantize_act_wide ? detail::gemm_interleaved_wide_avx512(static_cast<GgmlType>(id))
                                        : nullptr;
                if (!k.gemm_interleaved_wide) k.quantize_act_wide = nullptr;
            }
        }
        r.amx = r.avx512;
        if (isa_at_least(detected, Isa::Amx)) {
            r.amx = build_level(r.avx512, &no_vec_dot, &no_quantize_act, &no_gemm,
                                &detail::gemm_interleaved_amx, nullptr);
            for (int32_t id = 0; id < kGgmlTypeCount; ++id) {
                const bool own =
                    r.amx[id].gemm_interleaved && r.amx[id].gemm_interleaved != r.avx512[id].gemm_interleaved;
                // its own tiles, or the avx512 kernel's needs
                r.amx[id].gemm_interleaved_stages = own || r.avx512[id].gemm_interleaved_stages;
                if (own) {  // the wide form is the avx512 kernel's
                    r.amx[id].quantize_act_wide = nullptr;
                    r.amx[id].gemm_interleaved_wide = nullptr;
                }
            }
        }
#elif defined(__aarch64__)
        // ARM64: groups of 8 rows at every level (two 128-bit registers of 4 rows per interleaved line).
        if (isa_at_least(detected, Isa::Neon))
            r.neon = build_level(r.scalar, &detail::vec_dot_neon, &detail::quantize_act_neon,
                                 &detail::gemm_neon, &detail::gemm_interleaved_neon, nullptr);
        r.dotprod = isa_at_least(detected, Isa::Dotprod)
                        ? build_level(r.neon, &detail::vec_dot_dotprod, &no_quantize_act,
                                      &detail::gemm_dotprod, &detail::gemm_interleaved_dotprod, nullptr)
                        : r.neon;
        r.i8mm = isa_at_least(detected, Isa::I8mm)
                     ? build_level(r.dotprod, &no_vec_dot, &no_quantize_act, &no_gemm,
                                   &detail::gemm_interleaved_i8mm, nullptr)
                     : r.dotprod;
#else
        (void)detected;
#endif
        return r;
    }();
    return t;
}

// The family of a level (0: scalar, 1: x86, 2: ARM64) and its rank within the family.
int isa_family(Isa isa) {
    switch (isa) {
        case Isa::Scalar:
            return 0;
        case Isa::Avx2:
        case Isa::Avx512:
        case Isa::Amx:
            return 1;
        case Isa::Neon:
        case Isa::Dotprod:
        case Isa::I8mm:
            return 2;
    }
    return -1;
}

}  // namespace

bool isa_at_least(Isa have, Isa want) {
    if (want == Isa::Scalar) return true;
    if (isa_family(have) != isa_family(want)) return false;
    return static_cast<int>(have) >= static_cast<int>(want);  // in one family the numbers are in order
}

bool detail::isa_requested(const char *env, Isa *isa) {
    if (!env || !*env) return false;
    if (std::strcmp(env, "scalar") == 0) {
        *isa = Isa::Scalar;
    } else if (std::strcmp(env, "avx2") == 0) {
        *isa = Isa::Avx2;
    } else if (std::strcmp(env, "avx512") == 0) {
        *isa = Isa::Avx512;
    } else if (std::strcmp(env, "amx") == 0) {
        *isa = Isa::Amx;
    } else if (std::strcmp(env, "neon") == 0) {
        *isa = Isa::Neon;
    } else if (std::strcmp(env, "dotprod") == 0) {
        *isa = Isa::Dotprod;
    } else if (std::strcmp(env, "i8mm") == 0) {
        *isa = Isa::I8mm;
    } else {
        throw Error(std::string("LCTX_ISA='") + env +
                    "' is not one of scalar, avx2, avx512, amx, neon, dotprod, i8mm");
    }
    return true;
}

Isa detail::isa_lowered_by(const char *env, Isa detected) {
    Isa want;
    if (!isa_requested(env, &want)) return detected;
    return isa_at_least(detected, want) ? want : detected;
}

GemmFn gemm_f16_by_f32(Isa isa) {
    type_kernels(GgmlType::F32, isa);  // the same check of the level
    switch (isa) {
        case Isa::Scalar:
            return &ref_gemm_f16_by_f32;
#if defined(__x86_64__)
        case Isa::Avx2:
            return detail::gemm_f16_by_f32_avx2();
        case Isa::Avx512:
        case Isa::Amx:  // the AVX-512 float kernels (AMX adds only integer tiles)
            return detail::gemm_f16_by_f32_avx512();
#elif defined(__aarch64__)
        case Isa::Neon:
        case Isa::Dotprod:  // the NEON float kernels (dotprod and i8mm add only integer products)
        case Isa::I8mm:
            return detail::gemm_f16_by_f32_neon();
#endif
        default:
            break;
    }
    return &ref_gemm_f16_by_f32;
}

bool has_kernels(GgmlType weight_type) {
    for (GgmlType w : kWeightTypes)
        if (w == weight_type) return true;
    return false;
}

Isa isa_detected() {
    const CpuFeatures &f = cpu_features();
    if (f.has_i8mm_level()) return Isa::I8mm;
    if (f.has_dotprod_level()) return Isa::Dotprod;
    if (f.has_neon_level()) return Isa::Neon;
    if (f.has_amx_level()) return Isa::Amx;
    if (f.has_avx512_level()) return Isa::Avx512;
    if (f.has_avx2_level()) return Isa::Avx2;
    return Isa::Scalar;
}

Isa isa_active() {
    static const Isa active = detail::isa_lowered_by(std::getenv("LCTX_ISA"), isa_detected());
    return active;
}

const char *isa_name(Isa isa) {
    switch (isa) {
        case Isa::Scalar:
            return "scalar";
        case Isa::Avx2:
            return "avx2";
        case Isa::Avx512:
            return "avx512";
        case Isa::Amx:
            return "amx";
        case Isa::Neon:
            return "neon";
        case Isa::Dotprod:
            return "dotprod";
        case Isa::I8mm:
            return "i8mm";
    }
    return "unknown";
}

const TypeKernels &type_kernels(GgmlType weight_type, Isa isa) {
    if (!isa_at_least(isa_detected(), isa))
        throw Error(std::string("kernels for ") + isa_name(isa) + " requested but this CPU supports only " +
                    isa_name(isa_detected()));
    const int32_t id = static_cast<int32_t>(weight_type);
    const TypeKernels *k = nullptr;
    if (id >= 0 && id < kGgmlTypeCount) {
        const Tables &t = tables();
        switch (isa) {
            case Isa::Scalar:
                k = &t.scalar[id];
                break;
            case Isa::Avx2:
                k = &t.avx2[id];
                break;
            case Isa::Avx512:
                k = &t.avx512[id];
                break;
            case Isa::Amx:
                k = &t.amx[id];
                break;
            case Isa::Neon:
                k = &t.neon[id];
                break;
            case Isa::Dotprod:
                k = &t.dotprod[id];
                break;
            case Isa::I8mm:
                k = &t.i8mm[id];
                break;
        }
    }
    if (!k || !k->vec_dot)
        throw Error(std::string("no dot-product kernel for tensor type ") + type_name(weight_type) + " (id " +
                    std::to_string(id) + ")");
    return *k;
}

}  // namespace lctx::kernels
