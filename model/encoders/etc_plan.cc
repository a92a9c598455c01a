#include "model/encoders/etc_plan.h"

#include <algorithm>
#include <cstdlib>

#include "model/encoders/exact_match.h"

namespace longqa {

EtcInput MakeEtcInput(const ModelConfig& config, const std::vector<int32_t>& question_pieces,
                      const std::vector<int32_t>& document_ids,
                      const std::vector<int64_t>& token_paragraph, int64_t num_paragraphs) {
  EtcInput in;
  in.global_ids.push_back(config.special.cls);
  in.global_paragraph.push_back(-1);
  for (int32_t id : question_pieces) {
    in.global_ids.push_back(id);
    in.global_paragraph.push_back(-1);
  }
  for (int64_t p = 0; p < num_paragraphs; ++p) {
    in.global_ids.push_back(config.special.paragraph);
    in.global_paragraph.push_back(p);
  }
  in.long_ids = document_ids;
  in.long_paragraph = token_paragraph;
  if (config.exact_match_feature) in.long_match = ExactMatchFlags(question_pieces, document_ids);
  return in;
}

EtcRequestPlan PlanEtcRequest(const ModelConfig& config, const EtcInput& in) {
  const int64_t r = config.etc.radius, k = config.etc.relative_clip;
  const int64_t part_of = EtcPartOfLabel(config), not_part_of = EtcNotPartOfLabel(config);
  auto relative = [k](int64_t delta) { return std::clamp<int64_t>(delta, -k, k) + k; };
  EtcRequestPlan t;
  t.n_g = static_cast<int64_t>(in.global_ids.size());
  t.n_l = static_cast<int64_t>(in.long_ids.size());
  t.block = r + 1;
  t.num_blocks = std::max<int64_t>(1, (t.n_l + t.block - 1) / t.block);
  const int64_t b = t.block, nb = t.num_blocks, n_pad = nb * b;

  t.block_index.resize(nb * 3 * b);
  for (int64_t blk = 0; blk < nb; ++blk) {
    for (int64_t s = 0; s < 3 * b; ++s) {
      const int64_t j = (blk - 1) * b + s;
      t.block_index[blk * 3 * b + s] = (j >= 0 && j < t.n_l) ? j : -1;
    }
  }
  t.local_labels.resize(b * 3 * b);
  t.local_valid.resize(nb * b * 3 * b);
  for (int64_t q = 0; q < b; ++q) {
    for (int64_t s = 0; s < 3 * b; ++s) {
      const int64_t delta = s - b - q;  // key position minus query position
      t.local_labels[q * 3 * b + s] = std::abs(delta) <= r ? relative(delta) : -1;
      for (int64_t blk = 0; blk < nb; ++blk) {
        t.local_valid[(blk * b + q) * 3 * b + s] =
            std::abs(delta) <= r && t.block_index[blk * 3 * b + s] >= 0;
      }
    }
  }
  auto own = [&in](int64_t g, int64_t j) {
    return in.global_paragraph[g] >= 0 && in.global_paragraph[g] == in.long_paragraph[j];
  };
  t.l2g_labels.assign(n_pad * t.n_g, not_part_of);
  for (int64_t j = 0; j < t.n_l; ++j) {
    for (int64_t g = 0; g < t.n_g; ++g) {
      if (own(g, j)) t.l2g_labels[j * t.n_g + g] = part_of;
    }
  }
  const int64_t keys = t.n_g + t.n_l;
  t.global_labels.resize(t.n_g * keys);
  t.global_valid.assign(t.n_g * keys, 1);
  for (int64_t g = 0; g < t.n_g; ++g) {
    for (int64_t g2 = 0; g2 < t.n_g; ++g2) t.global_labels[g * keys + g2] = relative(g2 - g);
    for (int64_t j = 0; j < t.n_l; ++j) {
      t.global_labels[g * keys + t.n_g + j] = own(g, j) ? part_of : not_part_of;
      if (config.etc.hard_g2l_mask && in.global_paragraph[g] >= 0 && !own(g, j)) {
        t.global_valid[g * keys + t.n_g + j] = 0;
      }
    }
  }
  return t;
}

}  // namespace longqa
