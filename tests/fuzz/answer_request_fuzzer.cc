// Any bytes as an AnswerRequest, through the path of the service's handler (server/service.cc)
// without the network: proto parse, ToQaRequest's validation, Engine::Prepare, the activation
// estimate, Engine::Run on tiny random-weight models (a Cluster-Former and an ETC one, the first
// byte picks), FillResponse. Checks: no crash, no sanitizer report; every answer span inside the
// document and on code point boundaries; a response that serializes.
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "longqa/v1/qa.pb.h"
#include "server/batcher.h"
#include "server/convert.h"
#include "tests/fuzz/fuzz_checks.h"
#include "tools/random_model.h"

namespace {

std::unique_ptr<longqa::Engine> engines[2];

std::unique_ptr<longqa::Engine> MakeEngine(const longqa::RandomModelSpec& spec,
                                           const std::string& dir) {
  absl::Status written = longqa::WriteRandomModel(spec, dir);
  auto engine = written.ok() ? longqa::Engine::LoadFromDir(dir, {.threads = 1})
                             : absl::StatusOr<std::unique_ptr<longqa::Engine>>(written);
  if (!engine.ok()) {
    std::fprintf(stderr, "answer_request_fuzzer: %s\n", engine.status().ToString().c_str());
    std::abort();
  }
  return std::move(*engine);
}

void CheckAnswer(const longqa::QaAnswer& answer, std::string_view text) {
  if (answer.has_long_answer) {
    longqa::fuzz::CheckSpan(text, true, answer.long_answer.byte_begin, answer.long_answer.byte_end);
  }
  for (const longqa::AnswerSpan& span : answer.short_answers) {
    longqa::fuzz::CheckSpan(text, true, span.byte_begin, span.byte_end);
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const std::string dir =
      std::filesystem::temp_directory_path() / ("longqa-fuzz-models-" + std::to_string(getpid()));
  longqa::RandomModelSpec cluster_former;
  cluster_former.layers = "SC";
  cluster_former.hidden_size = 16;
  cluster_former.num_heads = 2;
  cluster_former.intermediate_size = 32;
  cluster_former.window_tokens = 24;
  cluster_former.stride_tokens = 16;
  cluster_former.clusters = 3;
  cluster_former.max_question_tokens = 8;
  longqa::RandomModelSpec etc = cluster_former;
  etc.architecture = "etc";
  etc.layers = "EE";
  etc.etc_radius = 4;
  engines[0] = MakeEngine(cluster_former, dir + "/cluster_former");
  engines[1] = MakeEngine(etc, dir + "/etc");
  std::filesystem::remove_all(dir);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const longqa::Engine& engine = *engines[data[0] & 1];
  longqa::v1::AnswerRequest request;
  if (!request.ParseFromArray(data + 1, static_cast<int>(size - 1))) return 0;
  auto qa_request = longqa::ToQaRequest(request, 1 << 16);
  if (!qa_request.ok()) return 0;
  auto prepared = engine.Prepare(std::move(*qa_request), /*max_document_tokens=*/2048);
  if (!prepared.ok()) return 0;
  if (engine.ActivationBytes(*prepared) <= 0) longqa::fuzz::Fail("activation estimate", 0, 0);
  auto answers = engine.Run({&*prepared});
  if (answers.size() != 1) longqa::fuzz::Fail("one answer a request", answers.size(), 1);
  if (!answers[0].ok()) return 0;
  CheckAnswer(*answers[0], prepared->request.text);
  longqa::v1::AnswerResponse response;
  longqa::FillResponse(*answers[0], *prepared, true, 0.0, longqa::WorkTiming(), 0.0, &response);
  std::string bytes;
  if (!response.SerializeToString(&bytes)) longqa::fuzz::Fail("response serializes", 0, 0);
  return 0;
}
