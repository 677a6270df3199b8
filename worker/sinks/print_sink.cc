#include "worker/sinks/print_sink.h"

#include <cerrno>
#include <utility>

#include "common/check.h"

namespace keyflow {

PrintSink::PrintSink(std::FILE* out, std::string prefix) : out_(out), prefix_(std::move(prefix)) {
  CHECK(out_ != nullptr);
}

PrintSink PrintSink::ForSubtask(SubtaskIndex index, int32_t parallelism, std::FILE* out) {
  std::string prefix;
  if (parallelism > 1) prefix = std::to_string(index.value() + 1) + "> ";
  return PrintSink(out, std::move(prefix));
}

Status PrintSink::Write(std::string_view line) {
  scratch_.assign(prefix_);
  scratch_.append(line.data(), line.size());
  scratch_.push_back('\n');
  if (std::fwrite(scratch_.data(), 1, scratch_.size(), out_) != scratch_.size()) {
    return ErrnoError("cannot write to the print sink's output stream", errno);
  }
  return Status::Ok();
}

Status PrintSink::Flush() {
  if (std::fflush(out_) != 0) {
    return ErrnoError("cannot flush the print sink's output stream", errno);
  }
  return Status::Ok();
}

}  // namespace keyflow
