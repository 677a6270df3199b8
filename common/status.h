// Errors as values: Status and Result<T>, the one error convention of keyflow.
//
// Every fallible operation returns a [[nodiscard]] Status or Result<T>. The message is a
// sentence a user can act on ("checkpoint file /x/chk-3/task-0 is truncated: expected 4096
// bytes, found 1000; the previous completed checkpoint will be used"). Context is added on the
// way up with WithContext(). Exceptions from third-party code (cppzmq, std) are caught at the
// edge of the module that calls them and turned into a Status.
//
// Broken invariants are not errors: they abort via KF_CHECK (common/check.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "common/check.h"

namespace keyflow {

enum class StatusCode : uint8_t {
  kOk = 0,
  kInvalidArgument,     // bad flag, config, input or request
  kNotFound,            // file, checkpoint, job, key absent
  kAlreadyExists,       // duplicate registration, port in use, job already running
  kFailedPrecondition,  // the system is not in a state where the request makes sense
  kOutOfRange,          // key group outside the local range, value outside its bounds
  kCorruption,          // checksum mismatch, truncated file, malformed frame
  kIoError,             // the OS refused a file or socket operation
  kUnavailable,         // peer unreachable, timed out, or went away
  kDeadlineExceeded,    // a wait ran out of time
  kAborted,             // cancelled or superseded (e.g. a checkpoint subsumed)
  kUnimplemented,
  kInternal,
  kDataLoss,  // input that can never be read (deleted, unreadable): retrying cannot help
};

std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // "context: message" — used while propagating to say what was being done.
  Status WithContext(std::string_view context) const;
  // "CODE: message", for logs and test failures.
  std::string ToString() const;

  // Marks a deliberately ignored status (there should be very few).
  void IgnoreError() const {}

  friend bool operator==(const Status& a, const Status& b) {
    return a.code_ == b.code_ && a.message_ == b.message_;
  }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status InvalidArgument(std::string m) {
  return {StatusCode::kInvalidArgument, std::move(m)};
}
inline Status NotFound(std::string m) {
  return {StatusCode::kNotFound, std::move(m)};
}
inline Status AlreadyExists(std::string m) {
  return {StatusCode::kAlreadyExists, std::move(m)};
}
inline Status FailedPrecondition(std::string m) {
  return {StatusCode::kFailedPrecondition, std::move(m)};
}
inline Status OutOfRange(std::string m) {
  return {StatusCode::kOutOfRange, std::move(m)};
}
inline Status Corruption(std::string m) {
  return {StatusCode::kCorruption, std::move(m)};
}
inline Status IoError(std::string m) {
  return {StatusCode::kIoError, std::move(m)};
}
inline Status Unavailable(std::string m) {
  return {StatusCode::kUnavailable, std::move(m)};
}
inline Status DeadlineExceeded(std::string m) {
  return {StatusCode::kDeadlineExceeded, std::move(m)};
}
inline Status Aborted(std::string m) {
  return {StatusCode::kAborted, std::move(m)};
}
inline Status Unimplemented(std::string m) {
  return {StatusCode::kUnimplemented, std::move(m)};
}
inline Status Internal(std::string m) {
  return {StatusCode::kInternal, std::move(m)};
}
inline Status DataLoss(std::string m) {
  return {StatusCode::kDataLoss, std::move(m)};
}

// IoError from errno, e.g. ErrnoError("cannot open /x/y") -> "cannot open /x/y: No such file".
Status ErrnoError(std::string_view what, int err);

// A value or the Status that explains why there is none.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}        // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {  // NOLINT: implicit by design
    KF_CHECK(!std::get<Status>(v_).ok()) << "Result constructed from an OK status";
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  Status status() const { return ok() ? Status::Ok() : std::get<Status>(v_); }

  const T& value() const& {
    KF_CHECK(ok()) << "Result::value() on error: " << std::get<Status>(v_).ToString();
    return std::get<T>(v_);
  }
  T& value() & {
    KF_CHECK(ok()) << "Result::value() on error: " << std::get<Status>(v_).ToString();
    return std::get<T>(v_);
  }
  T&& value() && {
    KF_CHECK(ok()) << "Result::value() on error: " << std::get<Status>(v_).ToString();
    return std::get<T>(std::move(v_));
  }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace keyflow

#define KF_CONCAT_INNER(a, b) a##b
#define KF_CONCAT(a, b) KF_CONCAT_INNER(a, b)

// Returns the status from the enclosing function if `expr` is not OK.
#define KF_RETURN_IF_ERROR(expr)             \
  do {                                       \
    ::keyflow::Status kf_status_ = (expr);   \
    if (!kf_status_.ok()) return kf_status_; \
  } while (0)

// Like KF_RETURN_IF_ERROR, adding context to the message.
#define KF_RETURN_IF_ERROR_CTX(expr, context)                     \
  do {                                                            \
    ::keyflow::Status kf_status_ = (expr);                        \
    if (!kf_status_.ok()) return kf_status_.WithContext(context); \
  } while (0)

// KF_ASSIGN_OR_RETURN(auto x, Compute()); — binds the value or returns the error.
#define KF_ASSIGN_OR_RETURN(lhs, expr) \
  KF_ASSIGN_OR_RETURN_IMPL(KF_CONCAT(kf_result_, __LINE__), lhs, expr)
#define KF_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                             \
  if (!tmp.ok()) return tmp.status();            \
  lhs = std::move(tmp).value()
