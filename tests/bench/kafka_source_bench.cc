// Kafka source throughput: keyflow's Kafka source reader (KafkaSourceReader: one consumer,
// per-partition split readers, JSON parsing) against a plain librdkafka consume loop over the
// same topic, in the same run, both reading from librdkafka's mock cluster over TCP on
// 127.0.0.1 (started in this process). Run in Release:
//   build/bin/kafka_source_bench --benchmark_min_time=1
// Counters: items_per_second = records/s. Each iteration connects a new consumer and reads the
// whole topic (4 partitions x 40,000 records of ~90 bytes; the mock keeps ~5 MB a partition).
#include <benchmark/benchmark.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/metrics.h"
#include "common/protocol/job_spec.h"
#include "worker/connectors/kafka/kafka_source_reader.h"

namespace keyflow {
namespace {

constexpr int kPartitions = 4;
constexpr int64_t kRecordsPerPartition = 40'000;
constexpr char kTopic[] = "bench";

// The mock cluster with the topic filled; made once, kept for the process.
struct Broker {
  KafkaHandle host;  // the client that hosts the mock cluster
  rd_kafka_mock_cluster_t* cluster = nullptr;
  std::string bootstrap;
};

const Broker& TheBroker() {
  static Broker* broker = [] {
    auto* b = new Broker();
    char err[512];
    rd_kafka_conf_t* conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "log_level", "3", err, sizeof err);
    b->host.reset(rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err));
    b->cluster = rd_kafka_mock_cluster_new(b->host.get(), 1);
    rd_kafka_mock_topic_create(b->cluster, kTopic, kPartitions, 1);
    b->bootstrap = rd_kafka_mock_cluster_bootstraps(b->cluster);
    rd_kafka_conf_t* pconf = rd_kafka_conf_new();
    rd_kafka_conf_set(pconf, "bootstrap.servers", b->bootstrap.c_str(), err, sizeof err);
    rd_kafka_conf_set(pconf, "linger.ms", "50", err, sizeof err);
    KafkaHandle producer(rd_kafka_new(RD_KAFKA_PRODUCER, pconf, err, sizeof err));
    for (int64_t i = 0; i < kRecordsPerPartition * kPartitions; ++i) {
      std::string v = R"({"uid":"uid-)" + std::to_string((i * 7919) % 100000) + R"(","ts":)" +
                      std::to_string(1700000000000LL + i) + R"(,"action":"click","value":)" +
                      std::to_string(i % 1000) + R"(.25,"ok":true})";
      while (rd_kafka_producev(producer.get(), RD_KAFKA_V_TOPIC(kTopic),
                               RD_KAFKA_V_PARTITION(static_cast<int32_t>(i % kPartitions)),
                               RD_KAFKA_V_VALUE(v.data(), v.size()),
                               RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                               RD_KAFKA_V_END) == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
        rd_kafka_poll(producer.get(), 10);
      }
    }
    if (rd_kafka_flush(producer.get(), 60000) != RD_KAFKA_RESP_ERR_NO_ERROR) std::abort();
    return b;
  }();
  return *broker;
}

// Baseline: librdkafka's consumer assigned every partition, polled until all records came.
void BM_PlainConsumeLoop(benchmark::State& state) {
  const Broker& broker = TheBroker();
  int64_t records = 0;
  for (auto _ : state) {
    char err[512];
    rd_kafka_conf_t* conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "bootstrap.servers", broker.bootstrap.c_str(), err, sizeof err);
    rd_kafka_conf_set(conf, "group.id", "bench-plain", err, sizeof err);
    rd_kafka_conf_set(conf, "enable.auto.commit", "false", err, sizeof err);
    KafkaHandle consumer(rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err));
    KafkaPartitionList list(rd_kafka_topic_partition_list_new(kPartitions));
    for (int p = 0; p < kPartitions; ++p) {
      rd_kafka_topic_partition_list_add(list.get(), kTopic, p)->offset = 0;  // as the reader starts
    }
    rd_kafka_assign(consumer.get(), list.get());
    int64_t got = 0;
    size_t bytes = 0;
    while (got < kRecordsPerPartition * kPartitions) {
      rd_kafka_message_t* m = rd_kafka_consumer_poll(consumer.get(), 100);
      if (m == nullptr) continue;
      if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
        bytes += m->len;
        ++got;
      }
      rd_kafka_message_destroy(m);
    }
    benchmark::DoNotOptimize(bytes);
    records += got;
  }
  state.SetItemsProcessed(records);
}

class CountingOutput final : public ReaderOutput, public SourceOutput {
 public:
  SourceOutput& CreateOutputForSplit(SplitId) override { return *this; }
  void ReleaseOutputForSplit(SplitId) override {}
  Status Collect(const Record& record) override {
    ++records;
    benchmark::DoNotOptimize(record.timestamp);
    return Status::Ok();
  }
  int64_t records = 0;
};

// keyflow's Kafka source reader over the same partitions (bounded: each ends at its end offset),
// parsing every value as a JSON Lines record.
void BM_KafkaSourceReader(benchmark::State& state) {
  const Broker& broker = TheBroker();
  Result<KafkaSourceSpec> kafka =
      KafkaSourceSpec::Parse("kafka:bootstrap=" + broker.bootstrap + ",topic=" + kTopic);
  if (!kafka.ok()) return state.SkipWithError(kafka.status().ToString().c_str());
  JobSpec spec;
  spec.key_field = "uid";
  spec.ts_field = "ts";
  spec.max_parallelism = 128;
  SystemClock clock;
  Counter bad_records;
  SourceReaderContext context;
  context.clock = &clock;
  context.bad_records = &bad_records;
  int64_t records = 0;
  for (auto _ : state) {
    Result<std::unique_ptr<SourceReader>> reader = KafkaSourceReader::Create(*kafka, spec, context);
    if (!reader.ok()) return state.SkipWithError(reader.status().ToString().c_str());
    std::vector<SourceSplitState> splits;
    for (int p = 0; p < kPartitions; ++p) {
      splits.push_back({SourceSplit::KafkaPartition(SplitId(p), kTopic, p, kRecordsPerPartition),
                        SplitPosition::InKafka(0)});
    }
    if (Status s = (*reader)->AddSplits(std::move(splits)); !s.ok()) {
      return state.SkipWithError(s.ToString().c_str());
    }
    (*reader)->NotifyNoMoreSplits();
    CountingOutput out;
    while (true) {
      Result<PollResult> r = (*reader)->PollNext(out);
      if (!r.ok()) return state.SkipWithError(r.status().ToString().c_str());
      if (r->status == InputStatus::kEndOfInput) break;
      // kNothingAvailable: poll again (the task would wait until retry_at; here we spin).
    }
    if (out.records != kRecordsPerPartition * kPartitions) {
      return state.SkipWithError("the reader did not read every record");
    }
    records += out.records;
  }
  state.SetItemsProcessed(records);
}

BENCHMARK(BM_PlainConsumeLoop)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_KafkaSourceReader)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace keyflow

BENCHMARK_MAIN();
