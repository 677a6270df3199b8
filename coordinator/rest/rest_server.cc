#include "coordinator/rest/rest_server.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fcntl.h>
#include <httplib.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <vector>

#include "common/logging/logging.h"
#include "common/security/tls_certificate.h"

namespace keyflow {
namespace {

using SteadyClock = std::chrono::steady_clock;

// Set while the accept thread runs a connection it sheds (BoundedTaskQueue::enqueue).
thread_local bool tl_shed = false;

// httplib's ThreadPool with a bounded queue: a connection that finds every thread busy and the
// queue full is run at once on the accept thread in "shed" mode (a canned 503, no reading).
class BoundedTaskQueue final : public httplib::TaskQueue {
 public:
  BoundedTaskQueue(size_t threads, size_t max_queued) : max_queued_(max_queued) {
    for (size_t i = 0; i < threads; ++i) threads_.emplace_back([this] { Work(); });
  }
  void enqueue(std::function<void()> fn) override {
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (jobs_.size() < max_queued_ && !shutdown_) {
        jobs_.push_back(std::move(fn));
        cv_.notify_one();
        return;
      }
    }
    tl_shed = true;
    fn();
    tl_shed = false;
  }
  void shutdown() override {
    {
      std::unique_lock<std::mutex> lock(mu_);
      shutdown_ = true;
    }
    cv_.notify_all();
    for (std::thread& t : threads_) t.join();
    threads_.clear();
  }

 private:
  void Work() {
    while (true) {
      std::function<void()> fn;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [this] { return shutdown_ || !jobs_.empty(); });
        if (jobs_.empty()) return;  // shut down, and every queued connection served
        fn = std::move(jobs_.front());
        jobs_.pop_front();
      }
      fn();
    }
  }

  const size_t max_queued_;
  std::mutex mu_;  // httplib's task queue interface; not shared with keyflow code
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  bool shutdown_ = false;
  std::vector<std::thread> threads_;
};

// Waits until `sock` has `events` (or hangs up / fails) before `until`; polls in slices so that
// a stopping server is noticed within 100 ms.
bool PollUntil(int sock, short events, SteadyClock::time_point until,
               const std::atomic<bool>& stopping) {
  while (!stopping.load()) {
    auto left = std::chrono::ceil<std::chrono::milliseconds>(until - SteadyClock::now());
    if (left.count() <= 0) return false;
    pollfd p{sock, events, 0};
    int r = poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 100)));
    if (r > 0) return (p.revents & (events | POLLHUP | POLLERR)) != 0;
    if (r < 0 && errno != EINTR) return false;
  }
  return false;
}

// A socket stream whose reads stop at a deadline (the end of the current request's read
// budget) and whenever the server stops.
class DeadlineStream final : public httplib::Stream {
 public:
  // `ssl`: the connection's TLS session (handshake done; the socket non-blocking), or null.
  DeadlineStream(int sock, const RestServerOptions& o, const std::atomic<bool>* stopping,
                 SSL* ssl = nullptr)
      : sock_(sock), options_(o), stopping_(stopping), ssl_(ssl) {}

  void StartRequest() {
    read_deadline_ = SteadyClock::now() + options_.request_read_deadline;
    cut_ = false;
  }
  bool cut() const { return cut_; }

  bool is_readable() const override {
    if (ssl_ != nullptr && SSL_pending(ssl_) > 0) return true;
    return WaitFor(POLLIN, ReadLimit());
  }
  bool is_writable() const override {
    return WaitFor(POLLOUT, SteadyClock::now() + options_.write_timeout);
  }
  ssize_t read(char* ptr, size_t size) override {
    if (!is_readable()) {
      if (SteadyClock::now() >= read_deadline_) cut_ = true;
      return -1;
    }
    if (ssl_ != nullptr) return TlsIo(ptr, size, /*reading=*/true);
    ssize_t n;
    do {
      n = recv(sock_, ptr, size, 0);
    } while (n < 0 && errno == EINTR);
    return n;
  }
  ssize_t write(const char* ptr, size_t size) override {
    if (!is_writable()) return -1;
    if (ssl_ != nullptr) return TlsIo(const_cast<char*>(ptr), size, /*reading=*/false);
    ssize_t n;
    do {
      n = send(sock_, ptr, size, MSG_NOSIGNAL);
    } while (n < 0 && errno == EINTR);
    return n;
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    Address(getpeername, ip, port);
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    Address(getsockname, ip, port);
  }
  socket_t socket() const override { return sock_; }

 private:
  // One SSL_read/SSL_write, waiting (within the read or write timeout) while TLS needs the
  // socket readable or writable. A clean close reads 0; anything else is -1.
  ssize_t TlsIo(char* ptr, size_t size, bool reading) {
    const auto until = reading ? ReadLimit() : SteadyClock::now() + options_.write_timeout;
    const int len = static_cast<int>(std::min<size_t>(size, 1 << 30));
    for (;;) {
      const int n = reading ? SSL_read(ssl_, ptr, len) : SSL_write(ssl_, ptr, len);
      if (n > 0) return n;
      const int err = SSL_get_error(ssl_, n);
      ERR_clear_error();
      if (err == SSL_ERROR_ZERO_RETURN) return 0;
      short events = 0;
      if (err == SSL_ERROR_WANT_READ) events = POLLIN;
      if (err == SSL_ERROR_WANT_WRITE) events = POLLOUT;
      if (events == 0 || !WaitFor(events, until)) {
        if (reading && SteadyClock::now() >= read_deadline_) cut_ = true;
        return -1;
      }
    }
  }
  SteadyClock::time_point ReadLimit() const {
    return std::min(read_deadline_, SteadyClock::now() + options_.read_timeout);
  }
  bool WaitFor(short events, SteadyClock::time_point until) const {
    return PollUntil(sock_, events, until, *stopping_);
  }
  void Address(int (*get)(int, sockaddr*, socklen_t*), std::string& ip, int& port) const {
    sockaddr_storage addr{};
    socklen_t len = sizeof(addr);
    ip.clear();
    port = 0;
    if (get(sock_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return;
    char host[NI_MAXHOST];
    char serv[NI_MAXSERV];
    if (getnameinfo(reinterpret_cast<sockaddr*>(&addr), len, host, sizeof(host), serv, sizeof(serv),
                    NI_NUMERICHOST | NI_NUMERICSERV) == 0) {
      ip = host;
      port = std::atoi(serv);
    }
  }

  int sock_;
  const RestServerOptions& options_;
  const std::atomic<bool>* stopping_;
  SSL* ssl_;
  SteadyClock::time_point read_deadline_ = SteadyClock::now();
  bool cut_ = false;
};

HttpRequest ToRequest(const httplib::Request& req) {
  HttpRequest r;
  r.method = req.method;
  r.path = req.path;
  for (const auto& [k, v] : req.params) r.query.emplace(k, v);
  for (const auto& [k, v] : req.headers) {
    std::string name = k;
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    r.headers.emplace(std::move(name), v);
  }
  r.body = req.body;
  r.remote_address = req.remote_addr;
  return r;
}

// The JSON sentence of an error httplib answers itself (bad request line, body too large, ...).
std::string HttplibErrorSentence(int status, size_t max_body) {
  switch (status) {
    case 400:
      return "the request is not valid HTTP/1.1 (a POST or PUT needs a body or Content-Length: 0, "
             "e.g. curl -d '{}'): check the client";
    case 413:
      return "the request body is larger than " + std::to_string(max_body) +
             " bytes: REST commands take small JSON bodies";
    case 414:
      return "the request URI is too long: REST paths are short";
    default:
      return "the request failed with HTTP status " + std::to_string(status);
  }
}

// What a shed connection gets, without reading its request.
std::string BusyResponse() {
  const std::string body =
      JsonError(503,
                "the coordinator's REST server is busy with other connections: retry in a "
                "second")
          .body;
  return "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
         "Cache-Control: no-store\r\nRetry-After: 1\r\nConnection: close\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + body;
}

}  // namespace

class RestServer::Impl final : public httplib::Server {
 public:
  Impl(const RestRouter* router, RestServerOptions options, std::shared_ptr<ssl_ctx_st> tls)
      : router_(router), options_(std::move(options)), tls_(std::move(tls)) {
    new_task_queue = [this] {
      return new BoundedTaskQueue(options_.threads, options_.max_queued_connections);
    };
    set_payload_max_length(options_.max_body_bytes);
    // httplib's default also sets SO_REUSEPORT, which would let a second coordinator bind the
    // same port and take half of its connections: only SO_REUSEADDR (a restart may rebind a
    // port whose old connections are in TIME_WAIT).
    set_socket_options([](socket_t sock) {
      int yes = 1;
      setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    });
    set_keep_alive_max_count(options_.keep_alive_max_requests);
    auto handler = [this](const httplib::Request& req, httplib::Response& res) { Serve(req, res); };
    Get(".*", handler);
    Post(".*", handler);
    Put(".*", handler);
    Delete(".*", handler);
    Patch(".*", handler);
    Options(".*", handler);
    set_error_handler(HandlerWithResponse(
        [this](const httplib::Request&, httplib::Response& res) -> HandlerResponse {
          if (!res.body.empty()) return HandlerResponse::Unhandled;
          HttpResponse e =
              JsonError(res.status, HttplibErrorSentence(res.status, options_.max_body_bytes));
          res.set_content(e.body, e.content_type.c_str());
          res.set_header("Cache-Control", "no-store");
          return HandlerResponse::Handled;
        }));
  }

  void Stop() {
    stopping_ = true;
    stop();
  }
  RestServerStats Stats() const {
    RestServerStats s;
    s.connections = connections_.load();
    s.shed_connections = shed_.load();
    s.requests = requests_.load();
    s.cut_connections = cut_.load();
    s.tls_handshake_failures = tls_failures_.load();
    return s;
  }

 private:
  void Serve(const httplib::Request& req, httplib::Response& res) {
    ++requests_;
    HttpResponse r = router_->Handle(ToRequest(req));
    res.status = r.status;
    for (const auto& [k, v] : r.headers) res.set_header(k.c_str(), v);
    res.set_content(std::move(r.body), r.content_type.c_str());
  }

  // Replaces httplib's connection loop: the same keep-alive protocol (process_request), over a
  // stream with a per-request read deadline, and the shedding of BoundedTaskQueue.
  bool process_and_close_socket(socket_t sock) override {
    if (tl_shed) {
      ++shed_;
      static const std::string kBusy = BusyResponse();
      if (tls_ == nullptr) {
        [[maybe_unused]] ssize_t n =
            send(sock, kBusy.data(), kBusy.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      }
      shutdown(sock, SHUT_RDWR);
      close(sock);
      return false;
    }
    ++connections_;
    std::unique_ptr<SSL, void (*)(SSL*)> ssl(nullptr, SSL_free);
    if (tls_ != nullptr) {
      ssl.reset(Handshake(sock));
      if (ssl == nullptr) {
        ++tls_failures_;
        shutdown(sock, SHUT_RDWR);
        close(sock);
        return false;
      }
    }
    DeadlineStream strm(sock, options_, &stopping_, ssl.get());
    bool ret = false;
    for (size_t left = options_.keep_alive_max_requests; left > 0 && !stopping_; --left) {
      if ((ssl == nullptr || SSL_pending(ssl.get()) == 0) && !WaitReadable(sock)) break;
      strm.StartRequest();
      bool connection_closed = false;
      ret = process_request(strm, /*close_connection=*/left == 1, connection_closed, nullptr);
      if (strm.cut()) ++cut_;
      if (!ret || connection_closed) break;
    }
    if (ssl != nullptr) {
      SSL_shutdown(ssl.get());  // best effort, non-blocking: sends close_notify
      ERR_clear_error();
    }
    shutdown(sock, SHUT_RDWR);
    close(sock);
    return ret;
  }

  // The server side of a TLS handshake on `sock` (made non-blocking), within
  // request_read_deadline; null if it fails (a plain HTTP client, a client that does not trust
  // the certificate, a timeout).
  SSL* Handshake(int sock) {
    const int flags = fcntl(sock, F_GETFL, 0);
    if (flags < 0 || fcntl(sock, F_SETFL, flags | O_NONBLOCK) != 0) return nullptr;
    SSL* ssl = SSL_new(tls_.get());
    if (ssl == nullptr || SSL_set_fd(ssl, sock) != 1) {
      SSL_free(ssl);
      ERR_clear_error();
      return nullptr;
    }
    const auto until = SteadyClock::now() + options_.request_read_deadline;
    for (;;) {
      const int r = SSL_accept(ssl);
      if (r == 1) return ssl;
      const int err = SSL_get_error(ssl, r);
      ERR_clear_error();
      short events = err == SSL_ERROR_WANT_READ    ? POLLIN
                     : err == SSL_ERROR_WANT_WRITE ? POLLOUT
                                                   : 0;
      if (events == 0 || !PollUntil(sock, events, until, stopping_)) break;
    }
    SSL_free(ssl);
    return nullptr;
  }

  // The next request's first byte within keep_alive_timeout (false: idle, closed or stopping).
  bool WaitReadable(int sock) const {
    auto until = SteadyClock::now() + options_.keep_alive_timeout;
    while (!stopping_) {
      auto left = std::chrono::ceil<std::chrono::milliseconds>(until - SteadyClock::now());
      if (left.count() <= 0) return false;
      pollfd p{sock, POLLIN, 0};
      int r = poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 100)));
      if (r > 0) return (p.revents & POLLIN) != 0;
      if (r < 0 && errno != EINTR) return false;
    }
    return false;
  }

  const RestRouter* router_;
  const RestServerOptions options_;
  const std::shared_ptr<ssl_ctx_st> tls_;  // null: plain HTTP
  std::atomic<bool> stopping_{false};
  std::atomic<uint64_t> tls_failures_{0};
  std::atomic<uint64_t> connections_{0};
  std::atomic<uint64_t> shed_{0};
  std::atomic<uint64_t> requests_{0};
  std::atomic<uint64_t> cut_{0};
};

namespace {

// Why `host:port` cannot be bound, as the sentence of a Status.
Status BindError(const RestServerOptions& o) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* res = nullptr;
  const std::string address = o.bind_address + ":" + std::to_string(o.port);
  if (getaddrinfo(o.bind_address.c_str(), std::to_string(o.port).c_str(), &hints, &res) != 0 ||
      res == nullptr) {
    return InvalidArgument("the REST address " + o.bind_address +
                           " is not an address of this host: choose another --rest-bind");
  }
  int err = 0;
  int fd = ::socket(res->ai_family, res->ai_socktype, res->ai_protocol);
  if (fd >= 0) {
    int yes = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    if (bind(fd, res->ai_addr, res->ai_addrlen) != 0) err = errno;
    close(fd);
  } else {
    err = errno;
  }
  freeaddrinfo(res);
  if (err == EADDRINUSE) {
    return AlreadyExists("the REST port " + std::to_string(o.port) + " (" + address +
                         ") is already in use: stop the other process or choose another " +
                         o.port_flag + " (0 = any free port, -1 = no REST server)");
  }
  if (err == EADDRNOTAVAIL) {
    return InvalidArgument("the REST address " + o.bind_address +
                           " is not an address of this host: choose another --rest-bind");
  }
  if (err == EACCES) {
    return InvalidArgument("the REST port " + std::to_string(o.port) +
                           " needs privileges: choose a port above 1023 with " + o.port_flag);
  }
  return IoError("the coordinator cannot listen for REST requests on " + address + " (" +
                 std::strerror(err) + "): check --rest-bind and " + o.port_flag);
}

}  // namespace

Result<std::unique_ptr<RestServer>> RestServer::Start(const RestRouter* router,
                                                      RestServerOptions options) {
  std::unique_ptr<RestServer> server(new RestServer());
  server->bind_address_ = options.bind_address;
  std::shared_ptr<ssl_ctx_st> tls;
  if (!options.tls_cert_file.empty() || !options.tls_key_file.empty()) {
    if (options.tls_cert_file.empty() || options.tls_key_file.empty()) {
      return InvalidArgument(
          "--rest-tls-cert and --rest-tls-key go together: give both (e.g. KEYS/rest/tls.crt and "
          "KEYS/rest/tls.key from `keyflow keys init`) or neither");
    }
    KF_ASSIGN_OR_RETURN(tls, LoadTlsServerContext(options.tls_cert_file, options.tls_key_file));
    server->tls_ = true;
  }
  auto impl = std::make_unique<Impl>(router, options, std::move(tls));
  int port = options.port;
  if (port == 0) {
    port = impl->bind_to_any_port(options.bind_address);
    if (port <= 0) return BindError(options);
  } else if (!impl->bind_to_port(options.bind_address, port)) {
    return BindError(options);
  }
  server->port_ = port;
  server->impl_ = std::move(impl);
  Impl* raw = server->impl_.get();
  server->listener_ = std::thread([raw] { raw->listen_after_bind(); });
  // httplib's stop() does nothing before the loop runs: wait for it, so that the destructor
  // always ends it.
  const auto until = SteadyClock::now() + std::chrono::seconds(5);
  while (!raw->is_running() && SteadyClock::now() < until) std::this_thread::yield();
  KF_LOG_INFO("REST server listening url={} threads={} tls={}", server->url(), options.threads,
              server->tls_);
  return server;
}

RestServer::~RestServer() {
  if (impl_ != nullptr) impl_->Stop();
  if (listener_.joinable()) listener_.join();
}

std::string RestServer::url() const {
  std::string host = bind_address_ == "0.0.0.0" ? "127.0.0.1" : bind_address_;
  if (host.find(':') != std::string::npos) host = "[" + host + "]";
  return (tls_ ? "https://" : "http://") + host + ":" + std::to_string(port_);
}

RestServerStats RestServer::stats() const {
  return impl_ != nullptr ? impl_->Stats() : RestServerStats{};
}

}  // namespace keyflow
