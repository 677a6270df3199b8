// Several source subtasks shuffle into several keyed subtasks over TCP loopback: every record
// arrives exactly once, at the owner of its key group, in per-sender order.
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "common/field_tape_writer.h"
#include "common/key_group_assignment.h"
#include "tests/testutil/status_matchers.h"
#include "tests/worker/shuffle/shuffle_test_util.h"
#include "worker/shuffle/input_gate.h"
#include "worker/shuffle/record_writer.h"

namespace keyflow {
namespace {

using testing::kMaxParallelism;
using testing::LongKeyRecord;

TEST(ShuffleEndToEnd, EveryRecordArrivesExactlyOnceAtItsKeyGroupOwner) {
  constexpr int32_t kSenders = 3;
  constexpr int32_t kReceivers = 2;
  constexpr int64_t kRecordsPerSender = 200000;
  auto ctx = ZmqContext::Create().value();

  std::vector<std::unique_ptr<InputGate>> gates;
  std::vector<InputGate*> gate_ptrs;
  for (int32_t j = 0; j < kReceivers; ++j) {
    InputGateOptions options = testing::GateOptions(SubtaskIndex(j), kSenders);
    options.key_groups =
        ComputeKeyGroupRangeForOperatorIndex(kMaxParallelism, kReceivers, SubtaskIndex(j));
    gates.push_back(InputGate::Create(*ctx, options).value());
    gate_ptrs.push_back(gates.back().get());
  }
  std::vector<std::unique_ptr<RecordWriter>> writers;
  for (int32_t i = 0; i < kSenders; ++i) {
    writers.push_back(
        RecordWriter::Create(*ctx, testing::WriterOptions(SubtaskIndex(i), gate_ptrs)).value());
  }

  // Record id = sender * kRecordsPerSender + n; the timestamp carries n to check the order.
  std::vector<Status> sender_status(kSenders);
  std::vector<std::thread> senders;
  for (int32_t i = 0; i < kSenders; ++i) {
    senders.emplace_back([&, i] {
      RecordWriter& w = *writers[i];
      Status s;
      for (int64_t n = 0; n < kRecordsPerSender && s.ok(); ++n) {
        s = w.Emit(LongKeyRecord(i * kRecordsPerSender + n, Timestamp(n)), Timestamp(0));
      }
      if (s.ok()) s = w.BroadcastEvent(ChannelEvent::EndOfInput());
      if (s.ok()) s = w.Close();
      sender_status[i] = s;
    });
  }

  struct Seen {
    std::vector<uint8_t> hits;     // per record id: times delivered
    std::vector<int64_t> last_ts;  // per sender: last timestamp delivered
    uint64_t wrong_owner = 0;
    uint64_t out_of_order = 0;
    Status error;
  };
  std::vector<Seen> seen(kReceivers);
  std::vector<std::thread> receivers;
  for (int32_t j = 0; j < kReceivers; ++j) {
    seen[j].hits.assign(kSenders * kRecordsPerSender, 0);
    seen[j].last_ts.assign(kSenders, -1);
    receivers.emplace_back([&, j] {
      InputGate& gate = *gates[j];
      Seen& mine = seen[j];
      while (!gate.AllFinished()) {
        auto next = gate.Next(Duration::Seconds(30));
        if (!next.ok()) {
          mine.error = next.status();
          return;
        }
        if (!next->has_value()) {
          mine.error = DeadlineExceeded("no input for 30 s");
          return;
        }
        const InputEvent& e = **next;
        for (const RecordView& r : e.records) {
          int64_t id = r.ToKey().AsInt64();
          if (ComputeOperatorIndexForKeyGroup(kMaxParallelism, kReceivers, r.key_group) !=
              SubtaskIndex(j)) {
            ++mine.wrong_owner;
          }
          if (r.timestamp.millis() <= mine.last_ts[e.channel.value()]) ++mine.out_of_order;
          mine.last_ts[e.channel.value()] = r.timestamp.millis();
          if (id >= 0 && id < kSenders * kRecordsPerSender) ++mine.hits[id];
        }
      }
    });
  }
  for (auto& t : senders) t.join();
  for (auto& t : receivers) t.join();

  for (int32_t i = 0; i < kSenders; ++i) EXPECT_OK(sender_status[i]);
  uint64_t total = 0;
  for (int32_t j = 0; j < kReceivers; ++j) {
    EXPECT_OK(seen[j].error);
    EXPECT_EQ(seen[j].wrong_owner, 0u);
    EXPECT_EQ(seen[j].out_of_order, 0u);
    for (int32_t i = 0; i < kSenders; ++i) {
      total += gates[j]->metrics(SubtaskIndex(i)).records;
      EXPECT_EQ(gates[j]->metrics(SubtaskIndex(i)).decode_errors, 0u);
    }
  }
  EXPECT_EQ(total, static_cast<uint64_t>(kSenders * kRecordsPerSender));
  // Exactly once, and at the receiver that owns the record's key group.
  uint64_t missing = 0, duplicated = 0, misplaced = 0;
  for (int64_t id = 0; id < kSenders * kRecordsPerSender; ++id) {
    Record r = LongKeyRecord(id);
    int32_t owner =
        ComputeOperatorIndexForKeyGroup(kMaxParallelism, kReceivers, r.key_group).value();
    int hits = 0;
    for (int32_t j = 0; j < kReceivers; ++j) {
      hits += seen[j].hits[id];
      if (j != owner && seen[j].hits[id] > 0) ++misplaced;
    }
    if (hits == 0) ++missing;
    if (hits > 1) ++duplicated;
  }
  EXPECT_EQ(missing, 0u);
  EXPECT_EQ(duplicated, 0u);
  EXPECT_EQ(misplaced, 0u);
  // Both receivers got a share (the key groups of 600k keys spread over both ranges).
  for (int32_t j = 0; j < kReceivers; ++j) {
    uint64_t got = 0;
    for (int32_t i = 0; i < kSenders; ++i) got += gates[j]->metrics(SubtaskIndex(i)).records;
    EXPECT_GT(got, 0u);
  }
  writers.clear();
  gates.clear();
}

// Records of a job that reads fields cross a real TCP channel with their raw JSON and field
// tape intact, between key-only records of the same batch.
TEST(ShuffleEndToEnd, RecordsWithFieldsArriveWithTheirFields) {
  constexpr int64_t kRecords = 1000;
  auto ctx = ZmqContext::Create().value();
  auto gate = InputGate::Create(*ctx, testing::GateOptions(SubtaskIndex(0), 1)).value();
  auto writer =
      RecordWriter::Create(*ctx, testing::WriterOptions(SubtaskIndex(0), {gate.get()})).value();
  auto make = [](int64_t n) {
    Record r = LongKeyRecord(n, Timestamp(n));
    if (n % 3 == 0) return r;  // key-only
    r.payload = "{\"uid\":" + std::to_string(n) + ",\"amount\":" + std::to_string(n * 7) + "}";
    FieldTapeWriter w(&r.fields);
    w.BeginObject();
    w.Name("uid");
    w.Int(n);
    w.Name("amount");
    w.Int(n * 7);
    w.EndObject();
    return r;
  };
  for (int64_t n = 0; n < kRecords; ++n) ASSERT_OK(writer->Emit(make(n), Timestamp(0)));
  ASSERT_OK(writer->BroadcastEvent(ChannelEvent::EndOfInput()));
  ASSERT_OK(writer->Close());
  int64_t next = 0;
  while (!gate->AllFinished()) {
    auto event = gate->Next(Duration::Seconds(30));
    ASSERT_OK(event);
    ASSERT_TRUE(event->has_value()) << "no input for 30 s";
    for (const RecordView& v : (*event)->records) {
      const Record expected = make(next++);
      ASSERT_EQ(v.ToRecord(), expected);
      if (!expected.fields.empty()) {
        EXPECT_EQ(*v.ToRecord().GetInt64("amount"), (next - 1) * 7);
      }
    }
  }
  EXPECT_EQ(next, kRecords);
  EXPECT_EQ(gate->metrics(SubtaskIndex(0)).decode_errors, 0u);
}

}  // namespace
}  // namespace keyflow
