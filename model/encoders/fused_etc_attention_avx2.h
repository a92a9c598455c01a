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

// Whether this CPU has AVX2 and FMA.
bool Avx2EtcAttentionAvailable();

// Head widths the AVX2 form takes: multiples of 8 up to 64.
bool Avx2EtcTakesHeadWidth(int64_t dh);

// Long-query blocks [b0, b0 + blocks), as FusedEtcLongAttention.
void Avx2EtcLongAttention(const etc_fused::Common<float>& s, int64_t b0, int64_t blocks);

// Global-query rows [s.r0, s.r0 + rows), as FusedEtcGlobalAttention.
void Avx2EtcGlobalAttention(const etc_fused::Common<float>& s, int64_t rows);

}  // namespace longqa
