// Helpers for the data-plane tests: records with real key groups, writers and gates wired on
// 127.0.0.1 with ephemeral ports, and draining a gate into owned events.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/key.h"
#include "common/key_group_assignment.h"
#include "common/record.h"
#include "common/transport/zmq_context.h"
#include "tests/common/transport/unused_tcp_endpoint.h"
#include "tests/testutil/status_matchers.h"
#include "worker/shuffle/input_gate.h"
#include "worker/shuffle/record_writer.h"

namespace keyflow::testing {

inline constexpr int32_t kMaxParallelism = 128;

// A record whose key is the int64 `id` (KeyType::kLong) with its real key group.
inline Record LongKeyRecord(int64_t id, Timestamp ts = Timestamp(0), std::string payload = "") {
  Key key = Key::FromInt64(id);
  KeyGroupId kg = AssignToKeyGroup(key, KeyType::kLong, kMaxParallelism).value();
  return Record{std::move(key), kg, ts, std::move(payload)};
}

inline InputGateOptions GateOptions(SubtaskIndex subtask, int32_t num_channels,
                                    AttemptNumber attempt = AttemptNumber(1)) {
  InputGateOptions o;
  o.subtask = subtask;
  o.num_channels = num_channels;
  o.attempt = attempt;
  o.bind_host = "127.0.0.1";
  o.advertised_host = "127.0.0.1";
  return o;
}

// Options of the writer of source subtask `sender`, wired to channel `sender` of every gate.
inline RecordWriterOptions WriterOptions(SubtaskIndex sender, const std::vector<InputGate*>& gates,
                                         AttemptNumber attempt = AttemptNumber(1)) {
  RecordWriterOptions o;
  o.subtask = sender;
  o.attempt = attempt;
  o.max_parallelism = kMaxParallelism;
  for (InputGate* g : gates) o.receiver_endpoints.push_back(g->endpoint(sender));
  return o;
}

// An InputEvent with its records copied out (InputEvent's views die at the next poll).
struct OwnedEvent {
  SubtaskIndex channel;
  FrameKind kind = FrameKind::kRecords;
  std::vector<Record> records;
  ChannelEvent event;
};

inline OwnedEvent Own(const InputEvent& e) {
  OwnedEvent o;
  o.channel = e.channel;
  o.kind = e.kind;
  o.event = e.event;
  for (const RecordView& r : e.records) o.records.push_back(r.ToRecord());
  return o;
}

// Reads events until every channel delivered END_OF_INPUT (or an error / a 10 s silence).
inline std::vector<OwnedEvent> DrainUntilEndOfInput(InputGate& gate) {
  std::vector<OwnedEvent> out;
  while (!gate.AllFinished()) {
    auto next = gate.Next(Duration::Seconds(10));
    EXPECT_OK(next);
    if (!next.ok() || !next->has_value()) {
      ADD_FAILURE() << "no END_OF_INPUT within 10 s";
      break;
    }
    out.push_back(Own(**next));
  }
  return out;
}

inline std::vector<Record> RecordsOf(const std::vector<OwnedEvent>& events) {
  std::vector<Record> out;
  for (const OwnedEvent& e : events) out.insert(out.end(), e.records.begin(), e.records.end());
  return out;
}

// A fixture with one single-channel gate for subtask 0 (gate_) and at most one writer into it.
class OneGateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ctx_ = ZmqContext::Create().value();
    gate_ = InputGate::Create(*ctx_, GateOptions(SubtaskIndex(0), 1)).value();
  }
  void TearDown() override {
    writer_.reset();
    gate_.reset();
  }

  // Creates the writer and waits until it is connected to the gate.
  RecordWriter& MakeWriter(RecordWriterOptions options) {
    writer_ = RecordWriter::Create(*ctx_, std::move(options)).value();
    EXPECT_OK(writer_->AwaitConnections(Duration::Seconds(5)));
    return *writer_;
  }

  std::unique_ptr<ZmqContext> ctx_;
  std::unique_ptr<InputGate> gate_;
  std::unique_ptr<RecordWriter> writer_;
};

}  // namespace keyflow::testing
