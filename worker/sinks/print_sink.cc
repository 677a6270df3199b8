#include "worker/sinks/print_sink.h"

#include <unistd.h>

#include <cerrno>
#include <utility>

#include "common/check.h"

namespace keyflow {

PrintSink::PrintSink(std::FILE* out, std::string prefix) : out_(out), prefix_(std::move(prefix)) {
  KF_CHECK(out_ != nullptr);
}

PrintSink::~PrintSink() {
  if (out_ != nullptr && !buffer_.empty()) Flush().IgnoreError();
}

PrintSink PrintSink::ForSubtask(SubtaskIndex index, int32_t parallelism, std::FILE* out) {
  std::string prefix;
  if (parallelism > 1) prefix = std::to_string(index.value() + 1) + "> ";
  return PrintSink(out, std::move(prefix));
}

Status PrintSink::Write(std::string_view line) {
  buffer_.append(prefix_);
  buffer_.append(line.data(), line.size());
  buffer_.push_back('\n');
  if (buffer_.size() >= kBufferBytes) return Flush();
  return Status::Ok();
}

Status PrintSink::Flush() {
  // What others wrote through the stream goes first.
  if (std::fflush(out_) != 0) {
    return ErrnoError("cannot flush the print sink's output stream", errno);
  }
  if (buffer_.empty()) return Status::Ok();
  const int fd = ::fileno(out_);
  if (fd < 0) {  // a stream without a descriptor (e.g. open_memstream)
    const bool written = std::fwrite(buffer_.data(), 1, buffer_.size(), out_) == buffer_.size();
    buffer_.clear();
    if (!written || std::fflush(out_) != 0) {
      return ErrnoError("cannot write to the print sink's output stream", errno);
    }
    return Status::Ok();
  }
  size_t done = 0;
  while (done < buffer_.size()) {
    ssize_t n = ::write(fd, buffer_.data() + done, buffer_.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      buffer_.clear();
      return ErrnoError("cannot write to the print sink's output stream", err);
    }
    done += static_cast<size_t>(n);
  }
  buffer_.clear();
  return Status::Ok();
}

}  // namespace keyflow
