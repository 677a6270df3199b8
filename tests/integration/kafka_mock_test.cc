// keyflow-kafka-mock, the broker of the Kafka tests: a real process serving librdkafka's mock
// cluster over TCP. Real librdkafka clients produce to it and read back exactly what they wrote,
// and the two behaviours the Kafka connectors' design relies on are checked here: a committed
// transaction's records are read, an aborted one's are not.
#include <librdkafka/rdkafka.h>

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "tests/integration/child_process.h"
#include "tests/integration/cluster.h"
#include "tests/integration/test_dir.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow::test {
namespace {

struct KafkaDeleter {
  void operator()(rd_kafka_t* rk) const {
    rd_kafka_flush(rk, 5000);
    rd_kafka_destroy(rk);
  }
};
using KafkaHandle = std::unique_ptr<rd_kafka_t, KafkaDeleter>;

// A client of `type` with `settings`; fails the test on a bad setting.
KafkaHandle Client(rd_kafka_type_t type, const std::map<std::string, std::string>& settings) {
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  char err[512];
  for (const auto& [name, value] : settings) {
    EXPECT_EQ(rd_kafka_conf_set(conf, name.c_str(), value.c_str(), err, sizeof err),
              RD_KAFKA_CONF_OK)
        << err;
  }
  rd_kafka_t* rk = rd_kafka_new(type, conf, err, sizeof err);
  EXPECT_NE(rk, nullptr) << err;
  return KafkaHandle(rk);
}

void Produce(rd_kafka_t* producer, const std::string& topic, int32_t partition,
             const std::string& value) {
  rd_kafka_resp_err_t e =
      rd_kafka_producev(producer, RD_KAFKA_V_TOPIC(topic.c_str()), RD_KAFKA_V_PARTITION(partition),
                        RD_KAFKA_V_VALUE(const_cast<char*>(value.data()), value.size()),
                        RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
  ASSERT_EQ(e, RD_KAFKA_RESP_ERR_NO_ERROR) << rd_kafka_err2str(e);
}

// Reads `partitions` of `topic` from the start until `expected` values came or 20 s passed.
// read_committed: as a consumer of a job's exactly-once output would.
std::map<int32_t, std::vector<std::string>> ReadAll(const std::string& bootstrap,
                                                    const std::string& topic, int32_t partitions,
                                                    size_t expected) {
  KafkaHandle consumer = Client(RD_KAFKA_CONSUMER, {{"bootstrap.servers", bootstrap},
                                                    {"group.id", "keyflow-test"},
                                                    {"isolation.level", "read_committed"},
                                                    {"enable.auto.commit", "false"}});
  rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(partitions);
  for (int32_t p = 0; p < partitions; ++p) {
    rd_kafka_topic_partition_list_add(list, topic.c_str(), p)->offset = RD_KAFKA_OFFSET_BEGINNING;
  }
  EXPECT_EQ(rd_kafka_assign(consumer.get(), list), RD_KAFKA_RESP_ERR_NO_ERROR);
  rd_kafka_topic_partition_list_destroy(list);
  std::map<int32_t, std::vector<std::string>> out;
  size_t got = 0;
  const int64_t deadline = MonotonicMillis() + 20000;
  while (got < expected && MonotonicMillis() < deadline) {
    rd_kafka_message_t* m = rd_kafka_consumer_poll(consumer.get(), 100);
    if (m == nullptr) continue;
    if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
      out[m->partition].emplace_back(static_cast<const char*>(m->payload), m->len);
      ++got;
    }
    rd_kafka_message_destroy(m);
  }
  rd_kafka_consumer_close(consumer.get());
  return out;
}

class KafkaMockTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(dir_.path().empty());
    const std::string file = dir_.path() + "/bootstrap";
    ASSERT_OK_AND_ASSIGN(mock_,
                         ChildProcess::Start({KeyflowBinary("keyflow-kafka-mock"), "--brokers", "3",
                                              "--topic", "events:3", "--bootstrap-file", file},
                                             dir_.path() + "/mock.log"));
    ASSERT_OK(WaitUntil([&] { return !ReadFileOrEmpty(file).empty(); }, Duration::Seconds(20),
                        "the mock cluster's bootstrap file"));
    bootstrap_ = ReadFileOrEmpty(file);
    bootstrap_.pop_back();  // '\n'
  }
  void TearDown() override {
    if (!mock_) return;
    ASSERT_OK(mock_->Signal(SIGTERM));
    ASSERT_OK_AND_ASSIGN(int code, mock_->Wait(Duration::Seconds(20)));
    EXPECT_EQ(code, 0) << Tail(mock_->log_path());
  }

  TestDir dir_;
  std::optional<ChildProcess> mock_;
  std::string bootstrap_;
};

TEST_F(KafkaMockTest, ServesThreeBrokersOverTcpAndReturnsExactlyWhatWasProducedPerPartition) {
  EXPECT_EQ(std::count(bootstrap_.begin(), bootstrap_.end(), ','), 2) << bootstrap_;
  EXPECT_EQ(bootstrap_.rfind("127.0.0.1:", 0), 0u) << bootstrap_;
  {
    KafkaHandle producer = Client(RD_KAFKA_PRODUCER, {{"bootstrap.servers", bootstrap_}});
    for (int i = 0; i < 300; ++i) Produce(producer.get(), "events", i % 3, "v" + std::to_string(i));
    ASSERT_EQ(rd_kafka_flush(producer.get(), 20000), RD_KAFKA_RESP_ERR_NO_ERROR);
  }
  std::map<int32_t, std::vector<std::string>> read = ReadAll(bootstrap_, "events", 3, 300);
  ASSERT_EQ(read.size(), 3u);
  for (int32_t p = 0; p < 3; ++p) {
    std::vector<std::string> expected;
    for (int i = p; i < 300; i += 3) expected.push_back("v" + std::to_string(i));
    EXPECT_EQ(read[p], expected) << "partition " << p;
  }
}

TEST_F(KafkaMockTest, ACommittedTransactionIsReadAndAnAbortedOneIsNot) {
  {
    KafkaHandle producer = Client(RD_KAFKA_PRODUCER, {{"bootstrap.servers", bootstrap_},
                                                      {"transactional.id", "keyflow-test-0"}});
    auto ok = [](rd_kafka_error_t* e) {
      std::string what = e ? rd_kafka_error_string(e) : "";
      if (e) rd_kafka_error_destroy(e);
      return what;
    };
    ASSERT_EQ(ok(rd_kafka_init_transactions(producer.get(), 20000)), "");
    ASSERT_EQ(ok(rd_kafka_begin_transaction(producer.get())), "");
    for (int i = 0; i < 10; ++i)
      Produce(producer.get(), "events", 0, "aborted-" + std::to_string(i));
    ASSERT_EQ(ok(rd_kafka_abort_transaction(producer.get(), 20000)), "");
    ASSERT_EQ(ok(rd_kafka_begin_transaction(producer.get())), "");
    for (int i = 0; i < 5; ++i)
      Produce(producer.get(), "events", 0, "committed-" + std::to_string(i));
    ASSERT_EQ(ok(rd_kafka_commit_transaction(producer.get(), 20000)), "");
  }
  {
    // A last record after both transactions: once it is read, an aborted record would have been.
    KafkaHandle producer = Client(RD_KAFKA_PRODUCER, {{"bootstrap.servers", bootstrap_}});
    Produce(producer.get(), "events", 0, "end");
    ASSERT_EQ(rd_kafka_flush(producer.get(), 20000), RD_KAFKA_RESP_ERR_NO_ERROR);
  }
  std::map<int32_t, std::vector<std::string>> read = ReadAll(bootstrap_, "events", 1, 6);
  EXPECT_EQ(read[0], (std::vector<std::string>{"committed-0", "committed-1", "committed-2",
                                               "committed-3", "committed-4", "end"}));
}

TEST(KafkaMockCommandLine, HelpVersionAndBadFlags) {
  ASSERT_OK_AND_ASSIGN(
      CommandResult help,
      RunCommand({KeyflowBinary("keyflow-kafka-mock"), "--help"}, Duration::Seconds(20)));
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("--bootstrap-file"), std::string::npos) << help.out;
  ASSERT_OK_AND_ASSIGN(
      CommandResult version,
      RunCommand({KeyflowBinary("keyflow-kafka-mock"), "--version"}, Duration::Seconds(20)));
  EXPECT_EQ(version.exit_code, 0);
  EXPECT_NE(version.out.find("librdkafka 2."), std::string::npos) << version.out;
  ASSERT_OK_AND_ASSIGN(CommandResult bad,
                       RunCommand({KeyflowBinary("keyflow-kafka-mock"), "--topic", "events"},
                                  Duration::Seconds(20)));
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(bad.err,
            "keyflow-kafka-mock: --topic wants TOPIC:PARTITIONS (PARTITIONS > 0), not 'events'\n");
  ASSERT_OK_AND_ASSIGN(
      CommandResult brokers,
      RunCommand({KeyflowBinary("keyflow-kafka-mock"), "--brokers", "0"}, Duration::Seconds(20)));
  EXPECT_EQ(brokers.exit_code, 2);
  EXPECT_EQ(brokers.err, "keyflow-kafka-mock: --brokers must be between 1 and 9, not 0\n");
}

}  // namespace
}  // namespace keyflow::test
