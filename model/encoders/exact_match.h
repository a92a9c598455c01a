// The exact-match input feature (DrQA): which document tokens also occur in the question. A token
// matches when its sentencepiece id is one of the question's piece ids; special and paragraph
// tokens never occur in questions and so never match.
#pragma once

#include <cstdint>
#include <vector>

namespace longqa {

// question_pieces: the question's piece ids without CLS/SEP. Returns one 0/1 flag per context id.
std::vector<int64_t> ExactMatchFlags(const std::vector<int32_t>& question_pieces,
                                     const std::vector<int32_t>& context_ids);

}  // namespace longqa
