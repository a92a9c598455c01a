// Gold lines (the JSONL that longqa-train and `longqa eval` read) shared by the trainer's tests:
// one three-paragraph document and the gold of a short answer, a YES and no answer on it.
#pragma once

#include <string>

namespace longqa::testing_support {

// Paragraphs joined by "\n\n": [0,17) [19,40) [42,67).
inline const char* kParagraphs =
    R"("paragraphs": ["the river is long", "Ada was born in Paris", "Paris is a city of France"])";

inline std::string Line(const std::string& question, const std::string& gold) {
  return std::string(R"({"example_id": "x", "kind": "k", "question": ")") + question + "\", " +
         kParagraphs + ", " + gold + "}";
}
inline const std::string kShortGold =
    R"("long_answer": {"start_byte": 19, "end_byte": 40}, "short_answers": [{"start_byte": 35, "end_byte": 40}])";
inline const std::string kYesGold =
    R"("long_answer": {"start_byte": 19, "end_byte": 40}, "short_answers": [], "yes_no_answer": "YES")";
inline const std::string kNullGold = R"("long_answer": null, "short_answers": [])";

}  // namespace longqa::testing_support
