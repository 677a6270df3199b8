// Test harness for driving a Coordinator message by message: a fake outbox that records what
// the coordinator sends per peer, and a fixture with workers, heartbeats, explicit time and
// checkpoint acknowledgements that write small real state files (no sockets, no sleeps).
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "checkpoint/checkpoint_storage.h"
#include "common/binary_io.h"
#include "common/file_io.h"
#include "common/input/input_spec.h"
#include "common/input/source_split.h"
#include "coordinator/coordinator.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow::test {

// The encoded state of the harness jobs' only source split (generator split 0) at `next_index`:
// what a fake acknowledgement carries and a restored DeployTask hands back.
inline std::string GeneratorSplitAt(int64_t next_index) {
  std::string bytes;
  BinaryWriter w(&bytes);
  SourceSplitState{SourceSplit::Generator(SplitId(0), 0), SplitPosition::InGenerator(next_index)}
      .EncodeTo(&w);
  return bytes;
}

class FakeOutbox : public ControlOutbox {
 public:
  void Send(const std::string& identity, const ControlMessage& msg) override {
    sent.emplace_back(identity, msg);
  }
  template <typename T>
  std::vector<T> To(const std::string& identity) const {
    std::vector<T> out;
    for (const auto& [id, m] : sent) {
      if (id == identity && std::holds_alternative<T>(m)) out.push_back(std::get<T>(m));
    }
    return out;
  }
  template <typename T>
  std::optional<T> Last(const std::string& identity) const {
    auto all = To<T>(identity);
    if (all.empty()) return std::nullopt;
    return all.back();
  }
  std::vector<std::pair<std::string, ControlMessage>> sent;
};

class CoordinatorHarness : public ::testing::Test {
 protected:
  CoordinatorHarness() : clock_(Timestamp(1'764'442'799'000)) { Reset(); }

  // A new coordinator process on the same checkpoint directory (workers must register again).
  void Reset(std::string incarnation = "") {
    CoordinatorOptions o = Options();
    o.incarnation = std::move(incarnation);
    coord_ = std::make_unique<Coordinator>(o, &outbox_, &clock_);
    ids_.clear();
    dead_.clear();
  }

  // The options of the harness's coordinators: fast heartbeats, checkpoints in dir_.
  CoordinatorOptions Options() {
    CoordinatorOptions o;
    o.heartbeat_interval_ms = 100;
    o.heartbeat_timeout_ms = 1000;
    o.job.deploy_timeout_ms = 5000;
    o.job.checkpoint_root = dir_.path();
    o.job.allowed_paths = allowed_paths_;
    o.job.crash_point = crash_point_;
    o.job.directory_lister = [](const std::string& dir) {  // at once: ticks see the result
      std::promise<Result<std::vector<std::string>>> listed;
      listed.set_value(InputSpec::ListFiles(dir));
      return listed.get_future();
    };
    return o;
  }

  RegisterWorker Registration(int32_t slot, int64_t pid) {
    RegisterWorker r;
    r.hostname = "h";
    r.pid = pid;
    r.slot = slot;
    return r;
  }
  // Registers worker `identity` in `slot` (pid 1000 + slot) and returns its id.
  WorkerId Register(const std::string& identity, int32_t slot) {
    return Register(identity, Registration(slot, 1000 + slot));
  }
  WorkerId Register(const std::string& identity, const RegisterWorker& r) {
    Deliver(identity, r);
    auto reply = outbox_.Last<Registered>(identity);
    EXPECT_TRUE(reply.has_value());
    if (reply && reply->refused.empty()) ids_[identity] = reply->worker;
    return reply ? reply->worker : WorkerId(0);
  }

  // The refusal text of the coordinator's latest Registered reply to `identity` ("" when it
  // registered), or nullopt without a reply.
  std::optional<std::string> Refusal(const std::string& identity) {
    auto reply = outbox_.Last<Registered>(identity);
    if (!reply) return std::nullopt;
    return reply->refused;
  }

  // The message of the latest Reply to `identity` if it refuses the request; nullopt without a
  // reply or when the reply is OK.
  std::optional<std::string> RefusingReply(const std::string& identity) {
    auto reply = outbox_.Last<Reply>(identity);
    if (!reply || reply->ok) return std::nullopt;
    return reply->message;
  }

  // Every live worker heartbeats with `metrics_[identity]`.
  void Heartbeats() {
    for (const auto& [identity, id] : ids_) {
      if (dead_.count(identity)) continue;
      AttemptNumber a = coord_->job() ? coord_->job()->attempt() : AttemptNumber(0);
      Deliver(identity, WorkerHeartbeat{id, a, metrics_[identity]});
    }
  }

  // Advances time in heartbeat steps, ticking the coordinator.
  void Advance(int64_t ms) {
    for (int64_t t = 0; t < ms; t += 100) {
      now_ += 100;
      Heartbeats();
      coord_->OnTick(now_);
    }
  }

  JobSpec Spec(int32_t p, int64_t checkpoint_interval_ms) {
    JobSpec s;
    s.job_name = "count-window";
    s.input = "gen:events=10,keys=2,splits=1,seed=1";
    s.parallelism = p;
    s.max_parallelism = 8;
    s.checkpoint_interval_ms = checkpoint_interval_ms;
    s.replacement_timeout_ms = 2000;
    return s;
  }

  void Submit(const JobSpec& spec) {
    Deliver("cli", SubmitJob{spec});
    ASSERT_TRUE(outbox_.Last<Reply>("cli")->ok) << outbox_.Last<Reply>("cli")->message;
  }

  // Answers the current attempt's DeployTask of every worker; the job is then RUNNING.
  void DeployAll(const std::vector<std::string>& identities) {
    for (const auto& identity : identities) AnswerDeployment(identity);
    ASSERT_EQ(coord_->job()->state(), JobState::kRunning);
  }

  // Answers the current attempt's DeployTask of worker `identity` with TaskDeployed.
  void AnswerDeployment(const std::string& identity) {
    auto d = outbox_.Last<DeployTask>(identity);
    ASSERT_TRUE(d.has_value()) << identity;
    ASSERT_EQ(d->attempt, coord_->job()->attempt()) << identity;
    TaskDeployed r;
    r.worker = ids_[identity];
    r.attempt = d->attempt;
    r.subtask = d->subtask;
    r.input_endpoints.assign(static_cast<size_t>(d->spec.parallelism), "tcp://x:1");
    Deliver(identity, r);
  }

  // Registers worker "w0" (slot 0), submits `spec` and deploys it there: the job is RUNNING.
  void RunOnOneWorker(const JobSpec& spec) {
    Register("w0", 0);
    Submit(spec);
    DeployAll({"w0"});
  }

  // Registers workers "w0", "w1", ... (worker i in slot i), spec.parallelism of them and
  // `spare_workers` more, submits `spec` and deploys it on the first spec.parallelism: the job
  // is RUNNING.
  void RunOnWorkers(const JobSpec& spec, int32_t spare_workers = 0) {
    std::vector<std::string> deployed;
    for (int32_t i = 0; i < spec.parallelism + spare_workers; ++i) {
      const std::string identity = "w" + std::to_string(i);
      Register(identity, i);
      if (i < spec.parallelism) deployed.push_back(identity);
    }
    Submit(spec);
    DeployAll(deployed);
  }

  // Acknowledges the latest TriggerCheckpoint sent to each worker with a state file of
  // `bytes_per_key_group` per key group of its range (and the sink's committables).
  void AckAll(const std::vector<std::string>& identities, uint64_t bytes_per_key_group = 10,
              const std::vector<std::string>& sink_committables = {}) {
    for (const auto& identity : identities) {
      auto t = outbox_.Last<TriggerCheckpoint>(identity);
      ASSERT_TRUE(t.has_value());
      auto d = outbox_.Last<DeployTask>(identity);
      AcknowledgeCheckpoint a;
      a.worker = ids_[identity];
      a.attempt = t->attempt;
      a.subtask = d->subtask;
      a.checkpoint = t->checkpoint;
      KeyGroupsStateHandle& h = a.keyed_state;
      h.path = CheckpointStorage::SubtaskStateFileName(d->subtask);
      h.range = d->key_groups;
      for (int32_t g = 0; g < h.range.size(); ++g) {
        h.offsets.push_back(h.size);
        h.lengths.push_back(bytes_per_key_group);
        h.keys.push_back(1);
        h.timers.push_back(1);
        h.size += bytes_per_key_group;
      }
      ASSERT_OK(WriteFileAtomically(t->directory + "/" + h.path, std::string(h.size, 'x')));
      a.split_positions["0"] = GeneratorSplitAt(t->checkpoint.value());
      a.sink_committables = sink_committables;
      Deliver(identity, a);
    }
  }

  // Advances until the next periodic checkpoint is triggered at `identity`.
  void AdvanceToNextCheckpoint(const std::string& identity) {
    size_t before = outbox_.To<TriggerCheckpoint>(identity).size();
    for (int i = 0; i < 100 && outbox_.To<TriggerCheckpoint>(identity).size() == before; ++i) {
      Advance(100);
    }
    ASSERT_GT(outbox_.To<TriggerCheckpoint>(identity).size(), before) << "no checkpoint triggered";
  }

  // Triggers the next periodic checkpoint (waiting for it at the first of `identities`) and
  // acknowledges it from each of them.
  void CompleteNextCheckpoint(const std::vector<std::string>& identities) {
    AdvanceToNextCheckpoint(identities.front());
    if (HasFatalFailure()) return;
    AckAll(identities);
  }

  void Kill(const std::string& identity) { dead_.insert(identity); }
  // Delivers `msg` from connection `identity`, with its key from peers_ if it has one (a secure
  // coordinator), else as from an insecure connection; address from addresses_.
  void Deliver(const std::string& identity, const ControlMessage& msg) {
    ControlPeer from{identity, std::nullopt, ""};
    if (auto it = peers_.find(identity); it != peers_.end()) from.identity = it->second;
    if (auto it = addresses_.find(identity); it != addresses_.end()) from.address = it->second;
    // A worker announces the public key of its identity (as a real worker does) unless the
    // test set one.
    if (const auto* r = std::get_if<RegisterWorker>(&msg);
        r != nullptr && r->public_key.empty() && from.identity) {
      if (auto key = public_keys_.find(from.identity->name); key != public_keys_.end()) {
        RegisterWorker with_key = *r;
        with_key.public_key = key->second;
        coord_->OnMessage(from, with_key, now_);
        return;
      }
    }
    coord_->OnMessage(from, msg, now_);
  }
  nlohmann::json JobStatus() { return coord_->StatusJson(now_)["job"]; }

  TempDir dir_{"coordinator-harness"};
  std::vector<std::string> allowed_paths_;             // --allowed-path of the next Reset()
  std::function<void(std::string_view)> crash_point_;  // JobMasterOptions of the next Reset()
  std::map<std::string, std::string> public_keys_;     // key name -> its public key (secure tests)
  ManualClock clock_;
  FakeOutbox outbox_;
  std::unique_ptr<Coordinator> coord_;
  std::map<std::string, WorkerId> ids_;
  std::map<std::string, SubtaskMetrics> metrics_;
  std::set<std::string> dead_;
  std::map<std::string, PeerIdentity> peers_;     // connection -> its key (secure tests)
  std::map<std::string, std::string> addresses_;  // connection -> its IP
  int64_t now_ = 1000;
};

}  // namespace keyflow::test
