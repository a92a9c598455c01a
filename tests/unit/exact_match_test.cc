// The exact-match input feature's flags.
#include "model/encoders/exact_match.h"

#include <gtest/gtest.h>

namespace longqa {
namespace {

TEST(ExactMatchTest, FlagsDocumentTokensWhoseIdIsAQuestionPiece) {
  EXPECT_EQ(ExactMatchFlags({7, 9, 7}, {4, 9, 8, 7, 9, 4}),
            (std::vector<int64_t>{0, 1, 0, 1, 1, 0}));
  EXPECT_EQ(ExactMatchFlags({}, {4, 5}), (std::vector<int64_t>{0, 0}));
}

}  // namespace
}  // namespace longqa
