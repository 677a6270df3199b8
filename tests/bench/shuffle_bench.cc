// Data-plane benchmarks (numbers go to worker/README.md, "Data plane"):
//   * encode / decode of one 32 KiB RECORDS batch with 12-byte keys (records/s, bytes/s), with
//     our BinaryWriter codec and, for comparison, one cereal BinaryOutputArchive per batch;
//   * end to end: 1 RecordWriter -> 1 InputGate over TCP loopback (records/s).
// Run: build-<you>/bin/shuffle_bench   (Release build; it uses 2 threads for the TCP case)
#include <benchmark/benchmark.h>

#include <cereal/archives/binary.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/vector.hpp>
#include <cstdio>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/field_tape_writer.h"
#include "common/key_group_assignment.h"
#include "common/record.h"
#include "common/transport/zmq_context.h"
#include "worker/shuffle/data_frame.h"
#include "worker/shuffle/input_gate.h"
#include "worker/shuffle/record_batch_builder.h"
#include "worker/shuffle/record_writer.h"

namespace keyflow {

// cereal serialization of Record for the comparison only (the runtime never uses it).
template <class Archive>
void save(Archive& ar, const Record& r) {
  ar(cereal::make_size_tag(static_cast<cereal::size_type>(r.key.size())));
  ar(cereal::binary_data(r.key.data(), r.key.size()));
  ar(r.key_group, r.timestamp, r.payload);
}
template <class Archive>
void load(Archive& ar, Record& r) {
  cereal::size_type n;
  ar(cereal::make_size_tag(n));
  char buf[256];
  std::string big;
  char* p = buf;
  if (n > sizeof(buf)) {
    big.resize(n);
    p = big.data();
  }
  ar(cereal::binary_data(p, n));
  r.key = Key::FromBytes(std::string_view(p, n));
  ar(r.key_group, r.timestamp, r.payload);
}

namespace {

constexpr int32_t kMaxParallelism = 128;
constexpr size_t kBatchBytes = 32 * 1024;

Record MakeRecord(int64_t i, size_t payload_bytes) {
  static const KeyGroupAssigner assigner(KeyType::kString, kMaxParallelism);
  char key[16];
  std::snprintf(key, sizeof(key), "user-%07lld", static_cast<long long>(i % 10000000));
  Key k = Key::FromBytes(std::string_view(key, 12));
  KeyGroupId kg = assigner.Assign(k);
  return Record{std::move(k), kg, Timestamp(1700000000000 + i), std::string(payload_bytes, 'p')};
}

// A record of a job that reads fields, as the generator makes it (note=100): the field tape of
// {"uid":"user-…","ts":…,"amount":…,"note":"<100 letters>"} (~175 bytes), no payload.
Record MakeRecordWithFields(int64_t i) {
  Record r = MakeRecord(i, 0);
  const std::string note(100, 'n');
  const std::string key(r.key.bytes());
  FieldTapeWriter w(&r.fields);
  w.BeginObject();
  w.Name("uid");
  w.String(key);
  w.Name("ts");
  w.Int(r.timestamp.millis());
  w.Name("amount");
  w.Int(i % 1000);
  w.Name("note");
  w.String(note);
  w.EndObject();
  return r;
}

// The records that fill one 32 KiB batch; payload_bytes < 0: records with fields.
std::vector<Record> OneBatchOfRecords(int64_t payload_bytes) {
  std::vector<Record> records;
  RecordBatchBuilder builder;
  for (int64_t i = 0; builder.frame_size() < kBatchBytes; ++i) {
    records.push_back(payload_bytes < 0 ? MakeRecordWithFields(i)
                                        : MakeRecord(i, static_cast<size_t>(payload_bytes)));
    builder.Append(records.back());
  }
  return records;
}

// `records` as one sealed RECORDS frame.
std::string SealedFrame(const std::vector<Record>& records) {
  RecordBatchBuilder builder;
  for (const Record& r : records) builder.Append(r);
  std::string frame;
  builder.FinishInto(SubtaskIndex(0), AttemptNumber(1), 0, &frame);
  return frame;
}

void BM_EncodeRecordBatch(benchmark::State& state) {
  const auto records = OneBatchOfRecords(state.range(0));
  RecordBatchBuilder builder;
  std::string frame;
  uint64_t seq = 0;
  for (auto _ : state) {
    for (const Record& r : records) builder.Append(r);
    builder.FinishInto(SubtaskIndex(0), AttemptNumber(1), seq++, &frame);
    benchmark::DoNotOptimize(frame.data());
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(records.size()));
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(frame.size()));
  state.counters["records_per_batch"] = static_cast<double>(records.size());
}
BENCHMARK(BM_EncodeRecordBatch)->Arg(0)->Arg(64)->Arg(-1);  // -1: with fields

void BM_DecodeRecordBatchViews(benchmark::State& state) {
  const auto records = OneBatchOfRecords(state.range(0));
  const std::string frame = SealedFrame(records);
  std::vector<RecordView> views;
  for (auto _ : state) {
    auto decoded = DecodeFrame(frame, "bench");  // includes the checksum
    if (!decoded.ok() || !DecodeRecordBatch(decoded->payload, "bench", &views).ok()) {
      state.SkipWithError("decode failed");
      break;
    }
    benchmark::DoNotOptimize(views.data());
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(records.size()));
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(frame.size()));
}
BENCHMARK(BM_DecodeRecordBatchViews)->Arg(0)->Arg(64)->Arg(-1);  // -1: fields, validated

// The keyed side of a job reading one numeric field: decode (validating the tapes) and read
// "amount" of every record in place.
void BM_DecodeAndReadOneField(benchmark::State& state) {
  const auto records = OneBatchOfRecords(-1);
  const std::string frame = SealedFrame(records);
  std::vector<RecordView> views;
  for (auto _ : state) {
    auto decoded = DecodeFrame(frame, "bench");
    if (!decoded.ok() || !DecodeRecordBatch(decoded->payload, "bench", &views).ok()) {
      state.SkipWithError("decode failed");
      break;
    }
    int64_t sum = 0;
    for (const RecordView& v : views) sum += *FieldValue::Root(v.fields)["amount"].AsInt64();
    benchmark::DoNotOptimize(sum);
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(records.size()));
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(frame.size()));
}
BENCHMARK(BM_DecodeAndReadOneField);

// Decoding into owned Records (Key + payload string), for a like-for-like comparison with cereal.
void BM_DecodeRecordBatchToRecords(benchmark::State& state) {
  const auto records = OneBatchOfRecords(state.range(0));
  const std::string frame = SealedFrame(records);
  std::vector<RecordView> views;
  std::vector<Record> out;
  for (auto _ : state) {
    auto decoded = DecodeFrame(frame, "bench");
    if (!decoded.ok() || !DecodeRecordBatch(decoded->payload, "bench", &views).ok()) {
      state.SkipWithError("decode failed");
      break;
    }
    out.clear();
    for (const RecordView& v : views) out.push_back(v.ToRecord());
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(records.size()));
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(frame.size()));
}
BENCHMARK(BM_DecodeRecordBatchToRecords)->Arg(0)->Arg(64)->Arg(-1);

void BM_CerealEncodeBatch(benchmark::State& state) {
  const auto records = OneBatchOfRecords(state.range(0));
  size_t bytes = 0;
  for (auto _ : state) {
    std::ostringstream os;
    {
      cereal::BinaryOutputArchive ar(os);
      ar(records);
    }
    std::string out = std::move(os).str();
    bytes = out.size();
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(records.size()));
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(bytes));
  state.counters["batch_bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_CerealEncodeBatch)->Arg(0)->Arg(64);

void BM_CerealDecodeBatch(benchmark::State& state) {
  const auto records = OneBatchOfRecords(state.range(0));
  std::ostringstream os;
  {
    cereal::BinaryOutputArchive ar(os);
    ar(records);
  }
  const std::string encoded = std::move(os).str();
  std::vector<Record> out;
  for (auto _ : state) {
    std::istringstream is(encoded);
    cereal::BinaryInputArchive ar(is);
    out.clear();
    ar(out);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(records.size()));
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(encoded.size()));
}
BENCHMARK(BM_CerealDecodeBatch)->Arg(0)->Arg(64);

// 1 sender thread -> 1 receiver (this thread) over tcp://127.0.0.1, 12-byte keys, no payload.
void BM_EndToEndTcpLoopback(benchmark::State& state) {
  const int64_t kRecords = state.range(0);
  auto ctx = ZmqContext::Create().value();
  InputGateOptions gate_options;
  gate_options.subtask = SubtaskIndex(0);
  gate_options.num_channels = 1;
  gate_options.attempt = AttemptNumber(1);
  gate_options.bind_host = "127.0.0.1";
  std::vector<Record> records;
  for (int64_t i = 0; i < 100000; ++i) records.push_back(MakeRecord(i, 0));
  int64_t received_total = 0;
  for (auto _ : state) {
    auto gate = InputGate::Create(*ctx, gate_options).value();
    RecordWriterOptions writer_options;
    writer_options.subtask = SubtaskIndex(0);
    writer_options.attempt = AttemptNumber(1);
    writer_options.max_parallelism = kMaxParallelism;
    writer_options.receiver_endpoints = {gate->endpoint(SubtaskIndex(0))};
    auto writer = RecordWriter::Create(*ctx, writer_options).value();
    Status send_status;
    std::thread sender([&] {
      Status s;
      for (int64_t i = 0; i < kRecords && s.ok(); ++i) {
        s = writer->Emit(records[static_cast<size_t>(i % 100000)], Timestamp(0));
      }
      if (s.ok()) s = writer->BroadcastEvent(ChannelEvent::EndOfInput());
      if (s.ok()) s = writer->Close();
      send_status = s;
    });
    int64_t received = 0;
    while (!gate->AllFinished()) {
      auto next = gate->Next(Duration::Seconds(10));
      if (!next.ok() || !next->has_value()) break;
      received += static_cast<int64_t>((*next)->records.size());
    }
    sender.join();
    if (!send_status.ok() || received != kRecords) {
      state.SkipWithError("records lost or sender failed");
      break;
    }
    received_total += received;
    writer.reset();
    gate.reset();
  }
  state.SetItemsProcessed(received_total);
}
BENCHMARK(BM_EndToEndTcpLoopback)->Arg(2000000)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace keyflow

BENCHMARK_MAIN();
