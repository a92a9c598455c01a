#include "server/http_peer.h"

#include <dirent.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>

#include <cstdlib>
#include <cstring>

namespace longqa {
namespace {

// The port and numeric host of a socket address (IPv4 or IPv6); false for other families.
bool HostAndPort(const sockaddr_storage& address, socklen_t length, std::string* host, int* port) {
  char name[NI_MAXHOST], service[NI_MAXSERV];
  if (address.ss_family != AF_INET && address.ss_family != AF_INET6) return false;
  if (getnameinfo(reinterpret_cast<const sockaddr*>(&address), length, name, sizeof(name), service,
                  sizeof(service), NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
    return false;
  }
  *host = name;
  *port = std::atoi(service);
  return true;
}

}  // namespace

int FindConnectionSocket(const std::string& remote_addr, int remote_port, int local_port) {
  DIR* fds = opendir("/proc/self/fd");
  if (fds == nullptr) return -1;
  int found = -1;
  while (const dirent* entry = readdir(fds)) {
    char* end = nullptr;
    const long fd = std::strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0' || fd == dirfd(fds)) continue;
    sockaddr_storage local{}, remote{};
    socklen_t local_length = sizeof(local), remote_length = sizeof(remote);
    // getsockname fails on what is not a socket; getpeername on a listening socket.
    if (getsockname(static_cast<int>(fd), reinterpret_cast<sockaddr*>(&local), &local_length) !=
            0 ||
        getpeername(static_cast<int>(fd), reinterpret_cast<sockaddr*>(&remote), &remote_length) !=
            0) {
      continue;
    }
    std::string local_host, remote_host;
    int local_found = -1, remote_found = -1;
    if (HostAndPort(local, local_length, &local_host, &local_found) &&
        HostAndPort(remote, remote_length, &remote_host, &remote_found) &&
        local_found == local_port && remote_found == remote_port && remote_host == remote_addr) {
      found = static_cast<int>(fd);
      break;
    }
  }
  closedir(fds);
  return found;
}

bool PeerClosed(int fd) {
  pollfd p{fd, POLLIN | POLLRDHUP, 0};
  if (poll(&p, 1, 0) <= 0) return false;
  if ((p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0) return true;
  // Readable without a hang-up: a pipelined request, or an end of stream poll did not flag.
  char byte;
  return recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
}

}  // namespace longqa
