// The AVX2 form of ETC's fused attention (fused_etc_attention.h) for CPUs with AVX2 and FMA but
// no AVX-512 (AMD Zen 2/3, Intel client CPUs): the same passes as the AVX-512 form in 8-float
// vectors, fp32 heads only (such CPUs have no bf16 arithmetic), into an fp32 or bf16 context.
// Called by
// FusedEtcLongAttention / FusedEtcGlobalAttention after their checks, with their Common filled
// for a vector width of 8.
#pragma once

#include <cstdint>

#include "model/encoders/fused_etc_common.h"

namespace longqa {

// Where it runs and what heads it takes: as the window attention's AVX2 form,
// Avx2AttentionAvailable() and Avx2AttentionTakesHeadWidth(dh) (fused_cpu_attention_avx2.h).

// Long-query blocks [b0, b0 + blocks), as FusedEtcLongAttention.
void Avx2EtcLongAttention(const etc_fused::Common<float>& s, int64_t b0, int64_t blocks);

// Global-query rows [s.r0, s.r0 + rows), as FusedEtcGlobalAttention.
void Avx2EtcGlobalAttention(const etc_fused::Common<float>& s, int64_t rows);

}  // namespace longqa
