// Whether an HTTP client is still waiting. cpp-httplib 0.11 (Debian 12) gives a handler neither
// its connection's socket nor a way to ask whether the client left, so an abandoned HTTP request
// was computed until its deadline. These find the connection's socket among the process's
// descriptors (the handler's worker owns it until the handler returns) and ask the kernel whether
// the peer closed it, so the batcher can drop or stop the request as it does a cancelled gRPC call.
#pragma once

#include <string>

namespace longqa {

// The socket of the TCP connection from remote_addr:remote_port (the numeric host, as
// getnameinfo writes it: cpp-httplib's Request::remote_addr) to local_port; -1 if none matches.
int FindConnectionSocket(const std::string& remote_addr, int remote_port, int local_port);

// Whether the peer of the connected socket `fd` closed its side or the connection broke (FIN,
// reset, error). Bytes waiting to be read (a pipelined next request) do not count as a close; a
// client that half-closes its sending side while it waits for the answer counts as gone, as nginx
// takes it (its 499).
bool PeerClosed(int fd);

}  // namespace longqa
