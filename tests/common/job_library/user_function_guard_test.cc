#include "common/job_library/user_function_guard.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include "tests/testutil/status_matchers.h"

namespace keyflow {
namespace {

TEST(UserFunctionGuard, TheCrashNoteNamesTheRunningCallOnlyWhileItRuns) {
  UserFunctionGuard guard("crashy", "libcrashy.so");
  EXPECT_EQ(CurrentUserCallNote(), nullptr);
  std::string seen;
  Status s = guard.Call(UserCall::kProcessElement, [&] { seen = CurrentUserCallNote(); });
  EXPECT_OK(s);
  EXPECT_EQ(seen, "ProcessElement of job 'crashy' (libcrashy.so)");
  EXPECT_EQ(CurrentUserCallNote(), nullptr);
}

TEST(UserFunctionGuard, ANestedCallRestoresTheOuterNote) {
  UserFunctionGuard guard("crashy", "libcrashy.so");
  std::string inner, after;
  guard
      .Call(UserCall::kEndInput,
            [&] {
              guard.Call(UserCall::kOnTimer, [&] { inner = CurrentUserCallNote(); }).IgnoreError();
              after = CurrentUserCallNote();
            })
      .IgnoreError();
  EXPECT_EQ(inner, "OnTimer of job 'crashy' (libcrashy.so)");
  EXPECT_EQ(after, "EndInput of job 'crashy' (libcrashy.so)");
}

TEST(UserFunctionGuard, TheNoteIsClearedWhenTheCallThrows) {
  UserFunctionGuard guard("j", "");
  Status s = guard.Call(UserCall::kCreate, [] { throw std::out_of_range("no such param"); });
  EXPECT_EQ(s.message(), "function of job 'j' threw std::out_of_range in create: no such param");
  EXPECT_EQ(CurrentUserCallNote(), nullptr);
}

struct NotAnException {};

TEST(UserFunctionGuard, NamesAUserTypeThrown) {
  UserFunctionGuard guard("j", "libj.so");
  Status s = guard.Call(UserCall::kOnTimer, [] { throw NotAnException{}; });
  EXPECT_EQ(s.message(),
            "function of job 'j' (libj.so) threw an exception of type "
            "keyflow::(anonymous namespace)::NotAnException (not a std::exception) in OnTimer");
}

TEST(UserFunctionGuard, AnOkStatusPassesThrough) {
  UserFunctionGuard guard("j", "libj.so");
  EXPECT_OK(guard.CallReturningStatus(UserCall::kOpen, [] { return Status::Ok(); }));
}

}  // namespace
}  // namespace keyflow

namespace keyflow {
namespace {

// How connectors' messages name what escaped user code.
TEST(UserFunctionGuard, DescribeExceptionNamesTheTypeAndWhat) {
  EXPECT_EQ(DescribeException(std::make_exception_ptr(std::runtime_error("boom"))),
            "std::runtime_error: boom");
  EXPECT_EQ(DescribeException(std::make_exception_ptr(42)),
            "an exception of type int (not a std::exception)");
}

}  // namespace
}  // namespace keyflow
