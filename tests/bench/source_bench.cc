// Source throughput: JSON Lines parsing (in memory and through FileSplitReader) and the
// deterministic generator. Run in Release:
//   build/bin/source_bench --benchmark_min_time=1
// Counters: items_per_second = records/s; bytes_per_second = input MB/s.
#include <benchmark/benchmark.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/key_group_assignment.h"
#include "common/metrics.h"
#include "worker/sources/builtin_source.h"
#include "worker/sources/file_split_reader.h"
#include "worker/sources/generator_split_reader.h"
#include "worker/sources/json_record_parser.h"

namespace keyflow {
namespace {

constexpr int32_t kMaxParallelism = 128;
constexpr int kLines = 100000;

// Typical event lines: a string key, a timestamp and a few other fields (~90 bytes).
std::string MakeLines(int n) {
  std::string all;
  for (int i = 0; i < n; ++i) {
    all += R"({"uid":"uid-)" + std::to_string((i * 7919) % 100000) + R"(","ts":)" +
           std::to_string(1700000000000LL + i) + R"(,"action":"click","value":)" +
           std::to_string(i % 1000) + R"(.25,"ok":true})" + "\n";
  }
  return all;
}

// Arg: 1 = keep_fields (a job that reads fields: the walk also writes the field tape and keeps
// the line), 0 = key and timestamp only.
void BM_JsonParseInMemory(benchmark::State& state) {
  std::string buf = MakeLines(kLines);
  buf.resize(buf.size() + kJsonPadding);
  std::vector<std::string_view> lines;
  for (size_t pos = 0; pos < buf.size() - kJsonPadding;) {
    size_t nl = buf.find('\n', pos);
    lines.emplace_back(buf.data() + pos, nl - pos);
    pos = nl + 1;
  }
  JsonRecordFormat format;
  format.keep_fields = state.range(0) != 0;
  JsonRecordParser parser(format, kMaxParallelism);
  Record record;
  int64_t bytes = 0;
  for (auto _ : state) {
    for (std::string_view line : lines) {
      Status s =
          parser.Parse(line, buf.size() - static_cast<size_t>(line.data() - buf.data()), &record);
      if (!s.ok()) state.SkipWithError(s.ToString().c_str());
      benchmark::DoNotOptimize(record);
      bytes += static_cast<int64_t>(line.size()) + 1;
    }
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(lines.size()));
  state.SetBytesProcessed(bytes);
}
BENCHMARK(BM_JsonParseInMemory)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

void BM_FileSplitReader(benchmark::State& state) {
  std::string dir = (std::filesystem::temp_directory_path() / "keyflow-bench-XXXXXX").string();
  if (::mkdtemp(dir.data()) == nullptr) {
    state.SkipWithError("mkdtemp failed");
    return;
  }
  std::string path = dir + "/events.jsonl";
  std::string content = MakeLines(kLines);
  std::ofstream(path, std::ios::binary) << content;
  JsonRecordParser parser(JsonRecordFormat{}, kMaxParallelism);
  Record record;
  for (auto _ : state) {
    Result<FileSplitReader> reader =
        FileSplitReader::Open(SourceSplit::File(SplitId(0), path), SplitPosition(), &parser);
    if (!reader.ok()) {
      state.SkipWithError(reader.status().ToString().c_str());
      break;
    }
    int64_t n = 0;
    while (true) {
      Result<SplitReadResult> r = reader->Next(&record);
      if (!r.ok() || *r != SplitReadResult::kRecord) break;
      ++n;
    }
    if (n != kLines) state.SkipWithError("wrong record count");
  }
  state.SetItemsProcessed(state.iterations() * kLines);
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(content.size()));
  std::filesystem::remove_all(dir);
}
BENCHMARK(BM_FileSplitReader)->Unit(benchmark::kMillisecond);

// Where a source's records go in the benchmark: counted, nothing else.
class CountingOutput final : public ReaderOutput, public SourceOutput {
 public:
  SourceOutput& CreateOutputForSplit(SplitId) override { return *this; }
  void ReleaseOutputForSplit(SplitId) override {}
  Status Collect(const Record& record) override {
    benchmark::DoNotOptimize(record.timestamp);
    ++records;
    return Status::Ok();
  }
  int64_t records = 0;
};

// A source subtask's reader of 4 file splits (MultiplexSourceReader over FileSplitReaders, as
// CreateBuiltinSourceReader makes it): what the task loop drives, per record.
void BM_MultiplexFileSplits(benchmark::State& state) {
  constexpr int kSplits = 4;
  std::string dir = (std::filesystem::temp_directory_path() / "keyflow-bench-XXXXXX").string();
  if (::mkdtemp(dir.data()) == nullptr) {
    state.SkipWithError("mkdtemp failed");
    return;
  }
  std::string content = MakeLines(kLines / kSplits);
  std::vector<SourceSplitState> splits;
  for (int i = 0; i < kSplits; ++i) {
    std::string path = dir + "/events-" + std::to_string(i) + ".jsonl";
    std::ofstream(path, std::ios::binary) << content;
    splits.push_back({SourceSplit::File(SplitId(i), path), SplitPosition(), false});
  }
  JobSpec spec;
  spec.input = dir;
  spec.max_parallelism = kMaxParallelism;
  Counter bad_records;
  SystemClock clock;
  SourceReaderContext context;
  context.clock = &clock;
  context.bad_records = &bad_records;
  for (auto _ : state) {
    Result<std::unique_ptr<SourceReader>> reader = CreateBuiltinSourceReader(spec, context);
    if (!reader.ok() || !(*reader)->AddSplits(splits).ok()) {
      state.SkipWithError("cannot open the splits");
      break;
    }
    (*reader)->NotifyNoMoreSplits();
    CountingOutput out;
    while (true) {
      Result<PollResult> r = (*reader)->PollNext(out);
      if (!r.ok() || r->status == InputStatus::kEndOfInput) break;
    }
    if (out.records != kLines) state.SkipWithError("wrong record count");
  }
  state.SetItemsProcessed(state.iterations() * kLines);
  std::filesystem::remove_all(dir);
}
BENCHMARK(BM_MultiplexFileSplits)->Unit(benchmark::kMillisecond);

// Arg 0: skew*10, Arg 1: payload bytes, Arg 2: 1 = records with fields (note=100).
void BM_Generator(benchmark::State& state) {
  GeneratorSpec spec;
  spec.events = int64_t{1} << 60;
  spec.keys = 1000000;
  spec.splits = 4;
  spec.seed = 7;
  spec.skew = static_cast<double>(state.range(0)) / 10.0;
  spec.payload_bytes = static_cast<int32_t>(state.range(1));
  KeyGroupAssigner assigner(KeyType::kString, kMaxParallelism);
  GeneratorRecordFormat format;
  format.with_fields = state.range(2) != 0;
  Result<GeneratorSplitReader> reader =
      GeneratorSplitReader::Create(spec, 1, assigner, SplitPosition(), nullptr, format);
  if (!reader.ok()) {
    state.SkipWithError(reader.status().ToString().c_str());
    return;
  }
  Record record;
  for (auto _ : state) {
    for (int i = 0; i < 1000; ++i) {
      reader->Next(&record);
      benchmark::DoNotOptimize(record);
    }
  }
  state.SetItemsProcessed(state.iterations() * 1000);
}
BENCHMARK(BM_Generator)->Args({0, 0, 0})->Args({10, 0, 0})->Args({0, 64, 0})->Args({0, 0, 1});

}  // namespace
}  // namespace keyflow

BENCHMARK_MAIN();
