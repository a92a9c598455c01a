#include "model/encoders/int8_gemm.h"

#include <ATen/ATen.h>

#include <stdexcept>

#if LONGQA_ONEDNN_INT8
#include <oneapi/dnnl/dnnl.hpp>
#else
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/native/quantized/PackedParams.h>

#include <algorithm>
#endif

namespace longqa {

#if LONGQA_ONEDNN_INT8

namespace {

const dnnl::engine& CpuEngine() {
  static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

dnnl::memory::desc Matrix(int64_t rows, int64_t cols, dnnl::memory::data_type type,
                          dnnl::memory::format_tag tag) {
  return dnnl::memory::desc({rows, cols}, type, tag);
}

// The matmul of m activation rows against the packed weights.
dnnl::matmul::primitive_desc Plan(int64_t m, int64_t in, int64_t out,
                                  const dnnl::memory::desc& weights) {
  using dt = dnnl::memory::data_type;
  using tag = dnnl::memory::format_tag;
  return dnnl::matmul::primitive_desc(
      dnnl::matmul::desc(Matrix(m, in, dt::u8, tag::ab), weights, Matrix(m, out, dt::f32, tag::ab)),
      CpuEngine());
}

}  // namespace

struct Int8Gemm::Impl {
  int64_t in = 0, out = 0;
  dnnl::memory weights;  // in the layout the kernels read (format "any" at a typical row count)
};

Int8Gemm::Int8Gemm(const at::Tensor& weight, bool /*seven_bit_activations*/) {
  using dt = dnnl::memory::data_type;
  using tag = dnnl::memory::format_tag;
  const at::Tensor w = weight.contiguous();
  auto impl = std::make_unique<Impl>();
  impl->in = w.size(1);
  impl->out = w.size(0);
  // matmul's weights are K x N: the [out, in] rows are its "ba" layout. The packed layout does not
  // depend on the row count (checked for 1 to 100,000 rows at MiniLM's and BERT's shapes); Run
  // re-plans with it at each call (oneDNN's primitive cache: ~4 us).
  const dnnl::memory::desc any = Matrix(impl->in, impl->out, dt::s8, tag::any);
  const dnnl::matmul::primitive_desc plan = Plan(1024, impl->in, impl->out, any);
  impl->weights = dnnl::memory(plan.weights_desc(), CpuEngine());
  dnnl::memory rows(Matrix(impl->in, impl->out, dt::s8, tag::ba), CpuEngine(), w.data_ptr());
  dnnl::stream stream(CpuEngine());
  dnnl::reorder(rows, impl->weights).execute(stream, rows, impl->weights);
  stream.wait();
  impl_ = std::move(impl);
}

at::Tensor Int8Gemm::Run(const at::Tensor& activations) const {
  const int64_t m = activations.size(0);
  at::Tensor y = at::empty({m, impl_->out}, activations.options().dtype(at::kFloat));
  if (m == 0) return y;
  // The packed layout, given (not "any"): oneDNN takes a kernel that reads it (on this Zen 4 the
  // same brgemm kernels at every row count; a CPU whose kernels wanted another layout would get a
  // slower one, never a wrong one).
  const dnnl::matmul::primitive_desc plan =
      Plan(m, impl_->in, impl_->out, impl_->weights.get_desc());
  dnnl::memory src(plan.src_desc(), CpuEngine(), activations.data_ptr());
  dnnl::memory dst(plan.dst_desc(), CpuEngine(), y.data_ptr());
  dnnl::stream stream(CpuEngine());
  dnnl::matmul(plan).execute(
      stream, {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, impl_->weights}, {DNNL_ARG_DST, dst}});
  stream.wait();
  return y;
}

bool Int8Gemm::Available() { return true; }
const char* Int8Gemm::Backend() { return "onednn"; }

#else  // LibTorch's quantized engine

struct Int8Gemm::Impl {
  c10::intrusive_ptr<LinearPackedParamsBase> packed;
  bool seven_bit = false;
};

Int8Gemm::Int8Gemm(const at::Tensor& weight, bool seven_bit_activations) {
  if (!Available()) {
    throw std::runtime_error(
        "int8 needs LibTorch's oneDNN quantized engine, which this build lacks");
  }
  at::globalContext().setQEngine(at::QEngine::ONEDNN);
  using PackFn = c10::intrusive_ptr<LinearPackedParamsBase>(at::Tensor, c10::optional<at::Tensor>);
  static const auto pack = c10::Dispatcher::singleton()
                               .findSchemaOrThrow("quantized::linear_prepack", "")
                               .typed<PackFn>();
  // Scale 1: the integers themselves (LibTorch 1.13's per-channel path computes wrong results,
  // which is why Int8Linear applies its row scales itself).
  auto impl = std::make_unique<Impl>();
  impl->packed =
      pack.call(at::_make_per_tensor_quantized_tensor(weight.contiguous(), 1.0, 0), c10::nullopt);
  impl->seven_bit = seven_bit_activations;
  impl_ = std::move(impl);
}

at::Tensor Int8Gemm::Run(const at::Tensor& activations) const {
  // The engine quantises the floats per tensor over their range, [0, top] wherever a row is not
  // constant: scale 1, zero point 0, the same integers.
  return impl_->packed->apply_dynamic(activations.to(at::kFloat), impl_->seven_bit);
}

bool Int8Gemm::Available() {
  const auto& engines = at::globalContext().supportedQEngines();
  return std::find(engines.begin(), engines.end(), at::QEngine::ONEDNN) != engines.end();
}
const char* Int8Gemm::Backend() { return "libtorch"; }

#endif

Int8Gemm::~Int8Gemm() = default;
Int8Gemm::Int8Gemm(Int8Gemm&&) noexcept = default;
Int8Gemm& Int8Gemm::operator=(Int8Gemm&&) noexcept = default;

}  // namespace longqa
