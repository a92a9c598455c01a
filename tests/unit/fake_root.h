// A fake file-system root for code that reads /proc and /sys/fs/cgroup under a `root` prefix
// (server/memory_budget.h, model/cpu_quota.h): a fresh temporary folder per instance, removed
// with it; Write creates the file's folders.
#pragma once

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>

namespace longqa::testing_support {

class FakeRoot {
 public:
  explicit FakeRoot(const std::string& name) : root_(Unique(name)) {
    std::filesystem::remove_all(root_);
    std::filesystem::create_directories(root_);
  }
  ~FakeRoot() { std::filesystem::remove_all(root_); }
  FakeRoot(const FakeRoot&) = delete;
  FakeRoot& operator=(const FakeRoot&) = delete;

  void Write(const std::string& path, const std::string& text) const {
    std::filesystem::create_directories((root_ / path).parent_path());
    std::ofstream(root_ / path) << text;
  }
  std::string path() const { return root_.string(); }

 private:
  static std::filesystem::path Unique(const std::string& name) {
    static std::atomic<int> count{0};
    return std::filesystem::temp_directory_path() /
           ("longqa_" + name + "_" + std::to_string(getpid()) + "_" + std::to_string(count++));
  }

  std::filesystem::path root_;
};

}  // namespace longqa::testing_support
