// Any bytes as config.json: parsed and validated as at model load. Checks: no crash, no
// exception escaping (nlohmann::json throws on a wrong type: the parser must turn that into a
// status), and an accepted config survives a round trip through ModelConfigToJson unchanged.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "model/format/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto config = longqa::ParseModelConfig(std::string(reinterpret_cast<const char*>(data), size));
  if (!config.ok()) return 0;
  const std::string json = longqa::ModelConfigToJson(*config);
  auto again = longqa::ParseModelConfig(json);
  if (!again.ok() || longqa::ModelConfigToJson(*again) != json) {
    std::fprintf(stderr, "config round trip failed: %s\n%s\n",
                 again.ok() ? "different" : again.status().ToString().c_str(), json.c_str());
    std::abort();
  }
  return 0;
}
