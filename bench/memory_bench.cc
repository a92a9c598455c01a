// Activation memory, estimated against measured: loads a model, answers one question on a
// document of the given size (a text file repeated), and prints the admission estimate
// (Engine::ActivationBytes) next to the peak resident memory the run added. Run it once per
// size in a fresh process (tests/integration/memory_estimate_test.sh does): the peak is the
// process's.
//
// Usage: longqa-memory-bench --model_dir=DIR --text=FILE --bytes=N [--threads=2]
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "model/compute_info.h"
#include "model/engine.h"

namespace {

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
  longqa::PreferAvx512Kernels(longqa::CpuIsa());  // before LibTorch's first kernel call
  const std::string model_dir = Flag(argc, argv, "model_dir", "");
  const std::string text_file = Flag(argc, argv, "text", "");
  const int64_t bytes = std::stoll(Flag(argc, argv, "bytes", "100000"));
  longqa::EngineOptions options;
  options.threads = std::stoi(Flag(argc, argv, "threads", "2"));
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
  request.question = "What is the name of the river?";
  while (static_cast<int64_t>(request.text.size()) < bytes) request.text += unit + "\n\n";
  auto prepared = (*engine)->Prepare(std::move(request));
  if (!prepared.ok()) {
    std::fprintf(stderr, "%s\n", std::string(prepared.status().message()).c_str());
    return 1;
  }
  const int64_t estimate = (*engine)->ActivationBytes(*prepared);
  std::ofstream("/proc/self/clear_refs") << "5";  // the peak starts again from here
  const int64_t before = StatusBytes("VmRSS");
  const auto answers = (*engine)->Run({&*prepared});
  const int64_t peak = StatusBytes("VmHWM");
  if (!answers[0].ok()) {
    std::fprintf(stderr, "%s\n", std::string(answers[0].status().message()).c_str());
    return 1;
  }
  const double mib = 1 << 20;
  std::printf("%s tokens %zu paragraphs %zu estimate %.0f MiB measured %.0f MiB ratio %.2f\n",
              model_dir.c_str(), prepared->document.ids.size(),
              prepared->document.paragraph_bytes.size(), estimate / mib, (peak - before) / mib,
              static_cast<double>(estimate) / static_cast<double>(peak - before));
  return 0;
}
