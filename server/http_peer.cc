#include "server/http_peer.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <cstdlib>

namespace longqa {
namespace {

// The port of an IPv4 or IPv6 socket address; -1 for other families.
int PortOf(const sockaddr_storage& address) {
  if (address.ss_family == AF_INET) {
    return ntohs(reinterpret_cast<const sockaddr_in&>(address).sin_port);
  }
  if (address.ss_family == AF_INET6) {
    return ntohs(reinterpret_cast<const sockaddr_in6&>(address).sin6_port);
  }
  return -1;
}

// The numeric host of a socket address, as cpp-httplib writes Request::remote_addr.
std::string NumericHost(const sockaddr_storage& address, socklen_t length) {
  char name[NI_MAXHOST];
  if (getnameinfo(reinterpret_cast<const sockaddr*>(&address), length, name, sizeof(name), nullptr,
                  0, NI_NUMERICHOST) != 0) {
    return "";
  }
  return name;
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
    // The ports first (no name lookups on the way: a server holds hundreds of descriptors);
    // getsockname fails on what is not a socket, getpeername on a listening socket.
    sockaddr_storage local{}, remote{};
    socklen_t local_length = sizeof(local), remote_length = sizeof(remote);
    const int candidate = static_cast<int>(fd);
    if (getsockname(candidate, reinterpret_cast<sockaddr*>(&local), &local_length) != 0 ||
        PortOf(local) != local_port ||
        getpeername(candidate, reinterpret_cast<sockaddr*>(&remote), &remote_length) != 0 ||
        PortOf(remote) != remote_port || NumericHost(remote, remote_length) != remote_addr) {
      continue;
    }
    found = candidate;
    break;
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
