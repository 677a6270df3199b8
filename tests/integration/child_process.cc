#include "tests/integration/child_process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <fstream>
#include <sstream>
#include <thread>

namespace keyflow::test {
namespace {

int PidfdOpen(pid_t pid) {
  return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
}

int DecodeWaitStatus(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

// Writes all of `buf` to `fd` (async-signal-safe; used in the forked child).
void WriteAll(int fd, const void* buf, size_t n) {
  const char* p = static_cast<const char*>(buf);
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w <= 0) return;
    p += w;
    n -= static_cast<size_t>(w);
  }
}

}  // namespace

void SleepForPolling(Duration period) {
  std::this_thread::sleep_for(std::chrono::milliseconds(period.millis()));
}

Result<ChildProcess> ChildProcess::Start(const std::vector<std::string>& argv,
                                         const std::string& log_path,
                                         const std::string& stderr_path) {
  if (argv.empty()) return InvalidArgument("empty command line");
  const std::string& err_path = stderr_path.empty() ? log_path : stderr_path;
  int out_fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (out_fd < 0) return ErrnoError("cannot open log " + log_path, errno);
  int err_fd = err_path == log_path
                   ? ::dup(out_fd)
                   : ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (err_fd < 0) {
    int err = errno;
    ::close(out_fd);
    return ErrnoError("cannot open log " + err_path, err);
  }
  int exec_pipe[2];  // the child reports an exec failure (errno) here; CLOEXEC closes it on success
  if (::pipe2(exec_pipe, O_CLOEXEC) != 0) {
    int err = errno;
    ::close(out_fd);
    ::close(err_fd);
    return ErrnoError("pipe2", err);
  }
  // Everything the child needs is prepared before fork: after it only async-signal-safe calls.
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t parent = ::getpid();

  pid_t pid = ::fork();
  if (pid < 0) {
    int err = errno;
    ::close(out_fd);
    ::close(err_fd);
    ::close(exec_pipe[0]);
    ::close(exec_pipe[1]);
    return ErrnoError("fork", err);
  }
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);  // the parent died before prctl
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, STDIN_FILENO);
    ::dup2(out_fd, STDOUT_FILENO);
    ::dup2(err_fd, STDERR_FILENO);
    ::execvp(args[0], args.data());
    int err = errno;
    WriteAll(exec_pipe[1], &err, sizeof(err));
    ::_exit(127);
  }
  ::close(out_fd);
  ::close(err_fd);
  ::close(exec_pipe[1]);
  int exec_errno = 0;
  ssize_t n;
  do {
    n = ::read(exec_pipe[0], &exec_errno, sizeof(exec_errno));
  } while (n < 0 && errno == EINTR);
  ::close(exec_pipe[0]);

  ChildProcess p;
  p.pid_ = pid;
  p.argv_ = argv;
  p.log_path_ = log_path;
  if (n == static_cast<ssize_t>(sizeof(exec_errno))) {
    p.Reap(/*block=*/true);
    return IoError("cannot execute " + argv[0] + ": " + std::strerror(exec_errno));
  }
  p.pidfd_ = PidfdOpen(pid);  // -1 on old kernels: Wait() then polls waitpid
  return p;
}

ChildProcess::ChildProcess(ChildProcess&& other) noexcept {
  *this = std::move(other);
}

ChildProcess& ChildProcess::operator=(ChildProcess&& other) noexcept {
  if (this != &other) {
    Reset();
    pid_ = std::exchange(other.pid_, -1);
    pidfd_ = std::exchange(other.pidfd_, -1);
    exit_code_ = std::exchange(other.exit_code_, std::nullopt);
    argv_ = std::move(other.argv_);
    log_path_ = std::move(other.log_path_);
  }
  return *this;
}

ChildProcess::~ChildProcess() {
  Reset();
}

void ChildProcess::Reset() {
  if (pid_ > 0) Kill();
  if (pidfd_ >= 0) ::close(pidfd_);
  pid_ = -1;
  pidfd_ = -1;
}

std::string ChildProcess::Describe() const {
  std::string s;
  for (const std::string& a : argv_) s += (s.empty() ? "" : " ") + a;
  return s + " (pid " + std::to_string(pid_) + ")";
}

bool ChildProcess::Reap(bool block) {
  if (exit_code_) return true;
  if (pid_ <= 0) return true;
  int status = 0;
  pid_t r;
  do {
    r = ::waitpid(pid_, &status, block ? 0 : WNOHANG);
  } while (r < 0 && errno == EINTR);
  if (r == pid_) {
    exit_code_ = DecodeWaitStatus(status);
    return true;
  }
  if (r < 0) {  // ECHILD: reaped elsewhere; treat as gone
    exit_code_ = -1;
    return true;
  }
  return false;
}

bool ChildProcess::Running() {
  return !Reap(/*block=*/false);
}

Status ChildProcess::Signal(int signal) {
  if (!Running()) return Status::Ok();
  if (::kill(pid_, signal) != 0 && errno != ESRCH) {
    return ErrnoError("kill " + std::to_string(pid_), errno);
  }
  return Status::Ok();
}

Result<int> ChildProcess::Wait(Duration timeout) {
  int64_t deadline = MonotonicMillis() + timeout.millis();
  while (!Reap(/*block=*/false)) {
    int64_t left = deadline - MonotonicMillis();
    if (left <= 0) {
      return DeadlineExceeded(Describe() + " still running after " +
                              std::to_string(timeout.millis()) + " ms");
    }
    if (pidfd_ >= 0) {
      pollfd p{pidfd_, POLLIN, 0};
      ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 1000)));
    } else {
      SleepForPolling(Duration::Millis(std::min<int64_t>(left, 10)));
    }
  }
  return *exit_code_;
}

int ChildProcess::Kill() {
  if (pid_ <= 0) return -1;
  if (!exit_code_) {
    ::kill(pid_, SIGKILL);
    Reap(/*block=*/true);
  }
  return *exit_code_;
}

Result<CommandResult> RunCommand(const std::vector<std::string>& argv, Duration timeout) {
  char out_path[] = "/tmp/keyflow-cmd-out-XXXXXX";
  char err_path[] = "/tmp/keyflow-cmd-err-XXXXXX";
  int out_fd = ::mkstemp(out_path);
  if (out_fd < 0) return ErrnoError("mkstemp", errno);
  ::close(out_fd);
  int err_fd = ::mkstemp(err_path);
  if (err_fd < 0) {
    ::unlink(out_path);
    return ErrnoError("mkstemp", errno);
  }
  ::close(err_fd);
  struct Cleanup {
    const char* out;
    const char* err;
    ~Cleanup() {
      ::unlink(out);
      ::unlink(err);
    }
  } cleanup{out_path, err_path};

  KF_ASSIGN_OR_RETURN(ChildProcess child, ChildProcess::Start(argv, out_path, err_path));
  Result<int> code = child.Wait(timeout);
  CommandResult result;
  if (!code.ok()) child.Kill();
  result.out = ReadFileOrEmpty(out_path);
  result.err = ReadFileOrEmpty(err_path);
  if (!code.ok()) return DeadlineExceeded(code.status().message() + "; stderr: " + result.err);
  result.exit_code = *code;
  return result;
}

std::string ReadFileOrEmpty(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

std::string Tail(const std::string& path, int lines) {
  std::ifstream in(path);
  std::deque<std::string> last;
  std::string line;
  while (std::getline(in, line)) {
    last.push_back(line);
    if (static_cast<int>(last.size()) > lines) last.pop_front();
  }
  std::string out;
  for (const std::string& l : last) out += "    " + l + "\n";
  return out;
}

Result<int> PickUnusedPort() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return ErrnoError("socket", errno);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    int err = errno;
    ::close(fd);
    return ErrnoError("binding a probe socket", err);
  }
  ::close(fd);
  return static_cast<int>(ntohs(addr.sin_port));
}

}  // namespace keyflow::test
