#include "model/cgroup_folders.h"

#include <filesystem>
#include <fstream>
#include <sstream>

namespace longqa {

namespace {

// This process's path in the hierarchy of `controller` from /proc/self/cgroup: v2's line is
// "0::/path" (no controllers), a v1 line names its controllers ("4:cpu,cpuacct:/path"). Empty when
// no line names it.
std::string OwnPath(const std::string& controller, const std::string& root) {
  std::ifstream in(root + "/proc/self/cgroup");
  std::string line;
  while (std::getline(in, line)) {
    const size_t first = line.find(':');
    const size_t second = first == std::string::npos ? first : line.find(':', first + 1);
    if (second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1);
    if (controller.empty() ? !controllers.empty() : controllers.empty()) continue;
    std::stringstream names(controllers);
    std::string name;
    bool named = controller.empty();
    while (!named && std::getline(names, name, ',')) named = name == controller;
    if (named) return line.substr(second + 1);
  }
  return "";
}

}  // namespace

std::vector<std::string> CgroupFolders(const std::string& controller, const std::string& root) {
  namespace fs = std::filesystem;
  const fs::path mount = root + "/sys/fs/cgroup" + (controller.empty() ? "" : "/" + controller);
  std::vector<std::string> folders;
  std::error_code error;
  // "/a/b/c" → mount/a/b/c, mount/a/b, mount/a; the mount itself last, always.
  for (fs::path own = fs::path(OwnPath(controller, root)).relative_path(); !own.empty();
       own = own.parent_path()) {
    if (fs::is_directory(mount / own, error)) folders.push_back((mount / own).string());
  }
  folders.push_back(mount.string());
  return folders;
}

}  // namespace longqa
