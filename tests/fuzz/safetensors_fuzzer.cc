// Any bytes as a model.safetensors file: opened as the server opens it (memory-mapped, the
// header validated against the file size) and every listed tensor read. Checks: no crash, no
// sanitizer report, no read outside the mapping; a refusal is a status, never an exception.
#include <sys/mman.h>
#include <unistd.h>

#include <string>

#include "model/format/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // A memory file: no disk, and the reader's path-based Open is what runs.
  const int fd = memfd_create("safetensors", 0);
  if (fd < 0) return 0;
  size_t written = 0;
  while (written < size) {
    const ssize_t n = write(fd, data + written, size - written);
    if (n <= 0) break;
    written += static_cast<size_t>(n);
  }
  auto file = longqa::SafetensorsFile::Open("/proc/self/fd/" + std::to_string(fd));
  if (file.ok()) {
    for (const auto& [name, entry] : (*file)->entries()) {
      auto tensor = (*file)->Read(name);
      (void)tensor;
    }
  }
  close(fd);
  return 0;
}
