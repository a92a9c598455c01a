#include "model/encoders/window_plan.h"

#include <algorithm>
#include <utility>

namespace longqa {

int64_t NumWindows(int64_t x, int64_t l, int64_t m) { return x <= l ? 1 : 1 + (x - l + m - 1) / m; }

namespace {

// The header tokens [begin, end) window k of `in` carries: those of the table its first context
// token lies in, when the header is above that token; {0, 0} otherwise.
std::pair<int64_t, int64_t> HeaderOfWindow(const WindowInput& in, int64_t k, int64_t m) {
  const int64_t first = k * m;
  for (const ContextTable& t : in.tables) {
    if (t.begin <= first && first < t.end && t.header_begin < t.header_end &&
        t.header_end <= first) {
      return {t.header_begin, t.header_end};
    }
  }
  return {0, 0};
}

}  // namespace

WindowPlan PlanWindows(const std::vector<WindowInput>& inputs, int64_t l, int64_t m,
                       int64_t pad_id) {
  WindowPlan plan;
  const size_t n = inputs.size();
  plan.windows_begin.assign(n + 1, 0);
  plan.rows_begin.assign(n + 1, 0);
  plan.context_begin.assign(n + 1, 0);
  std::vector<std::pair<int64_t, int64_t>> headers;  // per window: the header tokens it carries
  for (size_t i = 0; i < n; ++i) {
    const int64_t q = static_cast<int64_t>(inputs[i].question.size());
    const int64_t x = static_cast<int64_t>(inputs[i].context.size());
    const int64_t e = inputs[i].end_token >= 0 ? 1 : 0;
    const int64_t k = NumWindows(x, l, m);
    plan.windows_begin[i + 1] = plan.windows_begin[i] + k;
    plan.rows_begin[i + 1] = plan.rows_begin[i] + k * (q + e) + x;
    plan.context_begin[i + 1] = plan.context_begin[i] + x;
    int64_t header = 0;
    for (int64_t w = 0; w < k; ++w) {
      headers.push_back(HeaderOfWindow(inputs[i], w, m));
      header = std::max(header, headers.back().second - headers.back().first);
    }
    plan.window_len = std::max(plan.window_len, q + header + std::min(l, x) + e);
  }
  plan.num_windows = plan.windows_begin[n];
  plan.num_rows = plan.rows_begin[n];
  const int64_t t_len = plan.window_len;
  const int64_t slots = plan.num_windows * t_len;
  plan.slot_tokens.assign(slots, pad_id);
  plan.slot_positions.assign(slots, -1);
  plan.window_index.assign(slots, -1);
  plan.slot_match.assign(slots, 0);
  plan.slot_types.assign(slots, 0);
  plan.context_rows.resize(plan.context_begin[n]);
  plan.cls_rows.resize(plan.num_windows);
  plan.window_context_begin.resize(plan.num_windows);
  plan.window_context_end.resize(plan.num_windows);
  plan.window_header_tokens.resize(plan.num_windows);
  plan.row_owner_slot.assign(plan.num_rows, -1);
  std::vector<uint8_t> read_only(slots, 0);  // header copies: read, never merged back

  for (size_t i = 0; i < n; ++i) {
    const auto& question = inputs[i].question;
    const auto& context = inputs[i].context;
    const int64_t q = static_cast<int64_t>(question.size());
    const int64_t x = static_cast<int64_t>(context.size());
    const int64_t e = inputs[i].end_token >= 0 ? 1 : 0;
    const int64_t k_count = plan.windows_begin[i + 1] - plan.windows_begin[i];
    const int64_t base = plan.rows_begin[i];
    auto owner = [&](int64_t j) { return std::min(j / m, k_count - 1); };
    auto context_row = [&](int64_t j) {
      const int64_t k = owner(j);
      return base + k * (q + m + e) + q + (j - k * m);
    };
    for (int64_t j = 0; j < x; ++j) plan.context_rows[plan.context_begin[i] + j] = context_row(j);
    for (int64_t k = 0; k < k_count; ++k) {
      const int64_t w = plan.windows_begin[i] + k;
      const int64_t question_row = base + k * (q + m + e);
      plan.cls_rows[w] = question_row;
      int64_t* tokens = &plan.slot_tokens[w * t_len];
      int64_t* positions = &plan.slot_positions[w * t_len];
      int64_t* rows = &plan.window_index[w * t_len];
      int64_t* match = &plan.slot_match[w * t_len];
      int64_t* types = &plan.slot_types[w * t_len];
      for (int64_t t = 0; t < q; ++t) {
        tokens[t] = question[t];
        positions[t] = t;
        rows[t] = question_row + t;
        plan.row_owner_slot[rows[t]] = w * t_len + t;
      }
      const auto [header_begin, header_end] = headers[w];
      const int64_t h = header_end - header_begin;
      plan.window_header_tokens[w] = h;
      for (int64_t j = header_begin; j < header_end; ++j) {
        const int64_t t = q + (j - header_begin);
        tokens[t] = context[j];
        positions[t] = t;
        rows[t] = context_row(j);
        match[t] = inputs[i].context_match.empty() ? 0 : inputs[i].context_match[j];
        types[t] = inputs[i].context_type;
        read_only[w * t_len + t] = 1;
      }
      const int64_t begin = k * m;
      const int64_t end = std::min(begin + l, x);
      plan.window_context_begin[w] = begin;
      plan.window_context_end[w] = end;
      for (int64_t j = begin; j < end; ++j) {
        const int64_t t = q + h + (j - begin);
        tokens[t] = context[j];
        positions[t] = t;
        rows[t] = context_row(j);
        match[t] = inputs[i].context_match.empty() ? 0 : inputs[i].context_match[j];
        types[t] = inputs[i].context_type;
        if (owner(j) == k) plan.row_owner_slot[rows[t]] = w * t_len + t;
      }
      if (e == 1) {
        // The end row follows the context rows the window owns.
        const int64_t t = q + h + (end - begin);
        const int64_t owned = k + 1 < k_count ? m : x - begin;
        tokens[t] = inputs[i].end_token;
        positions[t] = t;
        rows[t] = question_row + q + owned;
        types[t] = inputs[i].context_type;
        plan.row_owner_slot[rows[t]] = w * t_len + t;
      }
    }
  }

  // CSR of the merge: count the slots of every row, then fill in slot order.
  plan.merge_offsets.assign(plan.num_rows + 1, 0);
  for (int64_t s = 0; s < slots; ++s) {
    if (plan.window_index[s] >= 0 && !read_only[s]) ++plan.merge_offsets[plan.window_index[s] + 1];
  }
  for (int64_t r = 0; r < plan.num_rows; ++r) plan.merge_offsets[r + 1] += plan.merge_offsets[r];
  plan.merge_sources.resize(plan.merge_offsets[plan.num_rows]);
  std::vector<int64_t> fill(plan.merge_offsets.begin(), plan.merge_offsets.end() - 1);
  for (int64_t s = 0; s < slots; ++s) {
    if (plan.window_index[s] >= 0 && !read_only[s]) {
      plan.merge_sources[fill[plan.window_index[s]]++] = s;
    }
  }
  return plan;
}

ChunkPlan PlanChunks(const std::vector<int64_t>& rows_begin, int64_t m) {
  ChunkPlan plan;
  const size_t n = rows_begin.empty() ? 0 : rows_begin.size() - 1;
  std::vector<int64_t> chunks_begin(n + 1, 0);
  for (size_t i = 0; i < n; ++i) {
    const int64_t rows = rows_begin[i + 1] - rows_begin[i];
    chunks_begin[i + 1] = chunks_begin[i] + (rows + m - 1) / m;
  }
  plan.num_chunks = chunks_begin[n];
  plan.sorted_to_slot.resize(n == 0 ? 0 : rows_begin[n]);
  plan.slot_valid.assign(plan.num_chunks * m, 0);
  for (size_t i = 0; i < n; ++i) {
    const int64_t rows = rows_begin[i + 1] - rows_begin[i];
    for (int64_t p = 0; p < rows; ++p) {
      const int64_t slot = (chunks_begin[i] + p / m) * m + p % m;
      plan.sorted_to_slot[rows_begin[i] + p] = slot;
      plan.slot_valid[slot] = 1;
    }
  }
  return plan;
}

}  // namespace longqa
