// Any bytes as a JSONL file, for both readers of one: the CLI's (`longqa batch` / `eval` input:
// ReadJsonLines + RequestFromJson) and the trainer's and centroid builder's (ForEachJsonLine +
// QaRequestFromJson). Checks: no crash, no sanitizer report; a bad line is an error naming its
// line (UsageError, a status, or a json exception the callers catch), never anything else.
#include <sys/mman.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <string>

#include "client/args.h"
#include "client/requests.h"
#include "model/request_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const int fd = memfd_create("jsonl", 0);
  if (fd < 0) return 0;
  if (write(fd, data, size) != static_cast<ssize_t>(size)) {
    close(fd);
    return 0;
  }
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  std::vector<std::pair<int64_t, std::string>> bad_lines;
  try {
    for (const auto& [number, line] : longqa::cli::ReadJsonLines(path, "--input", &bad_lines)) {
      try {
        longqa::v1::AnswerRequest request = longqa::cli::RequestFromJson(line, number);
        (void)request;
      } catch (const longqa::cli::UsageError&) {
      }
    }
  } catch (const longqa::cli::UsageError&) {  // the file as a whole (e.g. no line)
  }
  absl::Status status = longqa::ForEachJsonLine(path, 0, [](const std::string& line) {
    try {
      longqa::QaRequest request = longqa::QaRequestFromJson(nlohmann::json::parse(line));
      (void)request;
    } catch (const nlohmann::json::exception& e) {
      return absl::InvalidArgumentError(e.what());
    }
    return absl::OkStatus();
  });
  (void)status;
  close(fd);
  return 0;
}
