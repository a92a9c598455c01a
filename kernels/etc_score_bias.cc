// etc_score_bias: checks and device dispatch. The CUDA launchers run the per-element cores of
// etc_score_bias.h; the CPU launchers run row forms of the same formulas (the label term: a row's
// table rows found once; the membership term: a broadcast add and the keys of each row's range),
// and the *ByElement ops run the cores on the CPU for the tests.
#include "kernels/etc_score_bias.h"

#include <algorithm>
#include <tuple>
#include <vector>

#include "kernels/dispatch.h"
#include "kernels/ops.h"

namespace longqa::kernels {
namespace {

// Checks scores [heads, rows, cols] (last dim contiguous) and qa [heads, rows, L] (made
// contiguous, same dtype and device).
at::Tensor CheckScoresAndLabelScores(const at::Tensor& scores, const at::Tensor& qa_in,
                                     const char* op) {
  TORCH_CHECK(scores.dim() == 3 && (scores.size(2) <= 1 || scores.stride(2) == 1), op,
              ": scores must be [heads, rows, cols] with a contiguous last dimension, got ",
              scores.sizes(), " strides ", scores.strides());
  TORCH_CHECK(
      qa_in.dim() == 3 && qa_in.size(0) == scores.size(0) && qa_in.size(1) == scores.size(1), op,
      ": qa must be [", scores.size(0), ", ", scores.size(1), ", labels], got ", qa_in.sizes());
  TORCH_CHECK(qa_in.scalar_type() == scores.scalar_type(), op, ": qa is ", qa_in.scalar_type(),
              ", scores ", scores.scalar_type());
  TORCH_CHECK(qa_in.device() == scores.device(), op, ": qa on ", qa_in.device(), ", scores on ",
              scores.device());
  return qa_in.contiguous();
}

// Checks the label op's arguments; returns {qa, labels, slot_rows} made contiguous (slot_rows
// undefined when not given).
std::tuple<at::Tensor, at::Tensor, at::Tensor> CheckLabelBias(
    const at::Tensor& scores, const at::Tensor& qa_in, const at::Tensor& labels_in, int64_t row0,
    const at::Tensor& slot_rows_in, const char* op) {
  at::Tensor qa = CheckScoresAndLabelScores(scores, qa_in, op);
  TORCH_CHECK(labels_in.dim() == 2 && labels_in.scalar_type() == at::kLong &&
                  labels_in.size(0) >= 1 && labels_in.size(1) == scores.size(2),
              op, ": labels must be an int64 [period, ", scores.size(2), "] table, got ",
              labels_in.sizes(), " ", labels_in.scalar_type());
  TORCH_CHECK(labels_in.device() == scores.device(), op, ": labels on ", labels_in.device());
  TORCH_CHECK(row0 >= 0, op, ": row0 must be >= 0");
  at::Tensor labels = labels_in.contiguous();
  const int64_t rows = scores.size(1), cols = scores.size(2), period = labels.size(0);
  at::Tensor slot_rows;
  if (slot_rows_in.defined()) {
    slot_rows = IndexVector(slot_rows_in, op, "slot_rows", scores);
    TORCH_CHECK(rows == 0 || slot_rows.numel() >= ((row0 + rows - 1) / period + 1) * cols, op,
                ": slot_rows holds ", slot_rows.numel(), " entries, too few for rows up to ",
                row0 + rows, " (", cols, " a period)");
  }
  return {qa, labels, slot_rows};
}

// On the CPU the labels index qa directly: they must lie in [-1, L).
void CheckLabelRange(const at::Tensor& labels, int64_t num_labels, const char* op) {
  TORCH_CHECK(labels.min().item<int64_t>() >= -1 && labels.max().item<int64_t>() < num_labels, op,
              ": labels must lie in [-1, ", num_labels, ")");
}

// A run of keys [begin, end) of one label row that share one label.
struct LabelRun {
  int64_t begin, end, label;
};

// Each row of a [period, cols] label table cut into runs of one label.
std::vector<std::vector<LabelRun>> LabelRuns(const at::Tensor& labels) {
  const int64_t period = labels.size(0), cols = labels.size(1);
  const int64_t* l = labels.data_ptr<int64_t>();
  std::vector<std::vector<LabelRun>> runs(period);
  for (int64_t p = 0; p < period; ++p) {
    const int64_t* row = l + p * cols;
    for (int64_t c = 0; c < cols;) {
      int64_t e = c + 1;
      while (e < cols && row[e] == row[c]) ++e;
      runs[p].push_back({c, e, row[c]});
      c = e;
    }
  }
  return runs;
}

// Runs f(head, row) over all rows of scores on the intra-op pool.
template <typename F>
void ForEachScoreRow(const at::Tensor& scores, const F& f) {
  const int64_t heads = scores.size(0), rows = scores.size(1);
  ParallelRows(heads * rows, scores.size(2), [&](int64_t i) { f(i / rows, i % rows); });
}

}  // namespace

void EtcLabelBias(const at::Tensor& scores, const at::Tensor& qa_in, const at::Tensor& labels_in,
                  int64_t row0, const at::Tensor& slot_rows_in) {
  constexpr const char* kOp = "etc_label_bias";
  at::Tensor qa, labels, slot_rows;  // not a structured binding: the lambdas below capture them
  std::tie(qa, labels, slot_rows) =
      CheckLabelBias(scores, qa_in, labels_in, row0, slot_rows_in, kOp);
  if (scores.numel() == 0) return;
  const int64_t heads = scores.size(0), rows = scores.size(1), cols = scores.size(2);
  const int64_t num_labels = qa.size(2), period = labels.size(0);
  const int64_t* slots = slot_rows.defined() ? slot_rows.data_ptr<int64_t>() : nullptr;
  if (scores.is_cuda()) {
    CheckLaunch(kOp, cuda::EtcLabelBias(ToCudaDType(scores.scalar_type(), kOp), scores.data_ptr(),
                                        heads, rows, cols, scores.stride(0), scores.stride(1),
                                        qa.data_ptr(), num_labels, labels.data_ptr<int64_t>(),
                                        period, row0, slots, StreamFor(scores)));
    return;
  }
  TORCH_CHECK(scores.is_cpu(), kOp, ": unsupported device ", scores.device());
  CheckLabelRange(labels, num_labels, kOp);
  // The row form: each label row is cut once into runs of one label (ETC's labels are constant
  // beyond the clip distance, so a row of 255 keys has about 2k + 5 runs), and every score row
  // then adds a constant over each run, a loop the compiler vectorises (the per-element core
  // looked up each label and divided by the period twice per score: 1.4-3 ns a score). The slot
  // table's closed keys (few: padding at the document's ends) are masked afterwards.
  const std::vector<std::vector<LabelRun>> runs = LabelRuns(labels);
  const int64_t first_slot_row = row0 / period, last_slot_row = (row0 + rows - 1) / period;
  std::vector<std::vector<int64_t>> closed(last_slot_row - first_slot_row + 1);
  if (slots != nullptr) {
    for (int64_t g = first_slot_row; g <= last_slot_row; ++g) {
      for (int64_t c = 0; c < cols; ++c) {
        if (slots[g * cols + c] < 0) closed[g - first_slot_row].push_back(c);
      }
    }
  }
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, scores.scalar_type(), kOp, [&] {
    using Acc = AccType<scalar_t>;
    scalar_t* s = scores.data_ptr<scalar_t>();
    const scalar_t* q = qa.data_ptr<scalar_t>();
    const int64_t hs = scores.stride(0), rs = scores.stride(1);
    const auto masked = static_cast<scalar_t>(kEtcMaskedScore);
    ForEachScoreRow(scores, [&](int64_t h, int64_t r) {
      const int64_t query = row0 + r;
      const scalar_t* qr = q + (h * rows + r) * num_labels;
      scalar_t* row = s + h * hs + r * rs;
      for (const LabelRun& run : runs[query % period]) {
        if (run.label < 0) {
          std::fill(row + run.begin, row + run.end, masked);
          continue;
        }
        const Acc delta = static_cast<Acc>(qr[run.label]);
        for (int64_t c = run.begin; c < run.end; ++c) {
          row[c] = static_cast<scalar_t>(static_cast<Acc>(row[c]) + delta);
        }
      }
      for (const int64_t c : closed[query / period - first_slot_row]) row[c] = masked;
    });
  });
}

void EtcLabelBiasByElement(const at::Tensor& scores, const at::Tensor& qa_in,
                           const at::Tensor& labels_in, int64_t row0,
                           const at::Tensor& slot_rows_in) {
  constexpr const char* kOp = "etc_label_bias_by_element";
  TORCH_CHECK(scores.is_cpu(), kOp, ": runs on the CPU only, got ", scores.device());
  at::Tensor qa, labels, slot_rows;  // not a structured binding: the lambdas below capture them
  std::tie(qa, labels, slot_rows) =
      CheckLabelBias(scores, qa_in, labels_in, row0, slot_rows_in, kOp);
  if (scores.numel() == 0) return;
  const int64_t rows = scores.size(1), cols = scores.size(2);
  const int64_t num_labels = qa.size(2), period = labels.size(0);
  CheckLabelRange(labels, num_labels, kOp);
  const int64_t* slots = slot_rows.defined() ? slot_rows.data_ptr<int64_t>() : nullptr;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, scores.scalar_type(), kOp, [&] {
    scalar_t* s = scores.data_ptr<scalar_t>();
    const scalar_t* q = qa.data_ptr<scalar_t>();
    const int64_t* l = labels.data_ptr<int64_t>();
    const int64_t hs = scores.stride(0), rs = scores.stride(1);
    ForEachScoreRow(scores, [&](int64_t h, int64_t r) {
      for (int64_t c = 0; c < cols; ++c) {
        EtcLabelBiasAt<scalar_t, AccType<scalar_t>>(h, r, c, s, hs, rs, q, rows, num_labels, l,
                                                    period, cols, row0, slots);
      }
    });
  });
}

namespace {

// Checks the membership op's arguments; returns {qa, lo, hi} made contiguous.
std::tuple<at::Tensor, at::Tensor, at::Tensor> CheckMembership(
    const at::Tensor& scores, const at::Tensor& qa_in, int64_t part_of, int64_t not_part_of,
    const at::Tensor& lo_in, const at::Tensor& hi_in, const char* op) {
  at::Tensor qa = CheckScoresAndLabelScores(scores, qa_in, op);
  const int64_t rows = scores.size(1), num_labels = qa.size(2);
  TORCH_CHECK(part_of >= 0 && part_of < num_labels && not_part_of >= 0 && not_part_of < num_labels,
              op, ": part_of and not_part_of must be labels in [0, ", num_labels, ")");
  at::Tensor lo = IndexVector(lo_in, op, "lo", scores);
  at::Tensor hi = IndexVector(hi_in, op, "hi", scores);
  TORCH_CHECK(lo.numel() == rows && hi.numel() == rows, op, ": lo and hi need ", rows,
              " entries, got ", lo.numel(), " and ", hi.numel());
  return {qa, lo, hi};
}

}  // namespace

void EtcMembershipBias(const at::Tensor& scores, const at::Tensor& qa_in, int64_t part_of,
                       int64_t not_part_of, const at::Tensor& lo_in, const at::Tensor& hi_in,
                       int64_t col0, bool mask_outside) {
  constexpr const char* kOp = "etc_membership_bias";
  at::Tensor qa, lo, hi;  // not a structured binding: the lambdas below capture them (C++17)
  std::tie(qa, lo, hi) = CheckMembership(scores, qa_in, part_of, not_part_of, lo_in, hi_in, kOp);
  if (scores.numel() == 0) return;
  if (scores.is_cuda()) {
    const int64_t heads = scores.size(0), rows = scores.size(1), cols = scores.size(2);
    CheckLaunch(kOp, cuda::EtcMembershipBias(
                         ToCudaDType(scores.scalar_type(), kOp), scores.data_ptr(), heads, rows,
                         cols, scores.stride(0), scores.stride(1), qa.data_ptr(), qa.size(2),
                         part_of, not_part_of, lo.data_ptr<int64_t>(), hi.data_ptr<int64_t>(), col0,
                         mask_outside, StreamFor(scores)));
    return;
  }
  TORCH_CHECK(scores.is_cpu(), kOp, ": unsupported device ", scores.device());
  // The row form: "not part of" on every key as one broadcast add (ATen's vectorised kernels;
  // the per-element form converted each bf16 score on its own and took 1.6 ns a score), then
  // only the keys inside a row's range (one for a long row, its segment's run for a segment
  // token's row) move on to "part of", and with mask_outside the rest of such rows is masked.
  // Same result as the per-element core up to one extra rounding of the inside keys.
  scores.add_(qa.select(2, not_part_of).unsqueeze(2));
  const int64_t rows = scores.size(1), cols = scores.size(2), num_labels = qa.size(2);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, scores.scalar_type(), kOp, [&] {
    using Acc = AccType<scalar_t>;
    scalar_t* s = scores.data_ptr<scalar_t>();
    const scalar_t* q = qa.data_ptr<scalar_t>();
    const int64_t* l = lo.data_ptr<int64_t>();
    const int64_t* u = hi.data_ptr<int64_t>();
    const int64_t hs = scores.stride(0), rs = scores.stride(1);
    ForEachScoreRow(scores, [&](int64_t h, int64_t r) {
      if (l[r] < 0) return;  // part of no key
      const int64_t begin = std::clamp<int64_t>(l[r] - col0, 0, cols);
      const int64_t end = std::clamp<int64_t>(u[r] - col0, begin, cols);
      scalar_t* row = s + h * hs + r * rs;
      const scalar_t* qr = q + (h * rows + r) * num_labels;
      const Acc delta = static_cast<Acc>(qr[part_of]) - static_cast<Acc>(qr[not_part_of]);
      for (int64_t c = begin; c < end; ++c) {
        row[c] = static_cast<scalar_t>(static_cast<Acc>(row[c]) + delta);
      }
      if (mask_outside) {
        std::fill(row, row + begin, static_cast<scalar_t>(kEtcMaskedScore));
        std::fill(row + end, row + cols, static_cast<scalar_t>(kEtcMaskedScore));
      }
    });
  });
}

void EtcMembershipBiasByElement(const at::Tensor& scores, const at::Tensor& qa_in, int64_t part_of,
                                int64_t not_part_of, const at::Tensor& lo_in,
                                const at::Tensor& hi_in, int64_t col0, bool mask_outside) {
  constexpr const char* kOp = "etc_membership_bias_by_element";
  at::Tensor qa, lo, hi;  // not a structured binding: the lambdas below capture them (C++17)
  std::tie(qa, lo, hi) = CheckMembership(scores, qa_in, part_of, not_part_of, lo_in, hi_in, kOp);
  TORCH_CHECK(scores.is_cpu(), kOp, ": runs on the CPU only, got ", scores.device());
  if (scores.numel() == 0) return;
  const int64_t rows = scores.size(1), cols = scores.size(2), num_labels = qa.size(2);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, scores.scalar_type(), kOp, [&] {
    scalar_t* s = scores.data_ptr<scalar_t>();
    const scalar_t* q = qa.data_ptr<scalar_t>();
    const int64_t* l = lo.data_ptr<int64_t>();
    const int64_t* u = hi.data_ptr<int64_t>();
    const int64_t hs = scores.stride(0), rs = scores.stride(1);
    ForEachScoreRow(scores, [&](int64_t h, int64_t r) {
      for (int64_t c = 0; c < cols; ++c) {
        EtcMembershipBiasAt<scalar_t, AccType<scalar_t>>(h, r, c, s, hs, rs, q, rows, num_labels,
                                                         part_of, not_part_of, l, u, col0,
                                                         mask_outside);
      }
    });
  });
}

}  // namespace longqa::kernels
