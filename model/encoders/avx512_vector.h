// AVX-512 helpers shared by the fused CPU paths of model/encoders (fused_cpu_ops.cc,
// fused_cpu_attention.cc): masked loads and stores of fp32 and bf16, and e^x for softmax. Include
// it only from a .cc file whose AVX-512 functions run after FusedCpuOpsAvailable()'s CPU check:
// each function carries its ISA as a target attribute and the rest of the project is built for the
// baseline x86-64.
#pragma once

// GCC 12's AVX-512 headers make their "undefined" pass-through operands by self-initialisation,
// which -W(maybe-)uninitialized reports at masked intrinsics and reductions: a false positive,
// silenced for the rest of the including file (these files hold AVX-512 code only).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <ATen/ATen.h>
#include <immintrin.h>

#include <cstdint>

#define LONGQA_AVX512 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl")))

namespace longqa::simd {

// The mask of the first min(left, 16) lanes; left >= 1.
LONGQA_AVX512 inline __mmask16 Lanes(int64_t left) {
  return left >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << left) - 1);
}

LONGQA_AVX512 inline __m512 Load(const float* p, __mmask16 m) {
  return _mm512_maskz_loadu_ps(m, p);
}

LONGQA_AVX512 inline __m512 Load(const at::BFloat16* p, __mmask16 m) {
  const __m256i bits = _mm256_maskz_loadu_epi16(m, p);  // bf16 = the high half of an fp32
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(bits), 16));
}

LONGQA_AVX512 inline void Store(float* p, __m512 v, __mmask16 m) { _mm512_mask_storeu_ps(p, m, v); }

LONGQA_AVX512 inline void Store(at::BFloat16* p, __m512 v, __mmask16 m) {
  // Round to nearest even, as c10::BFloat16 does; NaN stays a quiet NaN.
  const __m512i u = _mm512_castps_si512(v);
  const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
  __m512i r =
      _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(odd, _mm512_set1_epi32(0x7fff))), 16);
  r = _mm512_mask_mov_epi32(r, _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q), _mm512_set1_epi32(0x7fc0));
  _mm256_mask_storeu_epi16(p, m, _mm512_cvtepi32_epi16(r));
}

// e^x for x <= 0 (softmax's shifted scores; erf's e^(-z^2)): x = n ln 2 + r (Cody-Waite: ln 2 in
// two parts, so r stays exact for large |x|), e^r by its Taylor polynomial of degree 6 on
// |r| <= ln(2)/2 (error 1.2e-7), and 2^n by VSCALEFPS (0 for very negative n). -inf and the
// -1e30 padding bias give 0; NaN stays NaN.
LONGQA_AVX512 inline __m512 ExpNonPositive(__m512 x) {
  x = _mm512_max_ps(_mm512_set1_ps(-1e4f), x);  // NaN in the second operand is returned
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693145751953125f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(1.428606765330187e-6f), r);
  __m512 p = _mm512_set1_ps(1.0f / 720);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(p, n);
}

}  // namespace longqa::simd
