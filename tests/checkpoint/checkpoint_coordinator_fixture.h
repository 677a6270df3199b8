// CheckpointCoordinatorFixture: the setup the CheckpointCoordinator test suites share (full
// checkpoints in checkpoint_coordinator_test.cc, incremental ones in
// incremental_checkpoint_coordinator_test.cc): a coordinator of one job attempt over a real
// CheckpointStorage in a temporary directory with a manual clock, driven message by message,
// and the small readers of what it sends. Each suite adds its own acknowledgements and triggers.
//
// Threading: the test's thread.
#pragma once

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "checkpoint/checkpoint_coordinator.h"
#include "checkpoint/checkpoint_storage.h"
#include "common/clock.h"
#include "common/file_io.h"
#include "common/key_group_assignment.h"

namespace keyflow::ckpt_test {

class CheckpointCoordinatorFixture : public ::testing::Test {
 protected:
  using Outgoing = CheckpointCoordinator::Outgoing;

  // Job `job` at (max_parallelism, parallelism), attempt `attempt`; checkpoints go below a new
  // temporary directory named after `tmp_name`. No coordinator yet: call CreateCoordinator.
  CheckpointCoordinatorFixture(std::string job, int32_t max_parallelism, int32_t parallelism,
                               AttemptNumber attempt, const std::string& tmp_name)
      : kJob(std::move(job)),
        attempt_(attempt),
        ranges_(CreateKeyGroupPartitions(max_parallelism, parallelism)),
        tmp_(tmp_name) {}

  // (Re)creates the coordinator (a second call is a coordinator restart: same storage and clock).
  void CreateCoordinator(const JobSpec& spec, const CheckpointConfig& config, int64_t first_id) {
    coordinator_.emplace(kJob, spec, attempt_, config, &storage_, &clock_, first_id);
  }
  CheckpointCoordinator& cc() { return *coordinator_; }

  // An acknowledgement of checkpoint `id` by `subtask` of the attempt (from worker 100 +
  // subtask), without state yet.
  AcknowledgeCheckpoint AckHeader(int64_t id, int32_t subtask) const {
    AcknowledgeCheckpoint a;
    a.worker = WorkerId(100 + subtask);
    a.attempt = attempt_;
    a.subtask = SubtaskIndex(subtask);
    a.checkpoint = CheckpointId(id);
    return a;
  }

  std::string Dir(int64_t id) { return storage_.CheckpointDirectory(kJob, CheckpointId(id)); }

  // How many of `out` carry a message of type T.
  template <typename T>
  static size_t Count(const std::vector<Outgoing>& out) {
    size_t n = 0;
    for (const Outgoing& o : out) n += std::holds_alternative<T>(o.message) ? 1 : 0;
    return n;
  }

  const std::string kJob;
  const AttemptNumber attempt_;
  const std::vector<KeyGroupRange> ranges_;
  TempDir tmp_;
  CheckpointStorage storage_{tmp_.path()};
  ManualClock clock_{Timestamp(1'700'000'000'000)};
  std::optional<CheckpointCoordinator> coordinator_;
};

}  // namespace keyflow::ckpt_test
