// What the REST snapshot costs the coordinator's control loop (coordinator/control_server.cc):
// Coordinator::StatusJson plus the checkpoint history, built and dumped every
// ControlServer::kPublishIntervalMs (250 ms) and after each command. The coordinator is driven
// message by message through tests/coordinator/coordinator_harness.h (no sockets, no workers):
// P subtasks deployed, 11 completed checkpoints in the history (10 of them with each subtask's
// numbers, as the status keeps them).
//
//   build/bin/status_bench    (target: a build of the 128-subtask job <= 1/4 of the interval)
//
//   BM_StatusSnapshot/P      StatusJson + CheckpointHistoryJson + dump, for P = 1 and P = 128
//   BM_DumpOnly/P            the dump alone of the same, already built snapshot (baseline: the
//                            serialisation every publish pays whatever the status code does)
// Counter: bytes (the dumped snapshot). The coordinator's log goes to stderr.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "coordinator/control_server.h"
#include "tests/coordinator/coordinator_harness.h"

namespace keyflow::test {
namespace {

constexpr int kCheckpoints = 11;

// A coordinator with a running job of `p` subtasks and kCheckpoints completed checkpoints. The
// harness is a gtest fixture; here it only drives the coordinator, and any failed expectation
// aborts the benchmark (a snapshot of a job that is not running measures nothing).
class RunningJob : public CoordinatorHarness {
 public:
  explicit RunningJob(int p) {
    std::vector<std::string> ids;
    for (int i = 0; i < p; ++i) {
      ids.push_back("w" + std::to_string(i));
      Register(ids.back(), i);
    }
    JobSpec spec = Spec(p, 1000);
    spec.max_parallelism = std::max(p, 8);
    Submit(spec);
    DeployAll(ids);
    for (int c = 0; c < kCheckpoints; ++c) {
      AdvanceToNextCheckpoint(ids[0]);
      AckAll(ids);
    }
    if (::testing::Test::HasFailure() || coord_->job() == nullptr ||
        coord_->job()->CheckpointHistoryJson().size() != static_cast<size_t>(kCheckpoints)) {
      std::fprintf(stderr, "status_bench: the job of %d subtasks did not reach %d checkpoints\n", p,
                   kCheckpoints);
      std::exit(2);
    }
  }

  nlohmann::json Snapshot() {
    nlohmann::json status = coord_->StatusJson(clock_.MonotonicMillis());
    status["job"]["checkpoints"]["history"] = coord_->job()->CheckpointHistoryJson();
    return status;
  }

 private:
  void TestBody() override {}
};

void SetCounters(benchmark::State& state, size_t bytes) {
  state.counters["bytes"] = static_cast<double>(bytes);
}

void BM_StatusSnapshot(benchmark::State& state) {
  RunningJob job(static_cast<int>(state.range(0)));
  size_t bytes = 0;
  for (auto _ : state) {
    std::string dumped = job.Snapshot().dump();
    bytes = dumped.size();
    benchmark::DoNotOptimize(dumped.data());
  }
  SetCounters(state, bytes);
}
BENCHMARK(BM_StatusSnapshot)->Arg(1)->Arg(128)->Unit(benchmark::kMillisecond);

void BM_DumpOnly(benchmark::State& state) {
  RunningJob job(static_cast<int>(state.range(0)));
  const nlohmann::json snapshot = job.Snapshot();
  size_t bytes = 0;
  for (auto _ : state) {
    std::string dumped = snapshot.dump();
    bytes = dumped.size();
    benchmark::DoNotOptimize(dumped.data());
  }
  SetCounters(state, bytes);
}
BENCHMARK(BM_DumpOnly)->Arg(1)->Arg(128)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace keyflow::test

BENCHMARK_MAIN();
