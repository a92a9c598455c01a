// The window attention of fused_cpu_attention.h in fp32 for CPUs with AVX2 and FMA but no
// AVX-512 (AMD Zen 2/3, older Intel): the same one pass per (window, head), Q, K and V read in
// place from the stacked projection, a block of query rows' scores kept in L1, the context written
// token-major where the output projection reads it. FusedWindowAttention takes this form where
// its AVX-512 forms cannot run; the declarations are here so that the tests can run this form on
// AVX-512 CPUs too.
#pragma once

#include <cstdint>

namespace longqa {

// Whether this CPU has AVX2 and FMA.
bool Avx2AttentionAvailable();

// Head widths the AVX2 form takes: multiples of 8 up to 64 (a query row's dh / 8 accumulators of
// the weighted sum must stay in the 16 vector registers with the row's weight).
bool Avx2AttentionTakesHeadWidth(int64_t dh);

// out [b][t][d] = per head, softmax(Q K^T / sqrt(dh) + padding) V, from qkv [b][t][3d] (query |
// key | value, each `heads` slices of dh = d / heads) and valid [b][t] (false: a padding key at
// -1e30, so a window without valid keys averages all its values). All contiguous fp32; runs on
// LibTorch's intra-op threads. Requires Avx2AttentionAvailable() and
// Avx2AttentionTakesHeadWidth(d / heads).
void Avx2WindowAttention(const float* qkv, const bool* valid, int64_t b, int64_t t, int64_t d,
                         int64_t heads, float* out);

}  // namespace longqa
