// Stand-ins for the CUDA launchers in builds without CUDA: a CUDA tensor reaching an op then
// fails with this message instead of a link error or a crash.
#include "kernels/cuda/launchers.h"

namespace longqa::kernels::cuda {
namespace {
constexpr char kNoCuda[] = "longqa was built without CUDA (configure with LONGQA_WITH_CUDA=ON)";
}

const char* GatherRows(DType, const void*, int64_t, int64_t, const int64_t*, int64_t, int64_t,
                       void*, void*) {
  return kNoCuda;
}
const char* OverlapMerge(DType, const void*, int64_t, const int64_t*, const int64_t*, int64_t,
                         int64_t, void*, void*) {
  return kNoCuda;
}
const char* RowArgmax(DType, const void*, int64_t, int64_t, int64_t*, void*) { return kNoCuda; }
const char* HammingAssign(const int64_t*, int64_t, int64_t, const int64_t*, int64_t, int64_t*,
                          void*) {
  return kNoCuda;
}
const char* HammingMajority(const int64_t*, const int64_t*, const int64_t*, const int64_t*, int64_t,
                            int64_t, int64_t*, void*) {
  return kNoCuda;
}
const char* SparseDotProduct(DType, const void*, const void*, const int64_t*, int64_t, int64_t,
                             int64_t, int64_t, int64_t, void*, void*) {
  return kNoCuda;
}
const char* SparseWeightedSum(DType, const void*, const void*, const int64_t*, int64_t, int64_t,
                              int64_t, int64_t, int64_t, void*, void*) {
  return kNoCuda;
}
const char* StableCountingSort(const int64_t*, const int64_t*, int64_t, int64_t, int64_t*, int64_t*,
                               void*) {
  return kNoCuda;
}
const char* RelativeLabelGather(DType, const void*, int64_t, int64_t, int64_t, const int64_t*,
                                int64_t, int64_t, void*, void*) {
  return kNoCuda;
}
const char* EtcLabelBias(DType, void*, int64_t, int64_t, int64_t, int64_t, int64_t, const void*,
                         int64_t, const int64_t*, int64_t, int64_t, const int64_t*, void*) {
  return kNoCuda;
}
const char* EtcMembershipBias(DType, void*, int64_t, int64_t, int64_t, int64_t, int64_t,
                              const void*, int64_t, int64_t, int64_t, const int64_t*,
                              const int64_t*, int64_t, bool, void*) {
  return kNoCuda;
}
void* CurrentStream(int) { return nullptr; }

}  // namespace longqa::kernels::cuda
