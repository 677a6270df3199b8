// The single-thread in-memory baseline of the end-to-end benchmark (issue 3, scripts/bench.sh):
// the same generated records as `keyflow run --input gen:...`, counted per key in one
// absl::flat_hash_map on one thread — no shuffle, no timers, no output, no processes. The
// distributed job's records/s divided by this is the ratio the issue asks for (target >= 0.3).
//
//   build/bin/baseline_bench [--input=gen:events=N,keys=K,splits=S,seed=X] [benchmark flags]
//
//   BM_KeyedCountBaseline  generate every record of every split (GeneratorSplitReader, key
//                          group included, as the source does) and count it in the map;
//                          the map starts empty, as the job's state does
//   BM_GenerateOnly        the generator alone (its share of the baseline)
// Counter: items_per_second = records/s. Both verify that every record was seen.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "common/input/generator_spec.h"
#include "common/key_group_assignment.h"
#include "worker/sources/generator_split_reader.h"

namespace keyflow {
namespace {

constexpr int32_t kMaxParallelism = 128;  // the default for P = 2
constexpr std::string_view kDefaultInput = "gen:events=10000000,keys=1000000,splits=2,seed=42";

std::vector<GeneratorSplitReader> OpenSplits(const GeneratorSpec& spec,
                                             const KeyGroupAssigner& assigner) {
  std::vector<GeneratorSplitReader> readers;
  for (int32_t s = 0; s < spec.splits; ++s) {
    auto reader = GeneratorSplitReader::Create(spec, s, assigner);
    if (!reader.ok()) {
      std::fprintf(stderr, "baseline_bench: %s\n", reader.status().ToString().c_str());
      std::exit(2);
    }
    readers.push_back(std::move(reader).value());
  }
  return readers;
}

void BM_KeyedCountBaseline(benchmark::State& state, const GeneratorSpec& spec) {
  const KeyGroupAssigner assigner(KeyType::kString, kMaxParallelism);
  int64_t records = 0;
  for (auto _ : state) {
    absl::flat_hash_map<Key, int64_t> counts;
    Record r;
    for (GeneratorSplitReader& reader : OpenSplits(spec, assigner)) {
      while (reader.Next(&r) == SplitReadResult::kRecord) ++counts[r.key];
    }
    int64_t total = 0;
    for (const auto& [key, n] : counts) total += n;
    if (total != spec.events) state.SkipWithError("the counts do not add up to the events");
    records += total;
    state.counters["distinct_keys"] = static_cast<double>(counts.size());
    state.PauseTiming();
    { absl::flat_hash_map<Key, int64_t>().swap(counts); }  // freeing is not counting
    state.ResumeTiming();
  }
  state.SetItemsProcessed(records);
}

void BM_GenerateOnly(benchmark::State& state, const GeneratorSpec& spec) {
  const KeyGroupAssigner assigner(KeyType::kString, kMaxParallelism);
  int64_t records = 0;
  for (auto _ : state) {
    Record r;
    int64_t groups = 0;
    for (GeneratorSplitReader& reader : OpenSplits(spec, assigner)) {
      while (reader.Next(&r) == SplitReadResult::kRecord) {
        groups += r.key_group.value();
        ++records;
      }
    }
    benchmark::DoNotOptimize(groups);
  }
  if (records != state.iterations() * spec.events) state.SkipWithError("records missing");
  state.SetItemsProcessed(records);
}

}  // namespace
}  // namespace keyflow

// Takes --input=gen:... (or --input gen:...) out of argv before Google Benchmark sees it.
int main(int argc, char** argv) {
  std::string input(keyflow::kDefaultInput);
  std::vector<char*> rest;
  for (int i = 0; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a.rfind("--input=", 0) == 0) {
      input = a.substr(8);
    } else if (a == "--input" && i + 1 < argc) {
      input = argv[++i];
    } else {
      rest.push_back(argv[i]);
    }
  }
  if (input.rfind("gen:", 0) != 0) {
    std::fprintf(stderr, "baseline_bench: --input must be a gen:... spec, got '%s'\n",
                 input.c_str());
    return 2;
  }
  auto spec = keyflow::ParseGeneratorSpec(std::string_view(input).substr(4));
  if (!spec.ok()) {
    std::fprintf(stderr, "baseline_bench: %s\n", spec.status().ToString().c_str());
    return 2;
  }
  if (spec->rate > 0) {
    std::fprintf(stderr, "baseline_bench: the baseline runs unthrottled; drop rate= from %s\n",
                 input.c_str());
    return 2;
  }
  for (auto* b :
       {benchmark::RegisterBenchmark("BM_KeyedCountBaseline", keyflow::BM_KeyedCountBaseline,
                                     *spec),
        benchmark::RegisterBenchmark("BM_GenerateOnly", keyflow::BM_GenerateOnly, *spec)}) {
    b->Unit(benchmark::kMillisecond)->Iterations(3);
  }
  int n = static_cast<int>(rest.size());
  benchmark::Initialize(&n, rest.data());
  if (benchmark::ReportUnrecognizedArguments(n, rest.data())) return 2;
  benchmark::AddCustomContext("input", input);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
