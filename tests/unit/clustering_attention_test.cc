// Neural clustering attention, clustered attention and improved clustered attention (the N, K and
// I layers) against their papers' formulas written out densely in fp64 here: the subordinate
// matrix and its argmax, the sorted blocks as an explicit [N, N] mask, the cluster centroids and
// the N x N matrix A^t of eq. 10; the Hamming K-Means against a plain loop; Proposition 2 of the
// clustered-attention paper on random inputs; and the layers inside the Cluster-Former encoder.
// Inputs are fp64 where the code allows it: tolerance 1e-10 there, 2e-4 in the fp32 encoder.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "model/encoders/cluster_former.h"
#include "model/encoders/clustered_attention.h"
#include "model/encoders/neural_clustering_attention.h"
#include "tests/unit/reference_layers.h"
#include "tests/unit/test_model.h"

namespace longqa {
namespace {

using testing_support::SpreadWeights;
using testing_support::TinyConfig;

at::Tensor Randn(at::IntArrayRef shape) { return at::randn(shape, at::kDouble); }

double MaxAbs(const at::Tensor& a, const at::Tensor& b) {
  return (a.to(at::kDouble) - b.to(at::kDouble)).abs().max().item<double>();
}

// softmax(q k^T / sqrt(D)) of one head, q [N, D], k [M, D] → [N, M].
at::Tensor FullAttention(const at::Tensor& q, const at::Tensor& k) {
  return at::softmax(at::matmul(q, k.t()) / std::sqrt(static_cast<double>(q.size(1))), -1);
}

// ---- clustered attention (Vyas et al. 2020 §3) ----

TEST(ClusteredAttentionTest, HashBitsAreTheSignsOfTheProjections) {
  at::manual_seed(1);
  const at::Tensor q = Randn({3, 50, 8}), planes = Randn({13, 8});
  const at::Tensor codes = HashQueries(q, planes);
  for (int64_t h = 0; h < 3; ++h) {
    for (int64_t i = 0; i < 50; ++i) {
      for (int64_t b = 0; b < 13; ++b) {
        const bool above = at::dot(q[h][i], planes[b]).item<double>() > 0;
        ASSERT_EQ((codes[h][i].item<int64_t>() >> b) & 1, above ? 1 : 0);
      }
    }
  }
}

// Lloyd's algorithm in Hamming space as the header states it, one code at a time.
std::vector<int64_t> RefHammingKMeans(const std::vector<int64_t>& codes, int64_t c,
                                      int64_t iterations, int64_t bits) {
  const int64_t n = static_cast<int64_t>(codes.size());
  auto distance = [](int64_t a, int64_t b) { return __builtin_popcountll(a ^ b); };
  std::vector<int64_t> centroids(c), ids(n);
  for (int64_t j = 0; j < c; ++j) centroids[j] = codes[j * n / c];
  auto assign = [&] {
    for (int64_t i = 0; i < n; ++i) {
      ids[i] = 0;
      for (int64_t j = 1; j < c; ++j) {
        if (distance(codes[i], centroids[j]) < distance(codes[i], centroids[ids[i]])) ids[i] = j;
      }
    }
  };
  assign();
  for (int64_t it = 0; it < iterations; ++it) {
    for (int64_t j = 0; j < c; ++j) {
      int64_t members = 0;
      std::vector<int64_t> ones(bits, 0);
      for (int64_t i = 0; i < n; ++i) {
        if (ids[i] != j) continue;
        ++members;
        for (int64_t b = 0; b < bits; ++b) ones[b] += (codes[i] >> b) & 1;
      }
      for (int64_t b = 0; b < bits; ++b) {
        if (2 * ones[b] > members) centroids[j] |= int64_t{1} << b;
        if (2 * ones[b] < members) centroids[j] &= ~(int64_t{1} << b);
      }
    }
    assign();
  }
  return ids;
}

TEST(ClusteredAttentionTest, HammingKMeansIsLloydWithMajorityBits) {
  at::manual_seed(2);
  const int64_t heads = 3, n = 97, bits = 31;
  const at::Tensor codes = HashQueries(Randn({heads, n, 16}), Randn({bits, 16}));
  for (const auto& [clusters, iterations] :
       std::vector<std::pair<int64_t, int64_t>>{{1, 3}, {7, 0}, {7, 10}, {97, 2}}) {
    const at::Tensor ids = HammingKMeans(codes, clusters, iterations, bits);
    for (int64_t h = 0; h < heads; ++h) {
      const at::Tensor row = codes[h].contiguous();
      const std::vector<int64_t> want = RefHammingKMeans(
          std::vector<int64_t>(row.data_ptr<int64_t>(), row.data_ptr<int64_t>() + n), clusters,
          iterations, bits);
      EXPECT_TRUE(at::equal(ids[h], at::tensor(want, at::kLong)))
          << clusters << " clusters, " << iterations << " iterations, head " << h;
    }
  }
}

// Eqs. 3-6 and 9-10 for one head as dense matrices: the [N, N] attention matrix each query row
// gets (A^c of its cluster, or A^t).
at::Tensor RefClusteredMatrix(const at::Tensor& q, const at::Tensor& k, const at::Tensor& ids,
                              int64_t clusters, int64_t topk) {
  const int64_t n = q.size(0);
  at::Tensor out = at::zeros({n, k.size(0)}, at::kDouble);
  for (int64_t j = 0; j < clusters; ++j) {
    const at::Tensor members = (ids == j).nonzero().squeeze(1);
    if (members.numel() == 0) continue;
    const at::Tensor centroid = q.index_select(0, members).mean(0, true);
    const at::Tensor ac = FullAttention(centroid, k)[0];  // eq. 4
    for (int64_t t = 0; t < members.numel(); ++t) {
      const int64_t i = members[t].item<int64_t>();
      if (topk == 0) {
        out[i] = ac;
        continue;
      }
      // Eq. 10: T_j = the cluster's top-k keys, m̂_j their mass (eq. 9).
      const at::Tensor top = std::get<1>(ac.topk(std::min(topk, k.size(0))));
      const double mass = ac.index_select(0, top).sum().item<double>();
      const at::Tensor e =
          (at::matmul(k.index_select(0, top), q[i]) / std::sqrt(static_cast<double>(q.size(1))))
              .exp();
      at::Tensor row = ac.clone();
      row.index_put_({top}, mass * e / e.sum());
      out[i] = row;
    }
  }
  return out;
}

TEST(ClusteredAttentionTest, MatchesTheDenseFormulasForAGivenPartition) {
  at::manual_seed(3);
  const int64_t heads = 2, n = 45, d = 8, dv = 5, clusters = 6;
  const at::Tensor q = Randn({heads, n, d}), k = Randn({heads, n, d}), v = Randn({heads, n, dv});
  at::Tensor ids = at::randint(0, clusters, {heads, n}, at::kLong);
  ids[1].clamp_max_(3);  // head 1: clusters 4 and 5 empty
  for (int64_t topk : {0, 1, 7, 45, 60}) {
    const at::Tensor got = ClusteredAttentionForClusters(q, k, v, ids, clusters, topk);
    for (int64_t h = 0; h < heads; ++h) {
      const at::Tensor want =
          at::matmul(RefClusteredMatrix(q[h], k[h], ids[h], clusters, topk), v[h]);
      EXPECT_LE(MaxAbs(got[h], want), 1e-10) << "topk " << topk << " head " << h;
    }
  }
}

TEST(ClusteredAttentionTest, ImprovedWithEveryKeyIsFullAttention) {
  at::manual_seed(4);
  const at::Tensor q = Randn({2, 33, 8}), k = Randn({2, 33, 8}), v = Randn({2, 33, 8});
  const at::Tensor got = ClusteredAttention(q, k, v, Randn({20, 8}), {5, 3, /*topk=*/33});
  for (int64_t h = 0; h < 2; ++h) {
    EXPECT_LE(MaxAbs(got[h], at::matmul(FullAttention(q[h], k[h]), v[h])), 1e-10);
  }
}

// Proposition 2: for query i of cluster j, ||A^t_i - A_i||_1 <= ||A^c_j - A_i||_1. With V the
// identity the layers' outputs are the attention matrices themselves, so the real code path
// (hashing, K-Means, both attentions) is what is checked.
TEST(ClusteredAttentionTest, ImprovedIsNeverFurtherFromFullAttentionInL1) {
  at::manual_seed(5);
  int64_t rows = 0, strictly_closer = 0;
  for (int64_t trial = 0; trial < 40; ++trial) {
    const int64_t heads = 2, n = 20 + trial * 3, d = 4 + trial % 5;
    const double spread = 0.5 + 0.25 * (trial % 8);  // sharper and flatter attention
    const at::Tensor q = Randn({heads, n, d}) * spread, k = Randn({heads, n, d}) * spread;
    const at::Tensor identity = at::eye(n, at::kDouble).expand({heads, n, n});
    const at::Tensor planes = Randn({1 + trial % 20, d});
    const int64_t clusters = 1 + trial % 9, topk = 1 + trial % 12;
    const at::Tensor ac = ClusteredAttention(q, k, identity, planes, {clusters, 5, 0});
    const at::Tensor at_ = ClusteredAttention(q, k, identity, planes, {clusters, 5, topk});
    for (int64_t h = 0; h < heads; ++h) {
      const at::Tensor full = FullAttention(q[h], k[h]);
      const at::Tensor improved = (at_[h] - full).abs().sum(1);
      const at::Tensor clustered = (ac[h] - full).abs().sum(1);
      ASSERT_LE((improved - clustered).max().item<double>(), 1e-12)
          << "trial " << trial << " head " << h;
      rows += n;
      strictly_closer += (improved < clustered - 1e-12).sum().item<int64_t>();
    }
  }
  // Not a bound of the proposition, but what a working top-k must show on random inputs.
  EXPECT_GT(strictly_closer, rows / 2) << strictly_closer << " of " << rows;
}

// ---- neural clustering attention (Wang et al. 2022 §3.1-3.2) ----

TEST(NeuralClusteringAttentionTest, ClusterIdsAreTheArgmaxOfTheSubordinateMatrix) {
  at::manual_seed(6);
  const int64_t n = 70, d = 12, k = 9;
  const at::Tensor x = Randn({n, d}), projection = Randn({d, d}) * 0.3, centroids = Randn({k, d});
  const at::Tensor ids = NeuralClusterIds(x, projection, centroids);
  // Eq. 2: U_ij = exp(C_i . X_j W^C) / sum over j; eq. 4: I_j = argmax_i U_ij.
  const at::Tensor xw = at::matmul(x, projection.t());
  const at::Tensor e = at::matmul(centroids, xw.t()).exp();
  const at::Tensor u = e / e.sum(1, true);
  EXPECT_TRUE(at::equal(ids, u.argmax(0)));
  // The normalisation over j matters: the raw scores' argmax differs somewhere.
  EXPECT_FALSE(at::equal(ids, at::matmul(centroids, xw.t()).argmax(0)));
}

// Eqs. 5-10 as one dense masked attention: query i may see key j when j's block (in the stable
// order by cluster id) is i's block or the one before it (circularly).
at::Tensor RefNeuralClusteringAttention(const at::Tensor& q, const at::Tensor& k,
                                        const at::Tensor& v, const std::vector<int64_t>& ids,
                                        int64_t clusters) {
  const int64_t n = q.size(0), heads = q.size(1), d = q.size(2);
  std::vector<int64_t> order(n), block(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return ids[a] < ids[b]; });
  const int64_t w = (n + clusters - 1) / clusters, blocks = (n + w - 1) / w;
  for (int64_t p = 0; p < n; ++p) block[order[p]] = p / w;
  at::Tensor allowed = at::zeros({n, n}, at::kBool);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      allowed[i][j] = block[j] == block[i] || block[j] == (block[i] + blocks - 1) % blocks;
    }
  }
  std::vector<at::Tensor> out;
  for (int64_t h = 0; h < heads; ++h) {
    const at::Tensor scores =
        at::matmul(q.select(1, h), k.select(1, h).t()) / std::sqrt(static_cast<double>(d));
    const at::Tensor e = scores.exp() * allowed.to(at::kDouble);
    out.push_back(at::matmul(e / e.sum(1, true), v.select(1, h)));
  }
  return at::stack(out, 1);
}

TEST(NeuralClusteringAttentionTest, MatchesTheDenseMaskedFormula) {
  at::manual_seed(7);
  // n divisible by w or not, one block, two blocks (each the other's previous), empty clusters.
  for (const auto& [n, clusters] : std::vector<std::pair<int64_t, int64_t>>{
           {60, 6}, {61, 6}, {17, 1}, {20, 2}, {9, 20}, {50, 7}}) {
    const at::Tensor q = Randn({n, 3, 4}), k = Randn({n, 3, 4}), v = Randn({n, 3, 4});
    at::Tensor ids = at::randint(0, std::max<int64_t>(1, clusters - 1), {n}, at::kLong);
    const at::Tensor got = NeuralClusteringAttention(q, k, v, ids, clusters);
    const std::vector<int64_t> id_list(ids.data_ptr<int64_t>(), ids.data_ptr<int64_t>() + n);
    EXPECT_LE(MaxAbs(got, RefNeuralClusteringAttention(q, k, v, id_list, clusters)), 1e-10)
        << n << " rows, " << clusters << " clusters";
  }
}

// ---- the layers inside the Cluster-Former encoder ----

WindowInput Input(int64_t q, int64_t x, uint64_t seed) {
  std::srand(static_cast<unsigned>(seed));
  WindowInput in;
  in.question.push_back(0);
  for (int64_t i = 0; i < q - 2; ++i) in.question.push_back(5 + std::rand() % 115);
  in.question.push_back(2);
  for (int64_t i = 0; i < x; ++i) in.context.push_back(i % 17 == 0 ? 4 : 5 + std::rand() % 115);
  return in;
}

// With one cluster (N) or every key recomputed (I), the second layer is full attention over the
// request's merged rows: the reference layer over the first layer's output.
TEST(ClusteringAttentionLayersTest, DegenerateSettingsAreFullAttentionOverTheMergedRows) {
  const WindowInput input = Input(5, 40, 8);
  ModelConfig one_layer = TinyConfig("S", 16, 12);
  const WindowPlan plan = PlanWindows({input}, 16, 12, one_layer.special.pad);
  for (const char* layers : {"SN", "SI"}) {
    SCOPED_TRACE(layers);
    ModelConfig c = TinyConfig(layers, 16, 12, /*clusters_per_layer=*/1);
    c.clustered.topk = plan.num_rows;
    const TensorMap w = SpreadWeights(c, 9);
    at::InferenceMode guard;
    const at::Tensor first = ClusterFormerEncoder(one_layer, w).Forward(plan, at::kCPU);
    const at::Tensor want = RefLayer(w, c, 1, first.to(at::kDouble));
    EXPECT_LE(MaxAbs(ClusterFormerEncoder(c, w).Forward(plan, at::kCPU), want), 2e-4);
  }
}

TEST(ClusteringAttentionLayersTest, EachRequestOfABatchIsItsOwnSequence) {
  ModelConfig c = TinyConfig("SNSKSI", 16, 12, /*clusters_per_layer=*/3);
  c.clustered = {/*clusters=*/4, /*bits=*/20, /*iterations=*/4, /*topk=*/5};
  ASSERT_TRUE(ValidateModelConfig(c).ok()) << ValidateModelConfig(c).message();
  const TensorMap w = SpreadWeights(c, 10);
  const ClusterFormerEncoder encoder(c, w);
  const std::vector<WindowInput> inputs = {Input(5, 70, 11), Input(9, 3, 12), Input(4, 33, 13)};
  at::InferenceMode guard;
  const WindowPlan batch = PlanWindows(inputs, 16, 12, c.special.pad);
  const at::Tensor together = encoder.Forward(batch, at::kCPU);
  ASSERT_TRUE(together.isfinite().all().item<bool>());
  for (size_t r = 0; r < inputs.size(); ++r) {
    const at::Tensor alone =
        encoder.Forward(PlanWindows({inputs[r]}, 16, 12, c.special.pad), at::kCPU);
    const int64_t begin = batch.rows_begin[r], rows = batch.rows_begin[r + 1] - begin;
    EXPECT_LE(MaxAbs(together.narrow(0, begin, rows), alone), 1e-5) << "request " << r;
  }
}

}  // namespace
}  // namespace longqa
