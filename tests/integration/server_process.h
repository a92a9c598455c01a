// Runs longqa-server as a child process on 127.0.0.1 with ephemeral ports (read back from the
// server's start-up line), keeps its stderr, and stops it with a signal.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <mutex>
#include <regex>
#include <string>
#include <thread>
#include <vector>

namespace longqa::testing_support {

class ServerProcess {
 public:
  // Starts the server with these flags (loopback listen/metrics addresses by default) and waits up
  // to 120 s for it to serve. Check ok() / log() afterwards.
  explicit ServerProcess(std::vector<std::string> flags) {
    // Defaults first: a caller's own --listen / --metrics_listen come later and win.
    flags.insert(flags.begin(),
                 {LONGQA_SERVER_BIN, "--listen=127.0.0.1:0", "--metrics_listen=127.0.0.1:0"});
    int pipe_fds[2];
    if (pipe(pipe_fds) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      dup2(pipe_fds[1], STDERR_FILENO);
      close(pipe_fds[0]);
      std::vector<char*> argv;
      for (auto& f : flags) argv.push_back(f.data());
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    close(pipe_fds[1]);
    reader_ = std::thread([this, fd = pipe_fds[0]] {
      char buf[4096];
      ssize_t n;
      while ((n = read(fd, buf, sizeof buf)) > 0) {
        std::lock_guard<std::mutex> lock(mu_);
        log_.append(buf, n);
      }
      close(fd);
    });
    const std::regex started("on port (\\d+), metrics on port (\\d+)");
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (std::chrono::steady_clock::now() < give_up) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        std::smatch m;
        if (std::regex_search(log_, m, started)) {
          grpc_port_ = std::stoi(m[1]);
          metrics_port_ = std::stoi(m[2]);
          std::smatch http;
          if (std::regex_search(log_, http, std::regex("HTTP API on port (\\d+)"))) {
            http_port_ = std::stoi(http[1]);
          }
          return;
        }
      }
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {  // died during start-up
        exited_ = true;
        exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }

  ~ServerProcess() {
    if (!exited_ && pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (reader_.joinable()) reader_.join();
  }

  bool ok() const { return grpc_port_ > 0; }
  std::string address() const { return "127.0.0.1:" + std::to_string(grpc_port_); }
  // The same port over IPv6 loopback (the server must listen on [::]): another caller address.
  std::string ipv6_address() const { return "[::1]:" + std::to_string(grpc_port_); }
  int metrics_port() const { return metrics_port_; }
  // The HTTP/JSON API's port when started with --http_listen, else 0.
  int http_port() const { return http_port_; }
  std::string log() const {
    std::lock_guard<std::mutex> lock(mu_);
    return log_;
  }

  // True when the process has mapped a file whose path contains `name` (a shared library).
  bool Maps(const std::string& name) const {
    std::ifstream maps("/proc/" + std::to_string(pid_) + "/maps");
    std::string line;
    while (std::getline(maps, line)) {
      if (line.find(name) != std::string::npos) return true;
    }
    return false;
  }

  // The server's peak resident memory so far (VmHWM), in bytes; -1 when unreadable.
  int64_t PeakResidentBytes() const {
    std::ifstream status("/proc/" + std::to_string(pid_) + "/status");
    std::string line;
    while (std::getline(status, line)) {
      if (line.rfind("VmHWM:", 0) == 0) return std::stoll(line.substr(6)) * 1024;  // kB
    }
    return -1;
  }

  void Signal(int sig) {
    if (!exited_) kill(pid_, sig);
  }

  // Sends `sig` and waits up to `timeout` for the exit; returns the exit code (-1: killed by a
  // signal or still running).
  int StopWith(int sig, std::chrono::seconds timeout = std::chrono::seconds(60)) {
    Signal(sig);
    return WaitExit(timeout);
  }

  int WaitExit(std::chrono::seconds timeout = std::chrono::seconds(60)) {
    if (exited_) return exit_code_;
    const auto give_up = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < give_up) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        exited_ = true;
        exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        return exit_code_;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return -1;
  }

 private:
  pid_t pid_ = -1;
  int grpc_port_ = 0;
  int metrics_port_ = 0;
  int http_port_ = 0;
  bool exited_ = false;
  int exit_code_ = -1;
  mutable std::mutex mu_;
  std::string log_;
  std::thread reader_;
};

}  // namespace longqa::testing_support
