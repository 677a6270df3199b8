// Kafka in the integration tests: keyflow-kafka-mock as a child process (or, when
// KEYFLOW_KAFKA_BOOTSTRAP is set, the real Kafka or Redpanda it names), and librdkafka clients
// of the tests' own to produce input and read output.
//
// Threading: the test's thread.
#pragma once

#include <librdkafka/rdkafka.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "tests/integration/child_process.h"

namespace keyflow::test {

struct TestKafkaDeleter {
  void operator()(rd_kafka_t* rk) const;  // flushes a producer, closes a consumer
};
using TestKafkaHandle = std::unique_ptr<rd_kafka_t, TestKafkaDeleter>;

// A client of `type` with `settings`; fails the test on a bad setting.
TestKafkaHandle KafkaClient(rd_kafka_type_t type,
                            const std::map<std::string, std::string>& settings);

// Produces `value` to `partition` of `topic` (asynchronously: flush with rd_kafka_flush), with
// the Kafka timestamp `timestamp_ms` (0: the producer's clock).
void KafkaProduce(rd_kafka_t* producer, const std::string& topic, int32_t partition,
                  const std::string& value, int64_t timestamp_ms = 0);

// Reads `partitions` of `topic` from the start, read_committed, until `expected` values came or
// 20 s passed; the values per partition in offset order.
std::map<int32_t, std::vector<std::string>> KafkaReadAll(const std::string& bootstrap,
                                                         const std::string& topic,
                                                         int32_t partitions, size_t expected);

// Produces every line of the file `path` to `partition` of `topic`, in order, and flushes;
// expects the brokers to acknowledge them within 20 s.
void KafkaProduceLines(const std::string& bootstrap, const std::string& topic, int32_t partition,
                       const std::string& path);
// Same, but each line's time field `ts_field` is taken out of the value and becomes the record's
// Kafka timestamp (what a source with ts=kafka reads).
void KafkaProduceLinesWithKafkaTimestamps(const std::string& bootstrap, const std::string& topic,
                                          int32_t partition, const std::string& path,
                                          const std::string& ts_field = "ts");

struct TestKafkaMessage {
  int32_t partition = 0;
  int64_t offset = 0;
  std::optional<std::string> key;
  std::string value;
  int64_t timestamp_ms = -1;  // -1: none
};

// Every record of `partitions` of `topic` from the start to the end offsets seen when called,
// read_committed, in partition and offset order; what was read if that took longer than 20 s.
std::vector<TestKafkaMessage> KafkaReadToEnd(const std::string& bootstrap, const std::string& topic,
                                             int32_t partitions);

// The offsets consumer group `group` committed for partitions 0..partitions-1 of `topic` (-1001
// where it has none), or an empty map if the brokers do not answer.
std::map<int32_t, int64_t> KafkaCommittedOffsets(const std::string& bootstrap,
                                                 const std::string& group, const std::string& topic,
                                                 int32_t partitions);

// A Kafka cluster for one test: keyflow-kafka-mock with `brokers` brokers and the `topics`
// ("NAME:PARTITIONS"), its log in `dir`, answering metadata requests for each of
// `missing_topics` with "unknown topic"; or the cluster of KEYFLOW_KAFKA_BOOTSTRAP (topics are
// then expected to exist, the missing ones not to).
class TestKafkaCluster {
 public:
  static Result<std::unique_ptr<TestKafkaCluster>> Start(
      const std::string& dir, int brokers, const std::vector<std::string>& topics,
      const std::vector<std::string>& missing_topics = {});
  // Stops the mock (SIGTERM) and expects exit code 0.
  ~TestKafkaCluster();

  const std::string& bootstrap() const { return bootstrap_; }
  // Runs a mock command ("broker-down 1", "leader events 0 2", ...) and returns its answer
  // ("ok" or "error: ..."). Precondition: is_mock().
  Result<std::string> Command(const std::string& line);
  bool is_mock() const { return mock_.has_value(); }

 private:
  TestKafkaCluster() = default;
  // The answers ("ok", "error: ...") in the mock's log so far.
  std::vector<std::string> Answers() const;

  std::optional<ChildProcess> mock_;
  std::string commands_;  // the mock's command FIFO
  std::string bootstrap_;
};

}  // namespace keyflow::test
