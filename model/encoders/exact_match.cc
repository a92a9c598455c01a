#include "model/encoders/exact_match.h"

#include <cstddef>
#include <unordered_set>

namespace longqa {

std::vector<int64_t> ExactMatchFlags(const std::vector<int32_t>& question_pieces,
                                     const std::vector<int32_t>& context_ids) {
  const std::unordered_set<int32_t> question(question_pieces.begin(), question_pieces.end());
  std::vector<int64_t> flags(context_ids.size());
  for (std::size_t j = 0; j < context_ids.size(); ++j) flags[j] = question.count(context_ids[j]);
  return flags;
}

}  // namespace longqa
