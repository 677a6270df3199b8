// KF_CHECK: invariants that must hold; a violation is a bug and aborts with file:line.
//
//   KF_CHECK(range.contains(g)) << "key group " << g << " not in " << range;
//   KF_CHECK_EQ(a, b);  KF_CHECK_LT(a, b);  ...   KF_DCHECK(...) only in debug builds.
//
// Errors a user can cause (bad input, unreachable peer) are Status values, never CHECKs.
#pragma once

#include <sstream>
#include <string_view>

namespace keyflow::internal {

// Collects the message of a failed KF_CHECK and aborts in its destructor.
class CheckFailure {
 public:
  CheckFailure(const char* file, int line, const char* condition);
  [[noreturn]] ~CheckFailure();
  std::ostream& stream() { return stream_; }

 private:
  std::ostringstream stream_;
};

// Lets `KF_CHECK(x) << ...` be an expression of type void in both branches.
struct Voidify {
  void operator&(std::ostream&) {}
};

}  // namespace keyflow::internal

#define KF_CHECK(condition)                      \
  (condition) ? (void)0                          \
              : ::keyflow::internal::Voidify() & \
                    ::keyflow::internal::CheckFailure(__FILE__, __LINE__, #condition).stream()

#define KF_CHECK_OP(a, b, op) KF_CHECK((a)op(b)) << "(" << (a) << " " #op " " << (b) << ") "
#define KF_CHECK_EQ(a, b) KF_CHECK_OP(a, b, ==)
#define KF_CHECK_NE(a, b) KF_CHECK_OP(a, b, !=)
#define KF_CHECK_LT(a, b) KF_CHECK_OP(a, b, <)
#define KF_CHECK_LE(a, b) KF_CHECK_OP(a, b, <=)
#define KF_CHECK_GT(a, b) KF_CHECK_OP(a, b, >)
#define KF_CHECK_GE(a, b) KF_CHECK_OP(a, b, >=)

#ifdef NDEBUG
#define KF_DCHECK(condition) \
  while (false) KF_CHECK(condition)
#else
#define KF_DCHECK(condition) KF_CHECK(condition)
#endif
