#include "worker/sources/file_split_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/check.h"
#include "worker/sources/json_prefix.h"

namespace keyflow {
namespace {

constexpr std::string_view kUtf8Bom = "\xEF\xBB\xBF";

bool IsBlank(std::string_view line) {
  for (char c : line) {
    if (c != ' ' && c != '\t' && c != '\r') return false;
  }
  return true;
}

}  // namespace

std::string_view BadRecordPolicyName(BadRecordPolicy policy) {
  switch (policy) {
    case BadRecordPolicy::kSkip:
      return "skip";
    case BadRecordPolicy::kFail:
      return "fail";
  }
  return "?";
}

Result<BadRecordPolicy> ParseBadRecordPolicy(std::string_view text) {
  if (text == "skip") return BadRecordPolicy::kSkip;
  if (text == "fail") return BadRecordPolicy::kFail;
  return InvalidArgument("unknown --on-bad-record policy '" + std::string(text) +
                         "'; use skip or fail");
}

std::string BadRecord::ToString() const {
  return path + ":" + std::to_string(line_number) + ": " + reason.message();
}

bool IsPermanentInputErrno(int err) {
  switch (err) {
    case ENOENT:
    case ENOTDIR:
    case EACCES:
    case EPERM:
    case EISDIR:
    case ELOOP:
    case ENAMETOOLONG:
      return true;
    default:  // EIO, EMFILE, ENFILE, ENOMEM, EINTR, ESTALE, ...: may pass, the restart retries
      return false;
  }
}

Status InputFileError(const std::string& path, int err) {
  if (err == ENOENT || err == ENOTDIR) {
    return DataLoss("input file " + path + " does not exist (deleted after the job started?)");
  }
  if (IsPermanentInputErrno(err)) {
    return DataLoss("input file " + path + " cannot be read: " + std::strerror(err));
  }
  return ErrnoError("cannot open input file " + path + " (retried by the restart strategy)", err);
}

Result<FileSplitReader> FileSplitReader::Open(const SourceSplit& split, SplitPosition from,
                                              JsonRecordParser* parser,
                                              FileSplitReaderOptions options) {
  KF_CHECK(split.kind() == SplitKind::kFile) << split.ToString();
  KF_CHECK(parser != nullptr);
  KF_CHECK(options.read_buffer_bytes > 0 && options.max_line_bytes > 0);
  FileSplitReader r;
  r.path_ = split.path();
  r.parser_ = parser;
  r.options_ = std::move(options);
  r.fd_ = ScopedFd(::open(r.path_.c_str(), O_RDONLY | O_CLOEXEC));
  if (!r.fd_.valid()) return InputFileError(r.path_, errno);
  struct stat st;
  if (::fstat(r.fd_.get(), &st) != 0) {
    return ErrnoError("cannot stat input file '" + r.path_ + "'", errno);
  }
  if (from.byte_offset() > st.st_size) {
    return DataLoss("cannot resume input file '" + r.path_ + "' at byte offset " +
                    std::to_string(from.byte_offset()) + ": the file has only " +
                    std::to_string(st.st_size) +
                    " bytes; it was truncated or replaced since the checkpoint");
  }
  if (from.byte_offset() > 0 && ::lseek(r.fd_.get(), from.byte_offset(), SEEK_SET) < 0) {
    return ErrnoError("cannot seek in input file '" + r.path_ + "'", errno);
  }
  (void)::posix_fadvise(r.fd_.get(), 0, 0,
                        POSIX_FADV_SEQUENTIAL);  // a hint only
  r.size_at_open_ = st.st_size;
  r.file_offset_ = from.byte_offset();
  r.dev_ = st.st_dev;
  r.ino_ = st.st_ino;
  r.capacity_ = r.options_.read_buffer_bytes;
  r.buf_ = std::make_unique_for_overwrite<char[]>(r.capacity_ + kJsonPadding);
  r.position_ = from;
  return r;
}

Status FileSplitReader::BadLine(int64_t line_number, int64_t byte_offset, Status reason) {
  BadRecord bad{path_, line_number, byte_offset, std::move(reason)};
  if (options_.on_bad_record == BadRecordPolicy::kFail) {
    return InvalidArgument(bad.ToString() + " (--on-bad-record skip would skip the line)");
  }
  ++bad_records_;
  if (options_.bad_record_callback) options_.bad_record_callback(bad);
  return Status::Ok();
}

Status FileSplitReader::Fill() {
  char* base = buf_.get();
  if (begin_ > 0) {
    std::memmove(base, base + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
  }
  if (end_ == capacity_) {  // a full buffer without a newline: one long line
    // The buffer grows to max_line_bytes + 1 at most, so a full one holds a too-long line.
    if (capacity_ > options_.max_line_bytes || discarding_) {
      if (!discarding_) {
        KF_RETURN_IF_ERROR(
            BadLine(position_.next_line_number(), position_.byte_offset(),
                    InvalidArgument("line is longer than the limit of " +
                                    std::to_string(options_.max_line_bytes) + " bytes")));
        discarding_ = true;
      }
      discarded_bytes_ += static_cast<int64_t>(end_);
      end_ = 0;
    } else {
      size_t grown = std::min(capacity_ * 2, options_.max_line_bytes + 1);
      auto bigger = std::make_unique_for_overwrite<char[]>(grown + kJsonPadding);
      std::memcpy(bigger.get(), base, end_);
      buf_ = std::move(bigger);
      capacity_ = grown;
      base = buf_.get();
    }
  }
  const size_t want =
      std::min<size_t>(capacity_ - end_, static_cast<size_t>(size_at_open_ - file_offset_));
  ssize_t n = 0;
  if (want > 0) {
    do {
      n = ::read(fd_.get(), base + end_, want);
    } while (n < 0 && errno == EINTR);
  }
  if (n < 0) return ErrnoError("cannot read input file '" + path_ + "'", errno);
  if (n == 0) {
    eof_ = true;
    DetectChange();
  } else {
    end_ += static_cast<size_t>(n);
    file_offset_ += n;
  }
  return Status::Ok();
}

std::string InputChange::ToString() const {
  if (line_number > 0) {
    return "input file " + path + " " + what + " (line " + std::to_string(line_number) +
           " has no newline and is not yet a complete JSON object): " +
           std::to_string(bytes_not_read) +
           " bytes not read (the split reads the file as it was when it was opened; a restore "
           "from a checkpoint reads the line once it is complete)";
  }
  return "input file " + path + " " + what +
         " while it was read: " + std::to_string(bytes_not_read) +
         " bytes not read (the split reads the file as it was when it was opened)";
}

void FileSplitReader::DetectChange() {
  struct stat now;
  if (file_offset_ < size_at_open_) {
    change_ =
        InputChange{path_, "was truncated", size_at_open_ - file_offset_};  // read(2) ended early
    return;
  }
  if (::stat(path_.c_str(), &now) == 0 &&
      (static_cast<uint64_t>(now.st_dev) != dev_ || static_cast<uint64_t>(now.st_ino) != ino_)) {
    change_ = InputChange{path_, "was replaced", static_cast<int64_t>(now.st_size)};
    return;
  }
  if (::fstat(fd_.get(), &now) == 0 && now.st_size > size_at_open_) {
    change_ = InputChange{path_, "grew", static_cast<int64_t>(now.st_size - size_at_open_)};
  }
}

Status FileSplitReader::ReportChange() {
  if (!change_ || change_reported_) return Status::Ok();
  change_reported_ = true;
  if (options_.on_input_change == InputChangePolicy::kFail) {
    return DataLoss(change_->ToString() + " (--on-input-change fail)");
  }
  if (options_.input_change_callback) options_.input_change_callback(*change_);
  return Status::Ok();
}

Result<SplitReadResult> FileSplitReader::Next(Record* out) {
  while (true) {
    char* base = buf_.get();
    const char* nl = begin_ < end_
                         ? static_cast<const char*>(std::memchr(base + begin_, '\n', end_ - begin_))
                         : nullptr;
    size_t line_size;           // without the '\n'
    size_t consumed;            // with it
    bool unterminated = false;  // the file's last line, without "\n"
    if (nl != nullptr) {
      line_size = static_cast<size_t>(nl - (base + begin_));
      consumed = line_size + 1;
    } else if (eof_) {
      if (change_ && begin_ < end_ && !discarding_) {
        // A last line without "\n" in a file that changed: half written, not a record.
        change_->bytes_not_read += static_cast<int64_t>(end_ - begin_);
        end_ = begin_;
      }
      if (begin_ == end_ && !discarding_) {
        KF_RETURN_IF_ERROR(ReportChange());
        return SplitReadResult::kEndOfSplit;
      }
      line_size = consumed = end_ - begin_;  // the last line, without terminator
      unterminated = true;
    } else {
      KF_RETURN_IF_ERROR(Fill());
      continue;
    }

    if (discarding_) {  // the end of an over-long line, already reported
      position_.AdvanceLine(discarded_bytes_ + static_cast<int64_t>(consumed));
      begin_ += consumed;
      discarding_ = false;
      discarded_bytes_ = 0;
      continue;
    }

    std::string_view line(base + begin_, line_size);
    const int64_t line_number = position_.next_line_number();
    const int64_t byte_offset = position_.byte_offset();
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (byte_offset == 0 && line.substr(0, kUtf8Bom.size()) == kUtf8Bom) {
      line.remove_prefix(kUtf8Bom.size());
    }
    if (IsBlank(line)) {
      position_.AdvanceLine(static_cast<int64_t>(consumed));
      begin_ += consumed;
      continue;
    }
    Status status;
    if (line.size() > options_.max_line_bytes) {
      status = InvalidArgument("line is longer than the limit of " +
                               std::to_string(options_.max_line_bytes) + " bytes");
    } else {
      size_t padded = capacity_ + kJsonPadding - static_cast<size_t>(line.data() - base);
      status = parser_->Parse(line, padded, out);
      if (!status.ok() && unterminated && IsIncompleteJsonObject(line)) {
        // Its writer has not finished it: input not yet written, not a malformed record. The
        // position stays before it (a restore reads it once complete); reported as a change.
        change_ = InputChange{path_, std::string(InputChange::kHalfWrittenLine),
                              static_cast<int64_t>(consumed), line_number};
        end_ = begin_;
        continue;
      }
    }
    if (!status.ok()) {
      KF_RETURN_IF_ERROR(BadLine(line_number, byte_offset, std::move(status)));
      position_.AdvanceLine(static_cast<int64_t>(consumed));
      begin_ += consumed;
      continue;
    }
    position_.AdvanceLine(static_cast<int64_t>(consumed));
    begin_ += consumed;
    ++records_;
    return SplitReadResult::kRecord;
  }
}

}  // namespace keyflow
