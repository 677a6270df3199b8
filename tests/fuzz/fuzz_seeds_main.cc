// fuzz_seeds <dir>: writes the seed corpus of every fuzz target, <dir>/<target>/seed-<n>, made
// by the real encoders (so the seeds follow the formats as they change). Each seed starts with
// the target's mode byte (see the target's file comment). scripts/fuzz.sh runs it before the
// fuzzers; the corpus directories then also collect what the fuzzers find.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "checkpoint/checkpoint_metadata.h"
#include "checkpoint/checkpoint_storage.h"
#include "checkpoint/checksummed_envelope.h"
#include "common/field_tape_writer.h"
#include "common/file_io.h"
#include "common/input/source_split.h"
#include "common/key_group_assignment.h"
#include "common/protocol/control_messages.h"
#include "tests/checkpoint/checkpoint_test_util.h"
#include "tests/fuzz/fuzz_util.h"
#include "worker/shuffle/data_frame.h"
#include "worker/shuffle/record_batch_builder.h"
#include "worker/sinks/file_sink.h"

namespace keyflow {
namespace {

class SeedWriter {
 public:
  explicit SeedWriter(std::string dir) : dir_(std::move(dir)) {}

  void Add(const std::string& target, uint8_t mode, std::string_view bytes) {
    const std::string dir = dir_ + "/" + target;
    Status s = CreateDirectories(dir);
    KF_CHECK(s.ok()) << s.ToString();
    std::string content(1, static_cast<char>(mode));
    content.append(bytes);
    const std::string path = dir + "/seed-" + std::to_string(++count_[target]);
    s = WriteFileAtomically(path, content);
    KF_CHECK(s.ok()) << s.ToString();
  }
  int total() const {
    int n = 0;
    for (const auto& [target, c] : count_) n += c;
    return n;
  }

 private:
  std::string dir_;
  std::map<std::string, int> count_;
};

Record StringRecord(const std::string& key, int64_t ts, std::string payload) {
  Key k = Key::FromBytes(key);
  KeyGroupId g = AssignToKeyGroup(k, KeyType::kString, fuzz::kMaxParallelism).value();
  return Record{std::move(k), g, Timestamp(ts), std::move(payload)};
}

void DataPlaneSeeds(SeedWriter& w) {
  const std::vector<ChannelEvent> events = {ChannelEvent::Watermark(Timestamp(1'700'000'000'000)),
                                            ChannelEvent::Idle(),
                                            ChannelEvent::Active(),
                                            ChannelEvent::Barrier(CheckpointId(3), Timestamp(1234)),
                                            ChannelEvent::CancelBarrier(CheckpointId(4)),
                                            ChannelEvent::EndOfInput()};
  std::string frame;
  for (const ChannelEvent& e : events) {
    EncodeEventFrame(SubtaskIndex(1), AttemptNumber(2), 7, e, &frame);
    w.Add("data_frame_fuzzer", 0, frame);
    const uint8_t sealed = static_cast<uint8_t>(1 | (static_cast<uint8_t>(e.kind) << 1));
    w.Add("data_frame_fuzzer", sealed, std::string_view(frame).substr(kFrameHeaderSize));
  }
  RecordBatchBuilder builder;
  builder.Append(StringRecord("user-1", 1000, "{\"uid\":\"user-1\",\"ts\":1000}"));
  builder.Append(StringRecord("", -5, ""));
  builder.Append(StringRecord("a-key-longer-than-fifteen-bytes", 1'700'000'000'000, "x"));
  {
    Record with_fields = StringRecord("user-2", 2000, R"({"uid":"user-2","a":[1,null]})");
    FieldTapeWriter tape(&with_fields.fields);
    tape.BeginObject();
    tape.Name("uid");
    tape.String("user-2");
    tape.Name("a");
    tape.BeginArray();
    tape.Int(1);
    tape.Null();
    tape.EndArray();
    tape.EndObject();
    builder.Append(with_fields);
    w.Add("record_fields_fuzzer", 0, with_fields.fields);
  }
  builder.FinishInto(SubtaskIndex(0), AttemptNumber(1), 0, &frame);
  w.Add("data_frame_fuzzer", 0, frame);
  const std::string_view payload = std::string_view(frame).substr(kFrameHeaderSize);
  w.Add("data_frame_fuzzer", 1 | (static_cast<uint8_t>(FrameKind::kRecords) << 1), payload);
  w.Add("record_batch_fuzzer", 0, payload);
  builder.FinishInto(SubtaskIndex(0), AttemptNumber(1), 1, &frame);  // empty batch
  w.Add("record_batch_fuzzer", 0, std::string_view(frame).substr(kFrameHeaderSize));
}

void ControlMessageSeeds(SeedWriter& w) {
  const JobSpec spec = ckpt_test::TestSpec(128, 2);
  const CheckpointMetadata metadata = ckpt_test::TestMetadata(128, 2);
  SubtaskMetrics metrics;
  metrics.records_in = 100;
  metrics.current_watermark = 5000;
  metrics.backpressure = 0.25;
  metrics.source_finished = true;

  std::vector<ControlMessage> messages;
  messages.emplace_back(RegisterWorker{"host-a", 4242, "10.0.0.2", -1});
  messages.emplace_back(WorkerHeartbeat{WorkerId(3), AttemptNumber(1), metrics});
  messages.emplace_back(TaskDeployed{WorkerId(3),
                                     AttemptNumber(1),
                                     SubtaskIndex(0),
                                     {"tcp://10.0.0.2:5000", "tcp://10.0.0.2:5001"}});
  messages.emplace_back(
      TaskFailed{WorkerId(3), AttemptNumber(1), SubtaskIndex(0), "disk full", CheckpointId(2)});
  AcknowledgeCheckpoint ack;
  ack.worker = WorkerId(3);
  ack.attempt = AttemptNumber(1);
  ack.checkpoint = CheckpointId(2);
  ack.keyed_state = metadata.subtasks[0].keyed_state;
  ack.split_positions = metadata.split_positions;
  ack.sink_committables = metadata.sink_committables;
  messages.emplace_back(ack);
  DeployTask deploy;
  deploy.attempt = AttemptNumber(2);
  deploy.job_id = "count-window-1";
  deploy.spec = spec;
  deploy.subtask = SubtaskIndex(1);
  deploy.key_groups = KeyGroupRange::Of(64, 127);
  RestoreAssignment restore;
  restore.checkpoint = CheckpointId(2);
  restore.checkpoint_dir = "/ckpt/count-window-1/chk-2";
  restore.keyed_state = {metadata.subtasks[1].keyed_state};
  deploy.restore = restore;
  for (const auto& [id, bytes] : metadata.split_positions) deploy.source_splits.push_back(bytes);
  messages.emplace_back(deploy);
  messages.emplace_back(StartTask{AttemptNumber(2), {{"tcp://a:1", "tcp://b:2"}, {"tcp://c:3"}}});
  messages.emplace_back(TriggerCheckpoint{AttemptNumber(2), CheckpointId(5), 1234,
                                          CheckpointType::kSavepoint, "/ckpt/savepoint-5"});
  messages.emplace_back(NotifyCheckpointAborted{AttemptNumber(2), CheckpointId(5), "timeout"});
  messages.emplace_back(RegisterAgain{});
  messages.emplace_back(SubmitJob{spec});
  messages.emplace_back(SubmitJob{spec, std::string("\x7f"
                                                    "ELF\x02\x01\x01",
                                                    7)});
  messages.emplace_back(FetchJobLibrary{WorkerId(3), AttemptNumber(2), std::string(64, 'a')});
  messages.emplace_back(JobLibraryBlob{AttemptNumber(2), std::string(64, 'a'),
                                       "\x7f"
                                       "ELF",
                                       ""});
  messages.emplace_back(RescaleRequest{3, true});
  messages.emplace_back(WorkerExitReport{"host-a", 4242, 1, "died of SIGSEGV"});
  messages.emplace_back(AddSplits{AttemptNumber(2), SubtaskIndex(1), deploy.source_splits});
  messages.emplace_back(Reply{true, "ok", "{\"jobs\":[]}"});
  for (const ControlMessage& m : messages) {
    const std::string bytes = EncodeControlMessage(m);
    w.Add("control_message_fuzzer", 0, bytes);
    w.Add("control_message_fuzzer", 1, std::string_view(bytes).substr(4));
  }
}

void CheckpointFileSeeds(SeedWriter& w) {
  for (int32_t p : {1, 3}) {
    CheckpointMetadata m = ckpt_test::TestMetadata(128, p, 7);
    m.savepoint = p == 3;
    const std::string file = m.Encode();
    w.Add("checkpoint_metadata_fuzzer", 0, file);
    w.Add("checkpoint_metadata_fuzzer", 1,
          std::string_view(file).substr(kEnvelopeHeaderSize, file.size() - kEnvelopeOverhead));
  }
  JobRecord record;
  record.job_id = "count-window-1";
  record.spec = ckpt_test::TestSpec(128, 2);
  record.state = "RUNNING";
  record.last_attempt = AttemptNumber(3);
  const std::string file = record.Encode();
  w.Add("job_record_fuzzer", 0, file);
  w.Add("job_record_fuzzer", 1,
        std::string_view(file).substr(kEnvelopeHeaderSize, file.size() - kEnvelopeOverhead));
}

// Runs a count-window operator of each key type and time domain over a few keys (windows
// left open, so there is state and there are timers) and writes its snapshot and the section
// bytes of the key groups that hold something.
void SnapshotSeeds(SeedWriter& w) {
  for (int kt = 0; kt < 3; ++kt) {
    for (bool event_time : {false, true}) {
      const KeyType key_type = static_cast<KeyType>(kt);
      auto h = fuzz::MakeCountWindowHarness(key_type, event_time);
      h->SetProcessingTime(1000);
      for (int i = 0; i < 12; ++i) {
        const std::string key = key_type == KeyType::kString
                                    ? "user-" + std::to_string(i % 5) + std::string(i % 3, 'x')
                                    : std::to_string(i * 7919 - 20);
        KF_CHECK(h->ProcessElement(key, 1000 + 10 * i).ok());
      }
      Result<std::string> snapshot = h->Snapshot();
      KF_CHECK(snapshot.ok()) << snapshot.status().ToString();
      const uint8_t mode = static_cast<uint8_t>((kt << 1) | (event_time ? 8 : 0));
      w.Add("keyed_snapshot_fuzzer", mode, *snapshot);
      w.Add("keyed_snapshot_fuzzer", mode | 1, *snapshot);
      w.Add("keyed_snapshot_fuzzer", mode | 1 | (1 << 4) | (1 << 6), *snapshot);  // P=2, #1
      const auto& sections = h->op().snapshot_sections();
      for (KeyGroupId g : h->key_groups().key_groups()) {
        for (size_t s = 0; s < sections.size(); ++s) {
          if (sections[s]->count(g) == 0) continue;
          std::string bytes(1, static_cast<char>(g.value()));
          BinaryWriter writer(&bytes);
          sections[s]->write(g, writer);
          w.Add("key_group_restore_fuzzer", static_cast<uint8_t>(mode | s), bytes);
        }
      }
    }
  }
}

void JsonSeeds(SeedWriter& w) {
  const std::vector<std::pair<uint8_t, std::string>> lines = {
      {0, R"({"uid":"user-1","ts":1700000000000})"},
      {4, R"({"ts":-1,"uid":"\u00e9\ud83d\ude00 x","other":[1,2.5e3,{"a":null}],"b":true})"},
      {0, R"({"uid":"a","ts":1.5})"},
      {0, R"({"uid":"a","uid":"b","ts":1})"},
      {1, R"({"uid":-2147483648,"ts":9223372036854775807})"},
      {1, R"({"uid":"42","ts":0})"},
      {2, R"({"uid":-9223372036854775808,"ts":-9223372036854775808,"big":123456789012345678901})"},
      {2, R"({"uid":"7", "ts": 12 , "s":"\"\\\/\b\f\n\r\t"} )"},
      {0, "{\"uid\":\"a\",\"ts\":1} trailing"},
      {0, "[1,2,3]"},
      {8, R"({"uid":"u","ts":5,"n":null,"d":-0.5e-3,"s":"\u00e9\n","o":{"a":[true,false,{}]}})"},
      {9, R"({"uid":"12","ts":1,"big":18446744073709551616,"huge":1e400,"e":[]})"},
  };
  for (const auto& [mode, line] : lines) w.Add("json_record_fuzzer", mode, line);
}

void SplitAndCommittableSeeds(SeedWriter& w) {
  std::string splits;
  BinaryWriter sw(&splits);
  SourceSplitState{SourceSplit::File(SplitId(0), "/data/in/part-0.jsonl"),
                   SplitPosition::InFile(4096, 37)}
      .EncodeTo(&sw);
  SourceSplitState{SourceSplit::Generator(SplitId(3), 3), SplitPosition::InGenerator(1000)}
      .EncodeTo(&sw);
  w.Add("source_split_fuzzer", 0, splits);

  std::string committables;
  BinaryWriter cw(&committables);
  FileSinkCommittable{CheckpointId(4), ".part-0-1-4.pending", "part-0-1-4.jsonl", 1234, 0xabcdef}
      .EncodeTo(&cw);
  FileSinkCommittable{CheckpointId(5), "p", "f", 0, 0}.EncodeTo(&cw);
  w.Add("sink_committable_fuzzer", 0, committables);
}

}  // namespace
}  // namespace keyflow

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <corpus dir>\n", argv[0]);
    return 2;
  }
  keyflow::SeedWriter w(argv[1]);
  keyflow::DataPlaneSeeds(w);
  keyflow::ControlMessageSeeds(w);
  keyflow::CheckpointFileSeeds(w);
  keyflow::SnapshotSeeds(w);
  keyflow::JsonSeeds(w);
  keyflow::SplitAndCommittableSeeds(w);
  std::printf("fuzz_seeds: wrote %d seeds under %s\n", w.total(), argv[1]);
  return 0;
}
