// K-Means recovers planted clusters; the greedy order follows nearest unused neighbours; the
// memory bank keeps the most recent rows.
#include "tools/kmeans.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

namespace longqa {
namespace {

TEST(KMeansTest, RecoversPlantedBlobs) {
  at::manual_seed(5);
  const int64_t k = 12, per_blob = 300, d = 32;
  const at::Tensor centres = at::randn({k, d});  // random directions: well separated in 32-d
  const at::Tensor labels = at::arange(k, at::kLong).repeat_interleave(per_blob);
  const at::Tensor points =
      centres.index_select(0, labels) * 5.0 + at::randn({k * per_blob, d}) * 0.4;
  const KMeansResult r = SphericalKMeans(points, {k, 100, 1e-6, 7});
  // Match every found cluster to the planted blob most of its points come from.
  const at::Tensor confusion = at::zeros({k, k}, at::kLong);
  confusion.index_put_({r.assignment, labels}, at::ones({k * per_blob}, at::kLong), true);
  const at::Tensor best = std::get<0>(confusion.max(1));
  const double recovered = best.sum().item<double>() / (k * per_blob);
  EXPECT_GE(recovered, 0.99);
  // The matching is one-to-one: every blob is some cluster's majority.
  const at::Tensor majority = std::get<1>(confusion.max(1));
  EXPECT_EQ(std::get<0>(at::_unique(majority)).numel(), k);
  EXPECT_GT(r.mean_cosine, 0.9);
}

TEST(KMeansTest, DeterministicForASeedWithDuplicatePoints) {
  at::manual_seed(1);
  at::Tensor points = at::randn({200, 8});
  points.narrow(0, 0, 150).copy_(points[0].expand({150, 8}));  // many duplicates
  const KMeansResult a = SphericalKMeans(points, {10, 30, 1e-6, 3});
  const KMeansResult b = SphericalKMeans(points, {10, 30, 1e-6, 3});
  EXPECT_TRUE(at::equal(a.centroids, b.centroids));
  EXPECT_TRUE(at::equal(a.assignment, b.assignment));
  EXPECT_EQ(a.centroids.size(0), 10);
  EXPECT_FALSE(a.centroids.isnan().any().item<bool>());
}

TEST(KMeansTest, GreedyOrderTakesTheNearestUnusedNeighbour) {
  at::manual_seed(2);
  const at::Tensor c = at::randn({17, 6});
  const at::Tensor ordered = GreedyNearestNeighbourOrder(c);
  const at::Tensor u = ordered / ordered.norm(2, {1}, true);
  EXPECT_TRUE(at::equal(ordered[0], c[0]));
  for (int64_t i = 0; i + 1 < 17; ++i) {
    // Successor i+1 is at least as similar to i as every later (still unused) centroid.
    const at::Tensor sims = at::matmul(u.narrow(0, i + 1, 17 - i - 1), u[i]);
    EXPECT_DOUBLE_EQ(sims[0].item<double>(), sims.max().item<double>()) << "step " << i;
  }
  // A permutation of the input rows.
  EXPECT_TRUE(at::allclose(std::get<0>(ordered.sum(1).sort()), std::get<0>(c.sum(1).sort())));
}

TEST(MemoryBankTest, KeepsTheMostRecentRows) {
  MemoryBank bank(10);
  for (int i = 0; i < 5; ++i) bank.Add(at::full({4, 2}, static_cast<float>(i)));
  const at::Tensor rows = bank.Rows();
  ASSERT_EQ(rows.size(0), 10);
  EXPECT_EQ(rows[0][0].item<float>(), 2.0f);  // rows 10..19 of 0..19: the last two of chunk 2
  EXPECT_EQ(rows[9][0].item<float>(), 4.0f);
}

}  // namespace
}  // namespace longqa
