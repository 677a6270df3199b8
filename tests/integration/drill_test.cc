// scripts/drill-kill.sh, the checkpoint/recovery drill, in its quick variant: 3 workers, small
// generated input, two kills (one worker, one coordinator). The script starts and stops its own
// cluster in a run dir given here, so a guard can stop whatever is left if the test fails or
// times out half-way.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>

#include "tests/integration/cluster.h"
#include "tests/integration/test_dir.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow::test {
namespace {

using ::testing::HasSubstr;

std::string Script(const std::string& name) {
  return std::string(KEYFLOW_SOURCE_DIR) + "/scripts/" + name;
}

// Stops what a run dir's pid files name when the test ends, even after a failed assertion or a
// timed-out (SIGKILLed) drill whose trap never ran.
class RunDirGuard {
 public:
  explicit RunDirGuard(std::string run_dir) : run_dir_(std::move(run_dir)) {}
  ~RunDirGuard() {
    RunCommand({Script("stop-cluster.sh"), "--run-dir", run_dir_, "--timeout", "5"},
               Duration::Seconds(30))
        .status()
        .IgnoreError();
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(run_dir_, ec)) {
      if (e.path().extension() != ".pid") continue;
      std::ifstream in(e.path());
      long pid = 0;
      if (in >> pid && pid > 0) ::kill(static_cast<pid_t>(pid), SIGKILL);
    }
  }

 private:
  std::string run_dir_;
};

int CountOf(const std::string& text, const std::string& needle) {
  int n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

TEST(DrillTest, QuickDrillKillingAWorkerAndTheCoordinatorPasses) {
  TestDir dir;
  const std::string run_dir = dir.path() + "/run";
  RunDirGuard guard(run_dir);
  auto r = RunCommand({Script("drill-kill.sh"), "--build-dir", KEYFLOW_BINARY_DIR, "--run-dir",
                       run_dir, "--workers", "3", "--kills", "2", "--coordinator-kills", "1",
                       "--events", "20000", "--keys", "2000", "--rate", "1500", "--seed", "7"},
                      Duration::Seconds(120));
  ASSERT_OK(r);
  EXPECT_EQ(r->exit_code, 0) << r->out << r->err;
  EXPECT_THAT(r->out, HasSubstr("\nPASS\n")) << r->err;
  EXPECT_THAT(r->out, HasSubstr(": FINISHED after "));
  EXPECT_EQ(CountOf(r->out, "  coordinator (pid "), 1) << r->out;
  EXPECT_EQ(CountOf(r->out, "  worker "), 1) << r->out;
  EXPECT_THAT(r->out, HasSubstr(" by count, ")) << "both kinds of windows occur";
  EXPECT_THAT(r->out, HasSubstr(" by timeout)"));
  // Everything the drill started is stopped: no pid file is left behind.
  for (const auto& e : std::filesystem::directory_iterator(run_dir)) {
    EXPECT_NE(e.path().extension(), ".pid") << e.path();
  }
}

TEST(DrillTest, BadUsageExitsTwoWithTheReason) {
  TestDir dir;
  auto r =
      RunCommand({Script("drill-kill.sh"), "--build-dir", KEYFLOW_BINARY_DIR, "--workers", "0"},
                 Duration::Seconds(30));
  ASSERT_OK(r);
  EXPECT_EQ(r->exit_code, 2);
  EXPECT_THAT(r->err, HasSubstr("--workers must be >= 1, got '0'"));
}

}  // namespace
}  // namespace keyflow::test
