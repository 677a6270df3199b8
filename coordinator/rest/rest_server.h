// RestServer: the coordinator's HTTP endpoint (Flink's RestServerEndpoint), cpp-httplib on its
// own threads, answering every request through a RestRouter (rest_router.h). It never touches
// the control loop: handlers read a StatusSnapshot or go through the ControlCommandBridge.
//
// Bounded by construction, so that a slow, hung or hostile client costs little and never
// blocks anything but its own connection:
//   * `threads` HTTP threads serve connections; at most `max_queued_connections` more wait for
//     one; a connection beyond that gets 503 at once and is closed (counted: shed_connections);
//   * a request must arrive completely within `request_read_deadline` of its first byte (a client
//     trickling a byte per second is cut off), each read/write waits at most its timeout;
//   * an idle keep-alive connection is closed after `keep_alive_timeout`, and after
//     `keep_alive_max_requests` requests;
//   * a request body over `max_body_bytes` is refused with 413.
//
// TLS (`tls_cert_file` + `tls_key_file`, --rest-tls-cert/--rest-tls-key): every connection is
// TLS 1.2+ (OpenSSL), its handshake bounded by `request_read_deadline`; a plain HTTP request
// to a TLS port fails its handshake and is closed. A shed connection of a TLS server is closed
// without the 503 (answering needs a handshake the accept thread does not do).
//
//   RestRouter router;  AddApiRoutes(router, ...);
//   KF_ASSIGN_OR_RETURN(auto server, RestServer::Start(&router, {.bind_address = "127.0.0.1"}));
//   server->port();   // the bound port (useful with port 0)
//
// RAII: the destructor stops accepting, cuts open connections and joins every thread.
// Threading: Start/destructor on one thread; `router` must outlive the server.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "common/status.h"
#include "coordinator/rest/rest_router.h"

namespace keyflow {

struct RestServerOptions {
  std::string bind_address = "127.0.0.1";  // an IP or host name of this machine; 0.0.0.0 = all
  int port = 8081;                         // 0 = any free port
  size_t threads = 8;
  size_t max_queued_connections = 64;
  std::chrono::milliseconds read_timeout{5000};
  std::chrono::milliseconds write_timeout{5000};
  std::chrono::milliseconds request_read_deadline{10000};
  std::chrono::milliseconds keep_alive_timeout{5000};
  size_t keep_alive_max_requests = 100;
  size_t max_body_bytes = 64 * 1024;
  // Named in the bind error ("choose another --rest-port").
  std::string port_flag = "--rest-port";
  // Both set: serve HTTPS with this PEM certificate (chain) and key; Start fails with a
  // sentence naming the flag if they are unusable (common/security/tls_certificate.h).
  std::string tls_cert_file;
  std::string tls_key_file;
};

struct RestServerStats {
  uint64_t connections = 0;       // accepted and served
  uint64_t shed_connections = 0;  // answered 503 because every thread and queue slot was busy
  uint64_t requests = 0;
  uint64_t cut_connections = 0;         // a request did not arrive within request_read_deadline
  uint64_t tls_handshake_failures = 0;  // TLS only: e.g. a plain HTTP request, a timeout
};

class RestServer {
 public:
  // Binds and starts serving. A port in use is AlreadyExists naming the port and the flag; an
  // address not of this host is InvalidArgument.
  static Result<std::unique_ptr<RestServer>> Start(const RestRouter* router,
                                                   RestServerOptions options);
  ~RestServer();
  RestServer(const RestServer&) = delete;
  RestServer& operator=(const RestServer&) = delete;

  int port() const { return port_; }
  // "http://127.0.0.1:8081", or "https://..." with TLS.
  std::string url() const;
  bool tls() const { return tls_; }
  RestServerStats stats() const;

  class Impl;  // the httplib::Server subclass (rest_server.cc)

 private:
  RestServer() = default;
  std::unique_ptr<Impl> impl_;
  std::thread listener_;
  int port_ = 0;
  bool tls_ = false;
  std::string bind_address_;
};

}  // namespace keyflow
