// relative_label_gather core (ETC appendix A, "efficient relative attention"): every query takes
// one dot product with each relative-label vector (qa = q · a_Kᵀ, a LibTorch GEMM); this op then
// gathers, for every (query, head, key slot), the scalar of the label that links them. Labels come
// from a table that repeats every `period` query rows: in blocked l2l attention the label depends
// only on the query's place in its block and the key's slot, so the table is [r+1, 3(r+1)].
#pragma once

#include <cstdint>

#include "kernels/host_device.h"

namespace longqa::kernels {

// Output element (row, head, slot).
template <typename T>
LONGQA_HD inline void RelativeLabelGatherAt(int64_t row, int64_t head, int64_t s,
                                            const T* qa,            // [rows, heads, L]
                                            int64_t heads,          //
                                            int64_t num_labels,     // L
                                            const int64_t* labels,  // [period, slots]
                                            int64_t period,         //
                                            int64_t slots,          //
                                            T* out) {               // [rows, heads, slots]
  const int64_t label = labels[(row % period) * slots + s];
  out[(row * heads + head) * slots + s] =
      (label >= 0 && label < num_labels) ? qa[(row * heads + head) * num_labels + label]
                                         : static_cast<T>(0.0f);
}

// The same by flat index i into out (one CUDA thread per element; the CPU launcher loops
// (row, head, slot) directly).
template <typename T>
LONGQA_HD inline void RelativeLabelGatherElement(int64_t i, const T* qa, int64_t heads,
                                                 int64_t num_labels, const int64_t* labels,
                                                 int64_t period, int64_t slots, T* out) {
  const int64_t t = i / slots;
  RelativeLabelGatherAt(t / heads, t % heads, i - t * slots, qa, heads, num_labels, labels, period,
                        slots, out);
}

}  // namespace longqa::kernels
