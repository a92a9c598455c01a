// server/http_peer: a real loopback TCP connection, found by its addresses, and its peer's close
// seen (and a pipelined request not taken for one).
#include "server/http_peer.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

namespace longqa {
namespace {

int PortOf(int fd, bool peer) {
  sockaddr_in address{};
  socklen_t length = sizeof(address);
  auto* a = reinterpret_cast<sockaddr*>(&address);
  EXPECT_EQ(peer ? getpeername(fd, a, &length) : getsockname(fd, a, &length), 0);
  return ntohs(address.sin_port);
}

// A listening socket on 127.0.0.1, a client connected to it and the server's accepted end.
struct Connection {
  int listener = -1, client = -1, server = -1;
  Connection() {
    listener = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
    EXPECT_EQ(listen(listener, 4), 0);
    address.sin_port = htons(static_cast<uint16_t>(PortOf(listener, false)));
    client = socket(AF_INET, SOCK_STREAM, 0);
    EXPECT_EQ(connect(client, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
    server = accept(listener, nullptr, nullptr);
    EXPECT_GE(server, 0);
  }
  ~Connection() {
    for (int fd : {listener, client, server}) {
      if (fd >= 0) close(fd);
    }
  }
};

// Loopback delivers the FIN at once; a moment's grace keeps the test from depending on that.
bool ClosedWithinASecond(int fd) {
  for (int i = 0; i < 100; ++i) {
    if (PeerClosed(fd)) return true;
    usleep(10000);
  }
  return false;
}

TEST(HttpPeerTest, FindsTheAcceptedSocketByItsAddresses) {
  Connection c;
  const int server_port = PortOf(c.server, false), client_port = PortOf(c.client, false);
  EXPECT_EQ(FindConnectionSocket("127.0.0.1", client_port, server_port), c.server);
  // Seen from the other end, the client's socket is the one.
  EXPECT_EQ(FindConnectionSocket("127.0.0.1", server_port, client_port), c.client);
  // Any part unlike: none (the listener has no peer, so it never matches).
  EXPECT_EQ(FindConnectionSocket("127.0.0.2", client_port, server_port), -1);
  EXPECT_EQ(FindConnectionSocket("127.0.0.1", client_port + 1, server_port), -1);
  EXPECT_EQ(FindConnectionSocket("127.0.0.1", client_port, server_port + 1), -1);
}

TEST(HttpPeerTest, APeerThatClosesIsGoneAndOneThatSendsMoreIsNot) {
  Connection c;
  EXPECT_FALSE(PeerClosed(c.server));
  // A pipelined request waiting to be read is not a close, and is still there afterwards.
  ASSERT_EQ(write(c.client, "GET /", 5), 5);
  EXPECT_FALSE(PeerClosed(c.server));
  char buffer[8];
  EXPECT_EQ(read(c.server, buffer, sizeof(buffer)), 5);
  close(c.client);
  c.client = -1;
  EXPECT_TRUE(ClosedWithinASecond(c.server));
}

TEST(HttpPeerTest, AClosedPeerWithUnreadBytesIsGone) {
  Connection c;
  ASSERT_EQ(write(c.client, "POST /v1/answer", 15), 15);
  close(c.client);
  c.client = -1;
  EXPECT_TRUE(ClosedWithinASecond(c.server));
}

}  // namespace
}  // namespace longqa
