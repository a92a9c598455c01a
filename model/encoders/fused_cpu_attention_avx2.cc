#include "model/encoders/fused_cpu_attention_avx2.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "model/encoders/attention_key_bias.h"
#include "model/encoders/avx2_attention_tiles.h"

namespace longqa {
namespace {

using avx2_tiles::kRows;

// A task's buffers: the keys transposed [dh][tp], the values [t][dh] (contiguous: in the stacked
// projection their rows are 3d floats apart, a stride that maps them onto a few L1 sets, and the
// weighted sum of every row block reads them all), a block of query rows' scores [kRows][tp], the
// key bias [tp] and the rows' 1 / sum of exponentials.
struct Scratch {
  std::vector<float> kt, v, scores, bias, inv_sum;
};

// One head of one window: queries rows `ld` floats apart (the stacked projection), values rows
// `v_ld` apart (the task's copy), t tokens, tp = t rounded up to 8, the context rows `out_ld`
// apart.
struct Head {
  const float* q;
  const float* v;
  int64_t ld, v_ld, t, tp;
  float* out;
  int64_t out_ld;
};

// Query rows [i0, i0 + R) of one head: scores (in L1), softmax, weighted sum into the context.
template <int NV, int R>
LONGQA_AVX2 void RowBlock(const Head& h, int64_t i0, Scratch& w) {
  constexpr int64_t dh = 8 * NV;
  const __m256 scale = _mm256_set1_ps(1.0f / std::sqrt(static_cast<float>(dh)));
  float* scores = w.scores.data();
  avx2_tiles::ScoreRows<R>(h.q + i0 * h.ld, h.ld, w.kt.data(), h.tp, dh, scale, w.bias.data(),
                           scores);
  avx2_tiles::ExpRows(scores, R, h.tp, w.inv_sum.data());
  const avx2_tiles::ValueRows values[] = {{h.v, h.v_ld, h.t, 0}};
  avx2_tiles::WeightedSum<NV, R>(scores, h.tp, values, w.inv_sum.data(), nullptr,
                                 h.out + i0 * h.out_ld, h.out_ld);
}

template <int NV, int R>
LONGQA_AVX2 void RowBlockOf(int rows, const Head& h, int64_t i0, Scratch& w) {
  if constexpr (R > 1) {
    if (rows < R) return RowBlockOf<NV, R - 1>(rows, h, i0, w);
  }
  RowBlock<NV, R>(h, i0, w);
}

template <int NV>
LONGQA_AVX2 void AttendHead(const Head& h, Scratch& w) {
  for (int64_t i0 = 0; i0 < h.t; i0 += kRows) {
    RowBlockOf<NV, kRows>(static_cast<int>(std::min<int64_t>(kRows, h.t - i0)), h, i0, w);
  }
}

}  // namespace

bool Avx2AttentionAvailable() {
  static const bool available = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return available;
}

bool Avx2AttentionTakesHeadWidth(int64_t dh) {
  return dh > 0 && dh % 8 == 0 && dh / 8 <= avx2_tiles::kMaxVectorsPerHead;
}

void Avx2WindowAttention(const float* qkv, const bool* valid, int64_t b, int64_t t, int64_t d,
                         int64_t heads, float* out) {
  const int64_t dh = d / heads;
  if (!Avx2AttentionAvailable() || !Avx2AttentionTakesHeadWidth(dh) || dh * heads != d) {
    throw std::logic_error("Avx2WindowAttention: not an input of this form");
  }
  const int64_t tp = (t + 7) / 8 * 8;
  at::parallel_for(0, b * heads, 1, [&](int64_t begin, int64_t end) {
    Scratch w;
    w.kt.resize(dh * tp);
    w.v.resize(t * dh);
    w.scores.resize(kRows * tp);
    w.bias.resize(tp);
    w.inv_sum.resize(kRows);
    for (int64_t job = begin; job < end; ++job) {
      const int64_t window = job / heads, head = job % heads;
      const float* rows = qkv + window * t * 3 * d + head * dh;
      avx2_tiles::PackKeysTransposed(rows + d, 3 * d, t, dh, w.kt.data(), tp);
      FillKeyBias(valid + window * t, t, tp, w.bias.data());
      for (int64_t j = 0; j < t; ++j) {
        std::copy_n(rows + 2 * d + j * 3 * d, dh, w.v.data() + j * dh);
      }
      const Head h{rows, w.v.data(), 3 * d, dh, t, tp, out + window * t * d + head * dh, d};
      avx2_tiles::ForVectorsPerHead(dh / 8,
                                    [&](auto nv) { AttendHead<decltype(nv)::value>(h, w); });
    }
  });
}

}  // namespace longqa
