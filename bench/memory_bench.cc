// Activation memory, estimated against measured: loads a model, answers one question on a
// document of the given size (a text file repeated), and prints the admission estimate
// (Engine::ActivationBytes) next to the peak resident memory the run added, and the peak of the
// CPU tensors the run allocated ("tensors": what the code holds at once, apart from what the
// allocator keeps; tcmalloc's retention moves the resident peak by +-20% from run to run of the
// same code, docs/perf/README.md). Run it once per size in a fresh process
// (tests/integration/memory_estimate_test.sh does): the peak is the process's.
//
// Usage: longqa-memory-bench --model_dir=DIR --text=FILE (--bytes=N | --tokens=N) [--threads=2]
//                            [--precision=fp32|bf16|int8|auto]   (auto: the server's default)
// --bytes repeats the whole file until the text has N bytes; --tokens repeats its paragraphs
// until the model's tokenizer makes at least N document tokens (sizes in tokens whatever the
// tokenizer: the memory target is stated from 4k to 32k tokens).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "bench/tensor_bytes_tracker.h"
#include "model/compute_info.h"
#include "model/document.h"
#include "model/encoders/precision.h"
#include "model/engine.h"

namespace {

constexpr char kQuestion[] = "What is the name of the river?";

int64_t DocumentTokens(const longqa::Engine& engine, const std::string& text) {
  longqa::QaRequest request;
  request.question = kQuestion;
  request.text = text;
  auto prepared = engine.Prepare(std::move(request));
  return prepared.ok() ? static_cast<int64_t>(prepared->document.ids.size()) : -1;
}

// The file's paragraphs (SplitParagraphs: as the server splits plain text) in order, repeated
// until the document has at least `tokens` tokens: a first guess from the whole file's bytes a
// token, then more paragraphs while it falls short.
std::string TextOfTokens(const longqa::Engine& engine, const std::string& unit, int64_t tokens) {
  std::vector<std::string> paragraphs;
  for (const auto& [begin, end] : longqa::SplitParagraphs(unit)) {
    paragraphs.push_back(unit.substr(begin, end - begin));
  }
  if (paragraphs.empty()) paragraphs.push_back(unit);  // a file of blank lines only
  const int64_t unit_tokens = std::max<int64_t>(1, DocumentTokens(engine, unit));
  auto bytes_for = [&](int64_t n) {  // at the file's bytes a token
    return static_cast<size_t>(n * static_cast<int64_t>(unit.size()) / unit_tokens);
  };
  size_t wanted = bytes_for(tokens);
  std::string text;
  for (size_t next = 0;;) {
    while (text.size() < wanted) text += paragraphs[next++ % paragraphs.size()] + "\n\n";
    const int64_t have = DocumentTokens(engine, text);
    if (have < 0 || have >= tokens) return text;
    wanted = text.size() + 1 + bytes_for(tokens - have);
  }
}

// A /proc/self/status field in bytes ("VmRSS", "VmHWM").
int64_t StatusBytes(const std::string& field) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::stoll(line.substr(field.size() + 1)) * 1024;
  }
  return -1;
}

std::string Flag(int argc, char** argv, const std::string& name, const std::string& fallback) {
  const std::string prefix = "--" + name + "=";
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]).rfind(prefix, 0) == 0) return argv[i] + prefix.size();
  }
  return fallback;
}

}  // namespace

int main(int argc, char** argv) {
  longqa::RunWithBestBlasKernels(argv);  // OpenBLAS kernels for this CPU: may run main again
  longqa::PreferAvx512Kernels(longqa::CpuIsa());  // before LibTorch's first kernel call
  const std::string model_dir = Flag(argc, argv, "model_dir", "");
  const std::string text_file = Flag(argc, argv, "text", "");
  const int64_t bytes = std::stoll(Flag(argc, argv, "bytes", "100000"));
  const int64_t tokens = std::stoll(Flag(argc, argv, "tokens", "0"));
  longqa::EngineOptions options;
  options.threads = std::stoi(Flag(argc, argv, "threads", "2"));
  const std::string precision = Flag(argc, argv, "precision", "fp32");
  options.precision = longqa::ParsePrecision(precision);
  if (!options.precision && precision != "auto") {
    std::fprintf(stderr, "--precision must be fp32, bf16, int8 or auto\n");
    return 1;
  }
  auto engine = longqa::Engine::LoadFromDir(model_dir, options);
  if (!engine.ok()) {
    std::fprintf(stderr, "%s\n", std::string(engine.status().message()).c_str());
    return 1;
  }
  std::stringstream source;
  source << std::ifstream(text_file).rdbuf();
  const std::string unit = source.str();
  if (unit.empty()) {
    std::fprintf(stderr, "cannot read --text=%s\n", text_file.c_str());
    return 1;
  }
  // Warm up as the server does before it serves: first-call allocations are not the request's.
  longqa::QaRequest warm_up;
  warm_up.question = "warm up";
  warm_up.text = unit.substr(0, 2000);
  if (!(*engine)->Answer(warm_up).ok()) {
    std::fprintf(stderr, "warm-up failed\n");
    return 1;
  }
  longqa::QaRequest request;
  request.question = kQuestion;
  if (tokens > 0) {
    request.text = TextOfTokens(**engine, unit, tokens);
  } else {
    while (static_cast<int64_t>(request.text.size()) < bytes) request.text += unit + "\n\n";
  }
  auto prepared = (*engine)->Prepare(std::move(request));
  if (!prepared.ok()) {
    std::fprintf(stderr, "%s\n", std::string(prepared.status().message()).c_str());
    return 1;
  }
  const int64_t estimate = (*engine)->ActivationBytes(*prepared);
  const longqa::TensorBytesTracker& tracker = longqa::TensorBytesTracker::Install();
  std::ofstream("/proc/self/clear_refs") << "5";  // the peak starts again from here
  const int64_t before = StatusBytes("VmRSS");
  const auto answers = (*engine)->Run({&*prepared});
  const int64_t peak = StatusBytes("VmHWM");
  if (!answers[0].ok()) {
    std::fprintf(stderr, "%s\n", std::string(answers[0].status().message()).c_str());
    return 1;
  }
  const double mib = 1 << 20;
  // "tensors" before "ratio": memory_estimate_test.sh reads the line's last field as the ratio.
  std::printf(
      "%s tokens %zu paragraphs %zu estimate %.0f MiB measured %.0f MiB tensors %.0f MiB ratio "
      "%.2f\n",
      model_dir.c_str(), prepared->document.ids.size(), prepared->document.paragraph_bytes.size(),
      estimate / mib, (peak - before) / mib, tracker.peak() / mib,
      static_cast<double>(estimate) / static_cast<double>(peak - before));
  return 0;
}
