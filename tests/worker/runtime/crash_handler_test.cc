#include "worker/runtime/crash_handler.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <csignal>
#include <string>

#include "common/job_library/user_function_guard.h"

namespace keyflow {
namespace {

TEST(CrashHandler, FormatsTheSignalAndTheRunningUserCall) {
  char buf[128];
  EXPECT_EQ(
      FormatCrashCause(SIGSEGV, "ProcessElement of job 'crashy' (libcrashy.so)", buf, sizeof(buf)),
      "SIGSEGV while running ProcessElement of job 'crashy' (libcrashy.so)");
  EXPECT_EQ(FormatCrashCause(SIGFPE, nullptr, buf, sizeof(buf)), "SIGFPE");
  EXPECT_EQ(FormatCrashCause(SIGBUS, nullptr, buf, sizeof(buf)), "SIGBUS");
  EXPECT_EQ(FormatCrashCause(SIGABRT, nullptr, buf, sizeof(buf)), "SIGABRT");
}

TEST(CrashHandler, TruncatesToTheBuffer) {
  char buf[8];
  EXPECT_EQ(FormatCrashCause(SIGSEGV, "ProcessElement", buf, sizeof(buf)), "SIGSEGV");
}

// Dereferences a null pointer the optimiser cannot see through. Not instrumented by UBSan (the
// ASan+UBSan suite), which would report the null store and exit before the fault it is for.
__attribute__((no_sanitize("undefined"))) void Segfault() {
  volatile int* p = nullptr;
  *p = 1;
}

TEST(CrashHandlerDeathTest, ACrashInUserCodeNamesTheSignalAndTheCallThenDiesOfIt) {
#if defined(__SANITIZE_THREAD__)
  // TSan's runtime takes over the delivery of a synchronous SIGSEGV (the death-test child does
  // not die of it); the plain and ASan+UBSan suites run this test.
  GTEST_SKIP() << "TSan intercepts SIGSEGV";
#endif
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  UserFunctionGuard guard("crashy", "libcrashy.so");
  EXPECT_EXIT(
      {
        InstallCrashHandlers();
        guard.Call(UserCall::kProcessElement, [] { Segfault(); }).IgnoreError();
      },
      ::testing::KilledBySignal(SIGSEGV),
      "keyflow-worker pid [0-9]+ crashed: SIGSEGV while running ProcessElement of job 'crashy' "
      "\\(libcrashy.so\\)");
}

// Recurses until the stack runs out (the volatile array keeps every frame; the volatile limit
// hides the recursion's endlessness from the compiler).
volatile int g_depth_limit = 1 << 30;
int Recurse(int depth) {
  volatile char frame[1024];
  frame[0] = static_cast<char>(depth);
  if (depth >= g_depth_limit) return 0;
  return Recurse(depth + 1) + frame[0];
}

TEST(CrashHandlerDeathTest, AStackOverflowInUserCodeIsNamedOnTheAlternateStack) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  UserFunctionGuard guard("deep", "libdeep.so");
  EXPECT_EXIT(
      {
        InstallCrashHandlers();
        ScopedAltSignalStack stack;
        guard.Call(UserCall::kProcessElement, [] { (void)Recurse(0); }).IgnoreError();
      },
      ::testing::KilledBySignal(SIGSEGV),
      "crashed: SIGSEGV while running ProcessElement of job 'deep' \\(libdeep.so\\)");
}

TEST(CrashHandlerDeathTest, AnAbortInUserCodeIsNamedToo) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  UserFunctionGuard guard("crashy", "libcrashy.so");
  EXPECT_EXIT(
      {
        InstallCrashHandlers();
        guard.Call(UserCall::kOnTimer, [] { std::abort(); }).IgnoreError();
      },
      ::testing::KilledBySignal(SIGABRT),
      "crashed: SIGABRT while running OnTimer of job 'crashy' \\(libcrashy.so\\)");
}

TEST(CrashHandlerDeathTest, ACrashOutsideUserCodeNamesOnlyTheSignal) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        InstallCrashHandlers();
        std::raise(SIGFPE);
      },
      ::testing::KilledBySignal(SIGFPE), "crashed: SIGFPE\n");
}

}  // namespace
}  // namespace keyflow
