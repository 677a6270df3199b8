// FileSplitReader: reads the records of one JSON Lines file split, from a SplitPosition on.
//
// Reads the file in large chunks (read(2) into a buffer of read_buffer_bytes, no syscall per
// line) and hands each line to a JsonRecordParser, parsing in place (the buffer keeps
// kJsonPadding spare bytes). Lines end with "\n" or "\r\n"; the last line may lack its
// terminator; empty and whitespace-only lines are skipped (they are not records and not
// errors); a UTF-8 byte order mark at the start of the file is ignored. A line longer than the
// buffer grows it, up to max_line_bytes; a longer line is a bad record.
//
// Bad records (a line the parser rejects, or an over-long line) are never silently lost:
//   kSkip  the line is counted (bad_records()), reported to the callback as "path:line: reason",
//          and reading goes on;
//   kFail  Next() returns InvalidArgument "path:line: reason (...)"; the position stays before
//          the line.
//
// position() after Next() returned kRecord is just after that record's line (and after any
// empty or skipped lines before it): the value to store in a checkpoint. Opening the split at
// that position yields exactly the records after it.
//
// A file that changes during the read is read as it was at Open (size, inode): bytes after that
// size are never read, and at the end of the split the change is reported (InputChange: grew,
// truncated, replaced by a rename, with the bytes not read) or, under kFail, is an error.
//
// Valid input is never a malformed record because it was incomplete. A last line without "\n"
// is a record if it parses (files without a final newline are common). If it does not:
//   * in a file that grew or was replaced it is a half-written line, counted in the change's
//     bytes_not_read;
//   * in a file that did not change, it is half-written if it is a proper prefix of a JSON
//     object (IsIncompleteJsonObject: the writer has not finished it), reported as an
//     InputChange "ends in a half-written line" with its line number and bytes, or under kFail
//     as DataLoss; otherwise (complete, or not JSON whatever follows) it is a bad record.
// Either way a half-written line is not read: position() stays before it, so a restore from
// that position reads it once it is complete.
//
// Threading: single thread (the source subtask's task thread).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "common/input/source_split.h"
#include "common/record.h"
#include "common/status.h"
#include "worker/sources/json_record_parser.h"
#include "worker/sources/scoped_fd.h"

namespace keyflow {

enum class BadRecordPolicy : uint8_t { kSkip, kFail };
std::string_view BadRecordPolicyName(BadRecordPolicy policy);         // "skip" | "fail"
Result<BadRecordPolicy> ParseBadRecordPolicy(std::string_view text);  // --on-bad-record

// A malformed input line: where it is and why it was rejected.
struct BadRecord {
  std::string path;
  int64_t line_number = 0;  // 1-based
  int64_t byte_offset = 0;  // of the line's first byte
  Status reason;            // the parser's message, e.g. "missing field 'uid'"

  std::string ToString() const;  // "<path>:<line>: <reason>"
};
using BadRecordCallback = std::function<void(const BadRecord&)>;

// The file changed while it was read (Liveness 5), or it ends in a half-written line. The
// reader reads the file as it was when the split was opened: the bytes up to the size seen then,
// from the inode opened then.
struct InputChange {
  std::string path;
  // "grew", "was truncated", "was replaced", or kHalfWrittenLine (line_number says which line).
  std::string what;
  int64_t bytes_not_read;        // bytes of the file now that this split does not read
  int64_t line_number = 0;       // kHalfWrittenLine: the line not read (1-based); otherwise 0
  std::string ToString() const;  // "input file /a.jsonl grew while it was read: 120 bytes ..."
  static constexpr std::string_view kHalfWrittenLine = "ends in a half-written line";
};
enum class InputChangePolicy : uint8_t { kWarn, kFail };
using InputChangeCallback = std::function<void(const InputChange&)>;

struct FileSplitReaderOptions {
  BadRecordPolicy on_bad_record = BadRecordPolicy::kSkip;
  BadRecordCallback bad_record_callback;  // called for each skipped line (kSkip); may be empty
  // Also for a half-written last line. kWarn: the change is reported to the callback and the
  // split ends normally; kFail: Next() returns DataLoss with InputChange::ToString().
  InputChangePolicy on_input_change = InputChangePolicy::kWarn;
  InputChangeCallback input_change_callback;  // may be empty
  size_t read_buffer_bytes = 1 << 20;         // initial buffer, also the read(2) size
  size_t max_line_bytes = 64 << 20;           // longer lines are bad records
};

// Input errors that retrying cannot cure: the file or a directory above it does not exist
// (ENOENT, ENOTDIR), may not be read (EACCES, EPERM), is a directory (EISDIR), or its path is
// broken (ELOOP, ENAMETOOLONG). Transient ones (EIO, EMFILE, ENFILE, ENOMEM, ESTALE, ...) are
// not: the restart strategy retries them.
bool IsPermanentInputErrno(int err);
// DataLoss (the job fails at once, without restarts) for a permanent errno, IoError otherwise;
// the message names `path`.
Status InputFileError(const std::string& path, int err);

class FileSplitReader {
 public:
  // Opens `split` (a file split) at `from`. Errors: InputFileError (DataLoss for a missing or
  // unreadable file, IoError for a transient failure) naming the path; DataLoss if `from` lies
  // beyond the end of the file (the file changed since the checkpoint). `parser` is borrowed
  // and must outlive the reader.
  static Result<FileSplitReader> Open(const SourceSplit& split, SplitPosition from,
                                      JsonRecordParser* parser,
                                      FileSplitReaderOptions options = {});

  FileSplitReader(FileSplitReader&&) noexcept = default;
  FileSplitReader& operator=(FileSplitReader&&) noexcept = default;

  // kRecord (*out filled, position() after its line) or kEndOfSplit; an error for a read
  // failure or a bad record under kFail. Never kThrottled.
  Result<SplitReadResult> Next(Record* out);

  SplitPosition position() const { return position_; }
  const std::string& path() const { return path_; }
  int64_t records_read() const { return records_; }
  int64_t bad_records() const { return bad_records_; }

 private:
  FileSplitReader() = default;
  // Reads more bytes after the unconsumed ones (compacting, growing or, inside an over-long
  // line, dropping the buffer first). Sets eof_ at the end of the file.
  Status Fill();
  // Handles a rejected line; returns the error to surface under kFail.
  Status BadLine(int64_t line_number, int64_t byte_offset, Status reason);
  // At the end of the bytes fixed at open: did the file grow, shrink or get replaced? Sets
  // change_ (and its byte count) if so.
  void DetectChange();
  Status ReportChange();

  std::string path_;
  ScopedFd fd_;
  JsonRecordParser* parser_ = nullptr;
  FileSplitReaderOptions options_;
  std::unique_ptr<char[]> buf_;  // capacity_ + kJsonPadding bytes
  size_t capacity_ = 0;
  size_t begin_ = 0;  // first unconsumed byte; it is at file offset position_.byte_offset()
  size_t end_ = 0;    // end of valid bytes
  bool eof_ = false;
  int64_t size_at_open_ = 0;  // bytes this split reads: the file's size when it was opened
  int64_t file_offset_ = 0;   // next byte read(2) returns
  uint64_t dev_ = 0, ino_ = 0;
  std::optional<InputChange> change_;
  bool change_reported_ = false;
  bool discarding_ = false;      // inside an over-long line (already reported)
  int64_t discarded_bytes_ = 0;  // of the over-long line so far
  SplitPosition position_;
  int64_t records_ = 0;
  int64_t bad_records_ = 0;
};

}  // namespace keyflow
