#include "model/encoders/etc_plan.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <tuple>

#include "model/encoders/exact_match.h"

namespace longqa {

std::vector<int64_t> SegmentOfParagraphs(const std::vector<int64_t>& token_paragraph,
                                         int64_t num_paragraphs, int64_t max_segments,
                                         int64_t* num_segments) {
  std::vector<int64_t> segment(num_paragraphs);
  if (num_paragraphs <= max_segments) {
    for (int64_t p = 0; p < num_paragraphs; ++p) segment[p] = p;
    *num_segments = num_paragraphs;
    return segment;
  }
  const int64_t n = static_cast<int64_t>(token_paragraph.size());
  std::vector<int64_t> first(num_paragraphs, -1);
  for (int64_t t = n - 1; t >= 0; --t) first[token_paragraph[t]] = t;
  int64_t raw_before = -1;
  *num_segments = 0;
  for (int64_t p = 0; p < num_paragraphs; ++p) {
    // A paragraph without tokens joins the segment before it.
    const int64_t raw = first[p] < 0 ? std::max<int64_t>(raw_before, 0)
                                     : first[p] * max_segments / std::max<int64_t>(n, 1);
    if (raw != raw_before) ++*num_segments;
    segment[p] = *num_segments - 1;
    raw_before = raw;
  }
  return segment;
}

std::vector<int64_t> EntityOfTokens(const std::vector<int32_t>& ids,
                                    const std::vector<int64_t>& token_paragraph,
                                    const std::vector<std::pair<int64_t, int64_t>>& word_spans,
                                    const std::vector<int32_t>& question_pieces,
                                    int64_t max_entities, std::vector<int32_t>* first_pieces) {
  const int64_t n = static_cast<int64_t>(ids.size());
  struct Word {
    int64_t first = -1, paragraphs = 0, last_paragraph = -1;
    std::vector<std::pair<int64_t, int64_t>> mentions;  // token ranges [begin, end)
    bool near_question = false;  // in a paragraph that names a word of the question
  };
  std::map<std::vector<int32_t>, Word> words;
  const bool spans = static_cast<int64_t>(word_spans.size()) == n;
  for (int64_t t = 0; spans && t < n;) {
    int64_t end = t + 1;
    while (end < n && word_spans[end] == word_spans[t] &&
           token_paragraph[end] == token_paragraph[t])
      ++end;
    // An empty span (the paragraph token) is no word; a one-piece word is a common one.
    if (end - t >= 2 && word_spans[t].first < word_spans[t].second) {
      Word& w = words[std::vector<int32_t>(ids.begin() + t, ids.begin() + end)];
      if (w.first < 0) w.first = t;
      if (w.last_paragraph != token_paragraph[t]) ++w.paragraphs;  // paragraphs only increase
      w.last_paragraph = token_paragraph[t];
      w.mentions.emplace_back(t, end);
    }
    t = end;
  }
  // Paragraphs that name a word of the question (its pieces in a row in the question's).
  std::vector<bool> names_question(
      token_paragraph.empty()
          ? 0
          : *std::max_element(token_paragraph.begin(), token_paragraph.end()) + 1,
      false);
  for (const auto& [pieces, w] : words) {
    if (std::search(question_pieces.begin(), question_pieces.end(), pieces.begin(), pieces.end()) ==
        question_pieces.end()) {
      continue;
    }
    for (const auto& mention : w.mentions) names_question[token_paragraph[mention.first]] = true;
  }
  std::vector<Word*> chosen;
  for (auto& [pieces, w] : words) {
    if (w.paragraphs < 2) continue;
    for (const auto& mention : w.mentions) {
      w.near_question = w.near_question || names_question[token_paragraph[mention.first]];
    }
    chosen.push_back(&w);
  }
  std::sort(chosen.begin(), chosen.end(), [](const Word* a, const Word* b) {
    return std::make_tuple(!a->near_question, a->paragraphs, a->first) <
           std::make_tuple(!b->near_question, b->paragraphs, b->first);
  });
  if (static_cast<int64_t>(chosen.size()) > max_entities) chosen.resize(max_entities);
  std::sort(chosen.begin(), chosen.end(),
            [](const Word* a, const Word* b) { return a->first < b->first; });
  std::vector<int64_t> entity(n, -1);
  first_pieces->clear();
  for (const Word* w : chosen) {
    for (const auto& [begin, end] : w->mentions) {
      std::fill(entity.begin() + begin, entity.begin() + end,
                static_cast<int64_t>(first_pieces->size()));
    }
    first_pieces->push_back(ids[w->first]);
  }
  return entity;
}

EtcInput MakeEtcInput(const ModelConfig& config, const std::vector<int32_t>& question_pieces,
                      const std::vector<int32_t>& document_ids,
                      const std::vector<int64_t>& token_paragraph, int64_t num_paragraphs,
                      const std::vector<std::pair<int64_t, int64_t>>& word_spans) {
  int64_t num_segments = 0;
  const std::vector<int64_t> segment_of =
      SegmentOfParagraphs(token_paragraph, num_paragraphs, config.etc.max_segments, &num_segments);
  const bool positions = config.etc.positions != "none";
  const int64_t offset = config.position_offset;
  EtcInput in;
  in.global_ids.push_back(config.special.cls);
  in.global_segment.push_back(-1);
  for (int32_t id : question_pieces) {
    in.global_ids.push_back(id);
    in.global_segment.push_back(-1);
  }
  for (int64_t s = 0; s < num_segments; ++s) {
    in.global_ids.push_back(config.special.paragraph);
    in.global_segment.push_back(s);
  }
  std::vector<int32_t> entity_pieces;
  const std::vector<int64_t> entity =
      config.etc.entity_globals > 0
          ? EntityOfTokens(document_ids, token_paragraph, word_spans, question_pieces,
                           config.etc.entity_globals, &entity_pieces)
          : std::vector<int64_t>();
  const int64_t first_entity_row = static_cast<int64_t>(in.global_ids.size());
  for (int32_t id : entity_pieces) {  // an entity token starts as its word's first piece
    in.global_ids.push_back(id);
    in.global_segment.push_back(-1);
  }
  if (!entity_pieces.empty()) {
    in.long_entity.reserve(entity.size());
    for (int64_t e : entity) in.long_entity.push_back(e < 0 ? -1 : first_entity_row + e);
  }
  if (positions) {
    // CLS 0, question 1.., segment and entity tokens 0: as BERT numbers [CLS] and the question.
    for (size_t g = 0; g < in.global_ids.size(); ++g) {
      in.global_positions.push_back(offset +
                                    (g <= question_pieces.size() ? static_cast<int64_t>(g) : 0));
    }
  }
  in.long_ids = document_ids;
  in.long_segment.reserve(token_paragraph.size());
  for (int64_t p : token_paragraph) in.long_segment.push_back(segment_of[p]);
  if (config.etc.positions == "document") {
    // Longformer's tiling: positions run on after the question and wrap around the table.
    const int64_t first = static_cast<int64_t>(question_pieces.size()) + 2;
    const int64_t span = config.max_position_embeddings - offset;
    for (size_t t = 0; t < token_paragraph.size(); ++t) {
      in.long_positions.push_back(offset + (first + static_cast<int64_t>(t)) % span);
    }
  } else if (positions) {
    const int64_t last = config.max_position_embeddings - 1;
    int64_t within = 0;
    for (size_t t = 0; t < token_paragraph.size(); ++t) {
      within = (t > 0 && token_paragraph[t] == token_paragraph[t - 1]) ? within + 1 : 0;
      in.long_positions.push_back(std::min(offset + within, last));
    }
  }
  if (config.exact_match_feature) in.long_match = ExactMatchFlags(question_pieces, document_ids);
  return in;
}

EtcRequestPlan PlanEtcRequest(const ModelConfig& config, const EtcInput& in) {
  const int64_t r = config.etc.radius, k = config.etc.relative_clip;
  auto relative = [k](int64_t delta) { return std::clamp<int64_t>(delta, -k, k) + k; };
  EtcRequestPlan t;
  t.n_g = static_cast<int64_t>(in.global_ids.size());
  t.n_l = static_cast<int64_t>(in.long_ids.size());
  t.block = r + 1;
  t.num_blocks = std::max<int64_t>(1, (t.n_l + t.block - 1) / t.block);
  const int64_t b = t.block, nb = t.num_blocks;

  t.block_index.resize(nb * 3 * b);
  for (int64_t blk = 0; blk < nb; ++blk) {
    for (int64_t s = 0; s < 3 * b; ++s) {
      const int64_t j = (blk - 1) * b + s;
      t.block_index[blk * 3 * b + s] = (j >= 0 && j < t.n_l) ? j : -1;
    }
  }
  t.local_labels.resize(b * 3 * b);
  for (int64_t q = 0; q < b; ++q) {
    for (int64_t s = 0; s < 3 * b; ++s) {
      const int64_t delta = s - b - q;  // key position minus query position
      t.local_labels[q * 3 * b + s] = std::abs(delta) <= r ? relative(delta) : -1;
    }
  }
  t.g2g_labels.resize(t.n_g * t.n_g);
  for (int64_t g = 0; g < t.n_g; ++g) {
    for (int64_t g2 = 0; g2 < t.n_g; ++g2) t.g2g_labels[g * t.n_g + g2] = relative(g2 - g);
  }
  return t;
}

}  // namespace longqa
