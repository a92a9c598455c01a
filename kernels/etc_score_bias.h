// etc_score_bias cores (ETC §3 and appendix A): the two terms ETC adds to a q·k score, applied in
// place to scores a GEMM has just written, so that blocked global-local attention never builds a
// (tokens × segments) tensor of labels or memberships:
// - a relative-label term: qa[label] (qa = q · a_Kᵀ, one scalar per label) with the label from a
//   table that repeats every `period` query rows (l2l: [r+1, 3(r+1)]; g2g: [n_g, n_g]); pairs whose
//   label is -1 (beyond the radius) or whose key slot is empty are masked;
// - a membership term: "not part of" everywhere, "part of" on the keys in the query's own range
//   (a long token's segment token; a segment token's long tokens), optionally masking the keys
//   outside that range (ETC's hard g2l mask).
// scores are [heads, rows, cols] with a contiguous last dimension (a column slice of a wider score
// buffer); qa is [heads, rows, L] contiguous, with the scores' query rows.
#pragma once

#include <cstdint>

#include "kernels/host_device.h"

namespace longqa::kernels {

// The score of a masked pair: finite, so that a softmax over key chunks (online softmax) whose
// first chunk is all masked for a row still subtracts a finite maximum.
inline constexpr float kEtcMaskedScore = -1e30f;

// Element (head, row, col): scores += qa[label], label = labels[(row0 + row) % period, col];
// kEtcMaskedScore where the label is -1 or slot_rows (if not null) holds a negative entry at
// [(row0 + row) / period, col].
template <typename T, typename Acc>
LONGQA_HD inline void EtcLabelBiasAt(int64_t head, int64_t row, int64_t col,
                                     T* scores,  // [heads, rows, cols]
                                     int64_t head_stride, int64_t row_stride,  //
                                     const T* qa,                              // [heads, rows, L]
                                     int64_t rows, int64_t num_labels,         //
                                     const int64_t* labels,                    // [period, cols]
                                     int64_t period, int64_t cols,             //
                                     int64_t row0,                             //
                                     const int64_t* slot_rows) {               // [*, cols] or null
  const int64_t query = row0 + row;
  const int64_t label = labels[(query % period) * cols + col];
  T& s = scores[head * head_stride + row * row_stride + col];
  const bool open =
      label >= 0 && (slot_rows == nullptr || slot_rows[(query / period) * cols + col] >= 0);
  s = open ? static_cast<T>(static_cast<Acc>(s) +
                            static_cast<Acc>(qa[(head * rows + row) * num_labels + label]))
           : static_cast<T>(kEtcMaskedScore);
}

// Element (head, row, col) of key column col0 + col: scores += qa[not_part_of], or qa[part_of]
// when lo[row] <= col0 + col < hi[row]; with mask_outside, kEtcMaskedScore outside that range for
// rows that have one (lo[row] >= 0). A row with lo[row] < 0 is part of no key.
template <typename T, typename Acc>
LONGQA_HD inline void EtcMembershipBiasAt(int64_t head, int64_t row, int64_t col,
                                          T* scores,  // [h, rows, cols]
                                          int64_t head_stride, int64_t row_stride,  //
                                          const T* qa,                              // [h, rows, L]
                                          int64_t rows, int64_t num_labels,         //
                                          int64_t part_of, int64_t not_part_of,     //
                                          const int64_t* lo, const int64_t* hi,     // [rows]
                                          int64_t col0, bool mask_outside) {
  const T* q = qa + (head * rows + row) * num_labels;
  const int64_t key = col0 + col;
  const bool has_range = lo[row] >= 0;
  const bool inside = has_range && key >= lo[row] && key < hi[row];
  T& s = scores[head * head_stride + row * row_stride + col];
  if (mask_outside && has_range && !inside) {
    s = static_cast<T>(kEtcMaskedScore);
    return;
  }
  s = static_cast<T>(static_cast<Acc>(s) + static_cast<Acc>(q[inside ? part_of : not_part_of]));
}

}  // namespace longqa::kernels
