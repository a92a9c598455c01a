// FusedEtcLongAttention and FusedEtcGlobalAttention (model/encoders/fused_etc_attention.h)
// against ETC's formulas in fp64, written per row with plain LibTorch ops on random inputs: random
// label tables (labels beyond the radius, -1, anywhere), empty slots at the document's ends, own
// ranges of 0 to 3 global keys (of 0 to 40 long keys for the global queries, with and without the
// hard mask), global counts and head widths that are not multiples of the kernels' 16 columns,
// padding rows in the last block, more long keys than a chunk of the online softmax, and a range
// of blocks or rows (the rest untouched). The fp64 reference reads the same (bf16) inputs. Both
// forms: AVX-512 (fp32 and bf16 heads of 16-128 features) and AVX2 (fp32 heads of 8-64, run here
// with EtcKernelIsa::kAvx2 on AVX-512 CPUs too).
// Tolerances, values in [-1, 1]: fp32 heads 2e-5 absolute (sums of a few hundred terms); bf16
// heads 8e-3 into an fp32 output (fp32 heads into a bf16 output: 8e-3 too, its rounding) (the
// weights rounded to bf16 for the dot products: each within 2^-8 of itself, so the context within
// 2^-8 of the sum of |v| they weigh; twice that bound) and 2e-2 into a bf16 output (its rounding on
// top). The encoder that uses them: etc_test's heads of 16 and 64 features.
#include "model/encoders/fused_etc_attention.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "kernels/etc_score_bias.h"
#include "model/encoders/fused_cpu_attention_avx2.h"
#include "model/encoders/fused_cpu_ops.h"

namespace longqa {
namespace {

struct Case {
  int64_t heads, dh, n_g, n_l, block, labels;
};

// The kernels' forms this CPU runs, and whether a form takes a case's head width and dtype.
struct Form {
  EtcKernelIsa isa;
  const char* name;
};

std::vector<Form> FormsOfThisCpu() {
  std::vector<Form> forms;
  if (FusedCpuOpsAvailable()) forms.push_back({EtcKernelIsa::kAuto, "AVX-512"});
  if (Avx2AttentionAvailable()) forms.push_back({EtcKernelIsa::kAvx2, "AVX2"});
  return forms;
}

bool FormTakes(const Form& form, int64_t dh, at::ScalarType dtype) {
  if (form.isa == EtcKernelIsa::kAvx2) return dtype == at::kFloat && dh % 8 == 0 && dh <= 64;
  return dh % 16 == 0;
}

struct Inputs {
  EtcLongAttentionInputs fused;
  at::Tensor long_k, long_v;  // [h, n_l, dh], the rows the padded buffers hold
};

// The padded head-major buffer of the header: `block` zero rows, each head's n_pad rows (zero
// past n_l), `block` zero rows.
at::Tensor Padded(const at::Tensor& rows, int64_t n_pad, int64_t block) {
  const int64_t h = rows.size(0), n_l = rows.size(1), dh = rows.size(2);
  at::Tensor buffer = at::zeros({h * n_pad + 2 * block, dh}, rows.options());
  buffer.narrow(0, block, h * n_pad).view({h, n_pad, dh}).narrow(1, 0, n_l).copy_(rows);
  return buffer;
}

Inputs RandomInputs(const Case& c, at::ScalarType dtype, uint64_t seed) {
  at::manual_seed(seed);
  const int64_t nb = (c.n_l + c.block - 1) / c.block, n_pad = nb * c.block, slots = 3 * c.block;
  const auto random = [&](std::vector<int64_t> sizes) {
    return (at::rand(sizes, at::kDouble) * 2 - 1).to(dtype);
  };
  Inputs in;
  EtcLongAttentionInputs& f = in.fused;
  f.queries = random({c.heads, n_pad, c.dh});
  f.queries.narrow(1, c.n_l, n_pad - c.n_l).zero_();
  f.global_keys = random({c.heads, c.n_g, c.dh});
  f.global_values = random({c.heads, c.n_g, c.dh});
  in.long_k = random({c.heads, c.n_l, c.dh});
  in.long_v = random({c.heads, c.n_l, c.dh});
  f.long_keys = Padded(in.long_k, n_pad, c.block);
  f.long_values = Padded(in.long_v, n_pad, c.block);
  f.relative_keys = random({c.heads, c.labels, c.dh});
  f.part_of = c.labels - 2;
  f.not_part_of = c.labels - 1;
  // Own ranges: none for a quarter of the rows, else 0 to 3 keys from a random start.
  const at::Tensor lo = at::randint(-c.n_g / 3, c.n_g, {n_pad}, at::kLong).clamp_min(-1);
  f.own_lo = lo;
  f.own_hi = at::where(lo.ge(0), (lo + at::randint(0, 4, {n_pad}, at::kLong)).clamp_max(c.n_g),
                       at::full({n_pad}, -1, at::kLong));
  f.local_labels = at::randint(-1, c.labels - 2, {c.block, slots}, at::kLong);
  std::vector<int64_t> index(nb * slots);
  for (int64_t k = 0; k < nb; ++k) {
    for (int64_t s = 0; s < slots; ++s) {
      const int64_t j = (k - 1) * c.block + s;
      index[k * slots + s] = j >= 0 && j < c.n_l ? j : -1;
    }
  }
  f.block_index = at::tensor(index, at::kLong);
  f.block = c.block;
  f.n_l = c.n_l;
  return in;
}

// Long row i's context [h, dh] in fp64, one row at a time: scores over the globals and the row's
// block's slots, each plus its label's q·a_K (kEtcMaskedScore where the slot is empty or the
// label -1), softmax, times the values.
at::Tensor ReferenceRow(const Inputs& in, int64_t i) {
  const EtcLongAttentionInputs& f = in.fused;
  const int64_t b = f.block, slots = 3 * b, k = i / b;
  const at::Tensor q = f.queries.select(1, i).to(at::kDouble);  // [h, dh]
  const at::Tensor qa = at::bmm(q.unsqueeze(1), f.relative_keys.to(at::kDouble).transpose(1, 2))
                            .squeeze(1);  // [h, L]
  const int64_t lo = f.own_lo[i].item<int64_t>(), hi = f.own_hi[i].item<int64_t>();
  const int64_t n_g = f.global_keys.size(1);
  std::vector<at::Tensor> scores, values;
  for (int64_t g = 0; g < n_g; ++g) {
    const bool own = lo >= 0 && g >= lo && g < hi;
    scores.push_back((q * f.global_keys.select(1, g).to(at::kDouble)).sum(-1) +
                     qa.select(1, own ? f.part_of : f.not_part_of));
    values.push_back(f.global_values.select(1, g).to(at::kDouble));
  }
  for (int64_t s = 0; s < slots; ++s) {
    const int64_t j = f.block_index[k * slots + s].item<int64_t>();
    const int64_t label = f.local_labels[i % b][s].item<int64_t>();
    if (j < 0 || label < 0) {
      scores.push_back(at::full({q.size(0)}, double{kernels::kEtcMaskedScore}, at::kDouble));
      values.push_back(at::zeros_like(q));
      continue;
    }
    scores.push_back((q * in.long_k.select(1, j).to(at::kDouble)).sum(-1) + qa.select(1, label));
    values.push_back(in.long_v.select(1, j).to(at::kDouble));
  }
  const at::Tensor weights = at::softmax(at::stack(scores, 1), 1);  // [h, keys]
  return (weights.unsqueeze(2) * at::stack(values, 1)).sum(1);      // [h, dh]
}

TEST(FusedEtcAttentionTest, MatchesTheFormulaInFp64) {
  const std::vector<Form> forms = FormsOfThisCpu();
  if (forms.empty()) {
    EtcLongAttentionInputs f = RandomInputs({1, 16, 3, 5, 2, 4}, at::kFloat, 1).fused;
    EXPECT_FALSE(FusedEtcLongAttentionApplies(f));
    GTEST_SKIP() << "this CPU has neither AVX-512 nor AVX2: the fused kernels are not used";
  }
  const std::vector<Case> cases = {{2, 16, 3, 50, 5, 9},   {3, 64, 17, 100, 12, 27},
                                   {1, 128, 1, 7, 4, 5},   {2, 32, 40, 90, 85, 27},
                                   {2, 48, 16, 33, 8, 12}, {1, 112, 5, 64, 16, 6},
                                   {2, 8, 9, 41, 7, 10},   {1, 24, 4, 30, 6, 8}};
  uint64_t seed = 5;
  for (const Form& form : forms) {
    for (const Case& c : cases) {
      for (const auto& [dtype, out_dtype] :
           std::vector<std::pair<at::ScalarType, at::ScalarType>>{{at::kFloat, at::kFloat},
                                                                  {at::kFloat, at::kBFloat16},
                                                                  {at::kBFloat16, at::kBFloat16},
                                                                  {at::kBFloat16, at::kFloat}}) {
        if (!FormTakes(form, c.dh, dtype)) continue;
        SCOPED_TRACE(testing::Message()
                     << form.name << " h " << c.heads << " dh " << c.dh << " n_g " << c.n_g
                     << " n_l " << c.n_l << " block " << c.block << " " << c10::toString(dtype)
                     << " into " << c10::toString(out_dtype));
        const Inputs in = RandomInputs(c, dtype, ++seed);
        ASSERT_TRUE(FusedEtcLongAttentionApplies(in.fused, form.isa));
        const int64_t nb = (c.n_l + c.block - 1) / c.block;
        // Blocks [1, nb - 1) first (all of them for one block), then the rest.
        const int64_t b0 = nb > 2 ? 1 : 0, blocks = nb > 2 ? nb - 2 : nb;
        at::Tensor out = at::full({c.n_l, c.heads * c.dh}, 7.0, out_dtype);
        FusedEtcLongAttention(in.fused, b0, blocks, out, form.isa);
        const int64_t first = b0 * c.block, last = std::min(c.n_l, (b0 + blocks) * c.block);
        for (int64_t i = 0; i < c.n_l; ++i) {
          if (i >= first && i < last) continue;
          ASSERT_TRUE(out[i].eq(7.0).all().item<bool>()) << "row " << i << " outside the range";
        }
        if (nb > 2) {
          FusedEtcLongAttention(in.fused, 0, 1, out, form.isa);
          FusedEtcLongAttention(in.fused, nb - 1, 1, out, form.isa);
        }
        const double tolerance = dtype == at::kFloat       ? (out_dtype == at::kFloat ? 2e-5 : 8e-3)
                                 : out_dtype == at::kFloat ? 8e-3
                                                           : 2e-2;
        double worst = 0;
        for (int64_t i = 0; i < c.n_l; ++i) {
          const at::Tensor got = out[i].to(at::kDouble).view({c.heads, c.dh});
          worst = std::max(worst, (got - ReferenceRow(in, i)).abs().max().item<double>());
        }
        EXPECT_LE(worst, tolerance);
      }
    }
  }
}

// The global queries' inputs over the same keys and values: random g2g labels (some -1), own
// ranges of long keys (none for some rows; the hard mask hides the rest of a row that has one).
EtcGlobalAttentionInputs GlobalInputs(const Inputs& in, bool mask_outside, uint64_t seed) {
  at::manual_seed(seed);
  const EtcLongAttentionInputs& f = in.fused;
  const int64_t n_g = f.global_keys.size(1), labels = f.relative_keys.size(1);
  EtcGlobalAttentionInputs g;
  g.queries = (at::rand(f.global_keys.sizes(), at::kDouble) * 2 - 1).to(f.queries.scalar_type());
  g.global_keys = f.global_keys;
  g.global_values = f.global_values;
  g.long_keys = f.long_keys;
  g.long_values = f.long_values;
  g.relative_keys = f.relative_keys;
  g.g2g_labels = at::randint(-1, labels - 2, {n_g, n_g}, at::kLong);
  const at::Tensor lo = at::randint(-f.n_l / 3, f.n_l, {n_g}, at::kLong).clamp_min(-1);
  g.own_lo = lo;
  g.own_hi = at::where(lo.ge(0), (lo + at::randint(0, 40, {n_g}, at::kLong)).clamp_max(f.n_l),
                       at::full({n_g}, -1, at::kLong));
  g.part_of = f.part_of;
  g.not_part_of = f.not_part_of;
  g.mask_outside = mask_outside;
  g.block = f.block;
  g.n_l = f.n_l;
  return g;
}

// Global row i's context [h, dh] in fp64: every global key (its g2g label's term, or masked) and
// every long key (the membership term; masked outside the row's range under the hard mask).
at::Tensor ReferenceGlobalRow(const Inputs& in, const EtcGlobalAttentionInputs& g, int64_t i) {
  const at::Tensor q = g.queries.select(1, i).to(at::kDouble);  // [h, dh]
  const at::Tensor qa =
      at::bmm(q.unsqueeze(1), g.relative_keys.to(at::kDouble).transpose(1, 2)).squeeze(1);
  const at::Tensor labels = g.g2g_labels[i];
  const at::Tensor global_scores =
      at::bmm(q.unsqueeze(1), g.global_keys.to(at::kDouble).transpose(1, 2)).squeeze(1) +
      qa.index_select(1, labels.clamp_min(0));
  const int64_t lo = g.own_lo[i].item<int64_t>(), hi = g.own_hi[i].item<int64_t>();
  const at::Tensor key = at::arange(g.n_l, at::kLong);
  const at::Tensor own =
      lo >= 0 ? key.ge(lo).logical_and(key.lt(hi)) : at::zeros_like(key).to(at::kBool);
  at::Tensor long_scores =
      at::bmm(q.unsqueeze(1), in.long_k.to(at::kDouble).transpose(1, 2)).squeeze(1) +
      at::where(own, qa.select(1, g.part_of).unsqueeze(1),
                qa.select(1, g.not_part_of).unsqueeze(1));
  if (g.mask_outside && lo >= 0) {
    long_scores = long_scores.masked_fill(own.logical_not(), kernels::kEtcMaskedScore);
  }
  const at::Tensor scores =
      at::cat({global_scores.masked_fill(labels.lt(0), kernels::kEtcMaskedScore), long_scores}, 1);
  const at::Tensor values =
      at::cat({g.global_values, in.long_v}, 1).to(at::kDouble);  // [h, keys, dh]
  return at::bmm(at::softmax(scores, 1).unsqueeze(1), values).squeeze(1);
}

TEST(FusedEtcAttentionTest, GlobalQueriesMatchTheFormulaInFp64) {
  const std::vector<Form> forms = FormsOfThisCpu();
  if (forms.empty()) GTEST_SKIP() << "neither AVX-512 nor AVX2: the fused kernels are not used";
  // More long keys than a key chunk (256) and global rows than a task (32), so the online softmax
  // and the row groups are exercised; out in fp32 for bf16 heads too (the encoder's bf16 layers).
  const std::vector<Case> cases = {{2, 16, 3, 50, 5, 9},    {3, 64, 45, 600, 12, 27},
                                   {1, 128, 1, 7, 4, 5},    {2, 32, 70, 300, 85, 27},
                                   {1, 48, 33, 257, 8, 12}, {2, 8, 37, 270, 6, 10},
                                   {1, 40, 5, 20, 4, 7}};
  uint64_t seed = 40;
  for (const Form& form : forms) {
    for (const Case& c : cases) {
      for (const at::ScalarType dtype : {at::kFloat, at::kBFloat16}) {
        if (!FormTakes(form, c.dh, dtype)) continue;
        for (const bool mask_outside : {false, true}) {
          SCOPED_TRACE(testing::Message()
                       << form.name << " h " << c.heads << " dh " << c.dh << " n_g " << c.n_g
                       << " n_l " << c.n_l << " " << c10::toString(dtype)
                       << (mask_outside ? " hard mask" : ""));
          const Inputs in = RandomInputs(c, dtype, ++seed);
          const EtcGlobalAttentionInputs g = GlobalInputs(in, mask_outside, ++seed);
          ASSERT_TRUE(FusedEtcGlobalAttentionApplies(g, form.isa));
          // fp32 heads into a bf16 context with the hard mask (the rounding of the output).
          const at::ScalarType out_dtype =
              dtype == at::kFloat && mask_outside ? at::kBFloat16 : at::kFloat;
          at::Tensor out = at::full({c.n_g, c.heads * c.dh}, 7.0, out_dtype);
          const int64_t r0 = c.n_g > 2 ? 1 : 0, rows = c.n_g > 2 ? c.n_g - 2 : c.n_g;
          FusedEtcGlobalAttention(g, r0, rows, out, form.isa);
          for (int64_t i = 0; i < c.n_g; ++i) {
            if (i >= r0 && i < r0 + rows) continue;
            ASSERT_TRUE(out[i].eq(7.0).all().item<bool>()) << "row " << i << " outside the range";
          }
          if (c.n_g > 2) {
            FusedEtcGlobalAttention(g, 0, 1, out, form.isa);
            FusedEtcGlobalAttention(g, c.n_g - 1, 1, out, form.isa);
          }
          double worst = 0;
          for (int64_t i = 0; i < c.n_g; ++i) {
            const at::Tensor got = out[i].to(at::kDouble).view({c.heads, c.dh});
            worst =
                std::max(worst, (got - ReferenceGlobalRow(in, g, i)).abs().max().item<double>());
          }
          EXPECT_LE(worst, dtype == at::kFloat && out_dtype == at::kFloat ? 2e-5 : 8e-3);
        }
      }
    }
  }
}

TEST(FusedEtcAttentionTest, RejectsWhatItDoesNotCompute) {
  EtcLongAttentionInputs f = RandomInputs({1, 16, 3, 5, 2, 4}, at::kFloat, 2).fused;
  EtcLongAttentionInputs doubles = f;
  doubles.queries = f.queries.to(at::kDouble);
  EXPECT_FALSE(FusedEtcLongAttentionApplies(doubles));
  EXPECT_FALSE(FusedEtcLongAttentionApplies(doubles, EtcKernelIsa::kAvx2));
  // Heads of 8 features: the AVX2 form's in fp32 (on AVX-512 CPUs too), nobody's in bf16.
  EtcLongAttentionInputs narrow_heads = RandomInputs({1, 8, 3, 5, 2, 4}, at::kFloat, 2).fused;
  EXPECT_EQ(FusedEtcLongAttentionApplies(narrow_heads), Avx2AttentionAvailable());
  EXPECT_FALSE(
      FusedEtcLongAttentionApplies(RandomInputs({1, 8, 3, 5, 2, 4}, at::kBFloat16, 2).fused));
  // The AVX2 form: fp32 heads of at most 64 features.
  EXPECT_FALSE(FusedEtcLongAttentionApplies(RandomInputs({1, 80, 3, 5, 2, 4}, at::kFloat, 2).fused,
                                            EtcKernelIsa::kAvx2));
  EXPECT_FALSE(FusedEtcLongAttentionApplies(
      RandomInputs({1, 16, 3, 5, 2, 4}, at::kBFloat16, 2).fused, EtcKernelIsa::kAvx2));
  for (const Form& form : FormsOfThisCpu()) {
    SCOPED_TRACE(form.name);
    at::Tensor out = at::zeros({5, 16});
    EXPECT_THROW(FusedEtcLongAttention(f, 2, 2, out, form.isa),
                 std::invalid_argument);  // 3 blocks only
    at::Tensor short_out = at::zeros({4, 16});
    EXPECT_THROW(FusedEtcLongAttention(f, 0, 1, short_out, form.isa), std::invalid_argument);
    EtcLongAttentionInputs bad_label = f;
    bad_label.local_labels = f.local_labels.clone().fill_(4);  // L = 4 labels: 0..3
    EXPECT_THROW(FusedEtcLongAttention(bad_label, 0, 1, out, form.isa), std::invalid_argument);
  }
}

}  // namespace
}  // namespace longqa
