#include "model/encoders/fused_cpu_attention.h"

#include <ATen/Parallel.h>
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include "model/encoders/attention_key_bias.h"
#include "model/encoders/avx512_attention_tiles.h"
#include "model/encoders/avx512_vector.h"
#include "model/encoders/fused_cpu_attention_avx2.h"
#include "model/encoders/fused_cpu_ops.h"

namespace longqa {
namespace {

using attention_tiles::kMaxRows;
using attention_tiles::kMaxVectorsPerHead;
using attention_tiles::RowsFor;

// One head of one window as the kernels read it: queries and values (fp32 or bf16: T) rows `ld`
// apart (the stacked projection itself), t tokens, tp = t rounded up to 16; the context (fp32 or
// bf16: O) rows `out_ld` apart.
template <typename T, typename O>
struct Head {
  const T* q;
  const T* v;
  int64_t ld;
  int64_t t;
  int64_t tp;
  O* out;
  int64_t out_ld;
};

// A task's buffers: the keys transposed [dh][tp] (fp32 arithmetic; dot products: their feature
// pairs [dh/2][tp] and the values' key pairs [tp/2][dh], packed once a head), a block of query
// rows' scores [rows][tp] (dot products: and their weights rounded to bf16, and fp32 queries'
// rows rounded to bf16), the key bias [tp] and the rows' 1 / sum of exponentials.
struct Scratch {
  std::vector<float> kt, scores, bias, inv_sum;
  std::vector<uint32_t> kp, vp;
  std::vector<at::BFloat16> weights, q;
};

// A: the arithmetic: float (fp32 FMAs, fp32 heads) or at::BFloat16 (AVX512_BF16 dot products:
// bf16 heads, or fp32 heads rounded to bf16 as they are packed).
template <typename A>
constexpr bool kDotProducts = std::is_same_v<A, at::BFloat16>;

// Query rows [i0, i0 + R) of one head: scores (in L1), softmax, weighted sum into the context.
template <int NV, int R, typename A, typename T, typename O>
LONGQA_AVX512_BF16 void RowBlock(const Head<T, O>& h, int64_t i0, Scratch& w) {
  constexpr int64_t dh = 16 * NV;
  const __m512 scale = _mm512_set1_ps(1.0f / std::sqrt(static_cast<float>(dh)));
  float* scores = w.scores.data();
  if constexpr (!kDotProducts<A>) {
    attention_tiles::ScoreRows<R>(h.q + i0 * h.ld, h.ld, w.kt.data(), h.tp, dh, scale,
                                  w.bias.data(), scores);
    attention_tiles::ExpRows(scores, R, h.tp, w.inv_sum.data(), scores);
    const attention_tiles::ValueRows values[] = {{h.v, h.ld, h.t, 0}};
    attention_tiles::WeightedSum<R, NV>(scores, h.tp, values, w.inv_sum.data(),
                                        h.out + i0 * h.out_ld, h.out_ld);
  } else {
    if constexpr (std::is_same_v<T, float>) {
      attention_tiles::RowsToBf16(h.q + i0 * h.ld, h.ld, R, dh, w.q.data());
      attention_tiles::ScoreRowsBf16<R>(w.q.data(), dh, w.kp.data(), h.tp, dh, scale, w.bias.data(),
                                        scores);
    } else {
      attention_tiles::ScoreRowsBf16<R>(h.q + i0 * h.ld, h.ld, w.kp.data(), h.tp, dh, scale,
                                        w.bias.data(), scores);
    }
    attention_tiles::ExpRows(scores, R, h.tp, w.inv_sum.data(), w.weights.data());
    const attention_tiles::ValuePairs values[] = {{w.vp.data(), h.t, 0}};
    attention_tiles::WeightedSum<R, NV>(w.weights.data(), h.tp, values, w.inv_sum.data(),
                                        h.out + i0 * h.out_ld, h.out_ld);
  }
}

// RowBlock for the last block's `rows` < R rows too (a kernel of each size, as the accumulators
// are registers).
template <int NV, int R, typename A, typename T, typename O>
LONGQA_AVX512_BF16 void RowBlockOf(int rows, const Head<T, O>& h, int64_t i0, Scratch& w) {
  if constexpr (R > 1) {
    if (rows < R) return RowBlockOf<NV, R - 1, A>(rows, h, i0, w);
  }
  RowBlock<NV, R, A>(h, i0, w);
}

// One head: rows q, k, v of the stacked projection (`ld` apart), the context to `out`.
template <int NV, typename A, typename T, typename O>
LONGQA_AVX512_BF16 void AttendHead(const T* q, const T* k, const T* v, int64_t ld, int64_t t,
                                   int64_t tp, const bool* valid, O* out, int64_t out_ld,
                                   Scratch& w) {
  constexpr int64_t dh = 16 * NV;
  if constexpr (!kDotProducts<A>) {
    attention_tiles::PackKeysTransposed(k, ld, t, dh, w.kt.data(), tp);
  } else {
    attention_tiles::PackKeyPairs(k, ld, t, dh, w.kp.data(), tp);
    attention_tiles::PackValuePairs(v, ld, t, dh, w.vp.data());
  }
  FillKeyBias(valid, t, tp, w.bias.data());
  const Head<T, O> h{q, v, ld, t, tp, out, out_ld};
  constexpr int R = RowsFor(NV);
  for (int64_t i0 = 0; i0 < t; i0 += R) {
    RowBlockOf<NV, R, A>(static_cast<int>(std::min<int64_t>(R, t - i0)), h, i0, w);
  }
}

template <typename A, typename T, typename... Args>
void AttendHeadOfWidth(int64_t nv, const T* q, Args&&... args) {
  attention_tiles::ForVectorsPerHead(
      nv, [&](auto width) { AttendHead<decltype(width)::value, A>(q, args...); });
}

// ---- AMX: bf16 heads of 32 or 64 features on CPUs with AMX-BF16 (Sapphire Rapids and later) ----
// The two products as tile multiplies (TDPBF16PS: 16 x 16 fp32 += 16 x 32 bf16 . 32 x 16 bf16),
// the softmax between them in fp32 with AVX-512: the weights are rounded to bf16 before the
// weighted sum (as LibTorch's bf16 path rounds its softmax output), the rows' sums stay fp32.

#define LONGQA_AMX \
  __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512bf16,amx-tile,amx-bf16")))

constexpr int64_t kTile = 16;  // rows of a tile; 64 bytes a row: 16 fp32, 32 bf16

// Linux hands a process the AMX tile state only on request (arch_prctl ARCH_REQ_XCOMP_PERM for
// XFEATURE_XTILEDATA); asked once. oneDNN asks too, for its own AMX GEMMs.
bool AmxUsable() {
  static const bool usable = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (!FusedCpuOpsAvailable() || __get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) == 0) {
      return false;
    }
    const bool tile = (edx & (1u << 24)) != 0, bf16 = (edx & (1u << 22)) != 0;
    constexpr long kReqXcompPerm = 0x1023, kXtileData = 18;
    return tile && bf16 && syscall(SYS_arch_prctl, kReqXcompPerm, kXtileData) == 0;
  }();
  return usable;
}

// Every tile 16 rows of 64 bytes (palette 1).
struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {64, 64, 64, 64, 64, 64, 64, 64};
  uint8_t rows[16] = {16, 16, 16, 16, 16, 16, 16, 16};
};

LONGQA_AMX void LoadTileConfig() {
  static const TileConfig config;
  _tile_loadconfig(&config);
}

LONGQA_AMX void ReleaseTiles() { _tile_release(); }

// A task's buffers for AMX heads; tp = t rounded up to 32 (the weighted sum's 32 keys a step),
// tq = t rounded up to 16.
struct AmxScratch {
  std::vector<at::BFloat16> q, weights;               // [tq][dh] (zero rows past t), [16][tp]
  std::vector<uint32_t> key_pairs;                    // [dh/2][tp]: K[j][2c] | K[j][2c+1] << 16
  std::vector<uint32_t> value_pairs;                  // [tp/2][dh]: V[2j][f] | V[2j+1][f] << 16
  std::vector<float> scores, context, bias, inv_sum;  // [16][tp], [16][dh], [tp], [16]
};

// The operand layouts of TDPBF16PS's second operand: pairs along the summed dimension, as the
// AVX512_BF16 form packs them; the key columns and value rows past t (up to tp) stay zero from
// the scratch's allocation (t is one call's window length).
LONGQA_AMX void PackPairs(const at::BFloat16* k, const at::BFloat16* v, int64_t ld, int64_t t,
                          int64_t tp, int64_t dh, AmxScratch& w) {
  attention_tiles::PackKeyPairs(k, ld, t, dh, w.key_pairs.data(), tp);
  attention_tiles::PackValuePairs(v, ld, t, dh, w.value_pairs.data());
}

// scores [16][tp] (q . k) → weights [16][tp] = bf16(e^(scale q.k + bias - row max)), and
// inv_sum = 1 / the fp32 sum of the unrounded exponentials.
LONGQA_AMX void SoftmaxNumerators(AmxScratch& w, int64_t tp, float scale) {
  const __m512 vscale = _mm512_set1_ps(scale);
  for (int64_t r = 0; r < kTile; ++r) {
    float* row = w.scores.data() + r * tp;
    __m512 most = _mm512_set1_ps(-INFINITY);
    for (int64_t j = 0; j < tp; j += 16) {
      const __m512 x =
          _mm512_fmadd_ps(_mm512_loadu_ps(row + j), vscale, _mm512_loadu_ps(w.bias.data() + j));
      _mm512_storeu_ps(row + j, x);
      most = _mm512_max_ps(most, x);
    }
    w.inv_sum[r] = 1.0f / attention_tiles::ExpRow(row, tp, _mm512_reduce_max_ps(most),
                                                  w.weights.data() + r * tp);
  }
}

// One bf16 head of dh 32 or 64: rows q, k, v of the stacked projection (`ld` apart), the context
// to `out`. Tiles: 0-3 sums, 4-5 first operands, 6-7 (and 2-3 while scoring) second operands.
LONGQA_AMX void AttendHeadAmx(const at::BFloat16* q, const at::BFloat16* k, const at::BFloat16* v,
                              int64_t ld, int64_t t, int64_t dh, const bool* valid,
                              at::BFloat16* out, int64_t out_ld, AmxScratch& w) {
  const int64_t tp = (t + 31) / 32 * 32, tq = (t + 15) / 16 * 16;
  for (int64_t i = 0; i < tq; ++i) {
    for (int64_t c = 0; c < dh; c += 16) {
      const __mmask16 m = i < t ? static_cast<__mmask16>(0xffff) : 0;
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(w.q.data() + i * dh + c),
                          _mm256_maskz_loadu_epi16(m, q + i * ld + c));
    }
  }
  PackPairs(k, v, ld, t, tp, dh, w);
  FillKeyBias(valid, t, tp, w.bias.data());
  const float scale = 1.0f / std::sqrt(static_cast<float>(dh));
  const bool wide = dh == 64;
  for (int64_t i0 = 0; i0 < t; i0 += kTile) {
    // Scores of 16 queries, 16 keys a tile: 32 features a multiply.
    _tile_loadd(4, w.q.data() + i0 * dh, dh * 2);
    if (wide) _tile_loadd(5, w.q.data() + i0 * dh + 32, dh * 2);
    // Two key blocks a step (tp is a multiple of 32) into two sums, so the multiplies overlap.
    for (int64_t j0 = 0; j0 < tp; j0 += 2 * kTile) {
      const uint32_t* pairs = w.key_pairs.data() + j0;
      _tile_zero(0);
      _tile_zero(1);
      _tile_loadd(6, pairs, tp * 4);
      _tile_loadd(7, pairs + kTile, tp * 4);
      _tile_dpbf16ps(0, 4, 6);
      _tile_dpbf16ps(1, 4, 7);
      if (wide) {  // features 32-63
        _tile_loadd(2, pairs + 16 * tp, tp * 4);
        _tile_loadd(3, pairs + 16 * tp + kTile, tp * 4);
        _tile_dpbf16ps(0, 5, 2);
        _tile_dpbf16ps(1, 5, 3);
      }
      _tile_stored(0, w.scores.data() + j0, tp * 4);
      _tile_stored(1, w.scores.data() + j0 + kTile, tp * 4);
    }
    SoftmaxNumerators(w, tp, scale);
    // Weighted sum: 32 keys a multiply, 16 features a tile.
    _tile_zero(0);
    _tile_zero(1);
    if (wide) {
      _tile_zero(2);
      _tile_zero(3);
    }
    for (int64_t j0 = 0; j0 < tp; j0 += 32) {
      const uint32_t* pairs = w.value_pairs.data() + (j0 / 2) * dh;
      _tile_loadd(4, w.weights.data() + j0, tp * 2);
      _tile_loadd(6, pairs, dh * 4);
      _tile_dpbf16ps(0, 4, 6);
      _tile_loadd(7, pairs + 16, dh * 4);
      _tile_dpbf16ps(1, 4, 7);
      if (wide) {
        _tile_loadd(6, pairs + 32, dh * 4);
        _tile_dpbf16ps(2, 4, 6);
        _tile_loadd(7, pairs + 48, dh * 4);
        _tile_dpbf16ps(3, 4, 7);
      }
    }
    float* context = w.context.data();
    _tile_stored(0, context, dh * 4);
    _tile_stored(1, context + 16, dh * 4);
    if (wide) {
      _tile_stored(2, context + 32, dh * 4);
      _tile_stored(3, context + 48, dh * 4);
    }
    for (int64_t r = 0; r < std::min(kTile, t - i0); ++r) {
      const __m512 inv = _mm512_set1_ps(w.inv_sum[r]);
      for (int64_t f = 0; f < dh; f += 16) {
        simd::Store(out + (i0 + r) * out_ld + f,
                    _mm512_mul_ps(_mm512_loadu_ps(context + r * dh + f), inv), 0xffff);
      }
    }
  }
}

bool UsesAmx(const at::Tensor& qkv, int64_t dh) {
  return qkv.scalar_type() == at::kBFloat16 && (dh == 32 || dh == 64) && AmxUsable();
}

// The form that computes qkv's attention: AVX-512 (then AMX where UsesAmx says so) on CPUs with
// the fused ops; AVX2 for fp32 heads the AVX-512 forms do not take (every fp32 head on CPUs without
// AVX-512); none: LibTorch's path.
enum class Form { kNone, kAvx512, kAvx2 };

Form FormFor(const at::Tensor& qkv, int64_t heads) {
  if (!qkv.defined() || !qkv.is_cpu() ||
      (qkv.scalar_type() != at::kFloat && qkv.scalar_type() != at::kBFloat16) ||
      !qkv.is_contiguous() || qkv.requires_grad() || qkv.dim() != 3 || heads <= 0 ||
      qkv.size(2) % (3 * heads) != 0) {
    return Form::kNone;
  }
  const int64_t dh = qkv.size(2) / (3 * heads);
  if (FusedCpuOpsAvailable() && dh > 0 && dh % 16 == 0 && dh / 16 <= kMaxVectorsPerHead &&
      qkv.size(2) * 16 < (int64_t{1} << 31)) {  // the gather's int32 offsets
    return Form::kAvx512;
  }
  if (qkv.scalar_type() == at::kFloat && Avx2AttentionAvailable() &&
      Avx2AttentionTakesHeadWidth(dh)) {
    return Form::kAvx2;
  }
  return Form::kNone;
}

}  // namespace

bool FusedWindowAttentionApplies(const at::Tensor& qkv, int64_t heads) {
  return FormFor(qkv, heads) != Form::kNone;
}

bool FusedWindowAttentionTakesBf16Products(const at::Tensor& qkv, int64_t heads) {
  return qkv.defined() && qkv.scalar_type() == at::kFloat && FormFor(qkv, heads) == Form::kAvx512;
}

at::Tensor FusedWindowAttention(const at::Tensor& qkv, const at::Tensor& valid, int64_t heads,
                                bool bf16_products) {
  const Form form = FormFor(qkv, heads);
  if (form == Form::kNone || (bf16_products && form != Form::kAvx512)) {
    throw std::invalid_argument("FusedWindowAttention: not an input of the fused path");
  }
  const int64_t b = qkv.size(0), t = qkv.size(1), d = qkv.size(2) / 3, dh = d / heads;
  if (valid.dim() != 2 || valid.size(0) != b || valid.size(1) != t) {
    throw std::invalid_argument("FusedWindowAttention: valid must be [B, T]");
  }
  at::Tensor out = at::empty({b, t, d}, qkv.options());
  if (out.numel() == 0) return out;
  const at::Tensor valid_bool = valid.to(at::kCPU).to(at::kBool).contiguous();
  const bool* valid_data = valid_bool.data_ptr<bool>();
  if (form == Form::kAvx2) {
    Avx2WindowAttention(qkv.data_ptr<float>(), valid_data, b, t, d, heads, out.data_ptr<float>());
    return out;
  }
  const int64_t tp = (t + 15) / 16 * 16;
  if (UsesAmx(qkv, dh)) {  // bf16 heads only: fp32 heads with bf16_products take AVX-512
    const at::BFloat16* in = qkv.data_ptr<at::BFloat16>();
    at::BFloat16* context = out.data_ptr<at::BFloat16>();
    at::parallel_for(0, b * heads, 1, [&](int64_t begin, int64_t end) {
      const int64_t tp = (t + 31) / 32 * 32, tq = (t + 15) / 16 * 16;
      AmxScratch w;
      w.q.resize(tq * dh);
      w.weights.resize(kTile * tp);
      w.key_pairs.resize(dh / 2 * tp);
      w.value_pairs.resize(tp / 2 * dh);
      w.scores.resize(kTile * tp);
      w.context.resize(kTile * dh);
      w.bias.resize(tp);
      w.inv_sum.resize(kTile);
      LoadTileConfig();  // per thread; oneDNN configures the tiles again for its own kernels
      for (int64_t job = begin; job < end; ++job) {
        const int64_t window = job / heads, head = job % heads;
        const at::BFloat16* rows = in + window * t * 3 * d + head * dh;
        AttendHeadAmx(rows, rows + d, rows + 2 * d, 3 * d, t, dh, valid_data + window * t,
                      context + window * t * d + head * dh, d, w);
      }
      ReleaseTiles();
    });
    return out;
  }
  // arithmetic: float or at::BFloat16 (dot products), as kDotProducts.
  const auto attend = [&](auto arithmetic, const auto* in, auto* context) {
    using A = decltype(arithmetic);
    at::parallel_for(0, b * heads, 1, [&](int64_t begin, int64_t end) {
      Scratch w;
      w.scores.resize(kMaxRows * tp);
      w.bias.resize(tp);
      w.inv_sum.resize(kMaxRows);
      if constexpr (!kDotProducts<A>) {
        w.kt.resize(dh * tp);
      } else {
        w.kp.resize(dh / 2 * tp);
        w.vp.resize((t + 1) / 2 * dh);
        w.weights.resize(kMaxRows * tp);
        w.q.resize(kMaxRows * dh);
      }
      for (int64_t job = begin; job < end; ++job) {
        const int64_t window = job / heads, head = job % heads;
        const auto* rows = in + window * t * 3 * d + head * dh;
        AttendHeadOfWidth<A>(dh / 16, rows, rows + d, rows + 2 * d, 3 * d, t, tp,
                             valid_data + window * t, context + window * t * d + head * dh, d, w);
      }
    });
  };
  if (qkv.scalar_type() == at::kBFloat16) {
    attend(at::BFloat16(), qkv.data_ptr<at::BFloat16>(), out.data_ptr<at::BFloat16>());
  } else if (bf16_products) {
    attend(at::BFloat16(), qkv.data_ptr<float>(), out.data_ptr<float>());
  } else {
    attend(float(), qkv.data_ptr<float>(), out.data_ptr<float>());
  }
  return out;
}

}  // namespace longqa
