#include "model/request_json.h"

#include <fstream>

#include "absl/strings/str_cat.h"

namespace longqa {

QaRequest QaRequestFromJson(const nlohmann::json& line) {
  QaRequest r;
  r.question = line.at("question").get<std::string>();
  if (line.contains("paragraphs")) {
    r.text = JoinParagraphs(line["paragraphs"].get<std::vector<std::string>>(), &r.paragraphs);
  } else {
    r.text = line.at("document").get<std::string>();
  }
  return r;
}

absl::Status ForEachJsonLine(const std::string& path, int64_t limit,
                             const std::function<absl::Status(const std::string& line)>& visit) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  int64_t visited = 0;
  std::string line;
  for (int64_t n = 1; (limit <= 0 || visited < limit) && std::getline(in, line); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    if (const absl::Status s = visit(line); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(path, " line ", n, ": ", s.message()));
    }
    ++visited;
  }
  if (visited == 0) return absl::InvalidArgumentError(absl::StrCat(path, " holds no example"));
  return absl::OkStatus();
}

}  // namespace longqa
