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
#include "tests/integration/kafka_test_util.h"
#include "tests/integration/test_dir.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow::test {
namespace {

class KafkaMockTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(dir_.path().empty());
    ASSERT_OK_AND_ASSIGN(kafka_, TestKafkaCluster::Start(dir_.path(), 3, {"events:3"}));
    bootstrap_ = kafka_->bootstrap();
  }

  TestDir dir_;
  std::unique_ptr<TestKafkaCluster> kafka_;
  std::string bootstrap_;
};

TEST_F(KafkaMockTest, ServesThreeBrokersOverTcpAndReturnsExactlyWhatWasProducedPerPartition) {
  if (kafka_->is_mock()) {
    EXPECT_EQ(std::count(bootstrap_.begin(), bootstrap_.end(), ','), 2) << bootstrap_;
    EXPECT_EQ(bootstrap_.rfind("127.0.0.1:", 0), 0u) << bootstrap_;
  }
  {
    TestKafkaHandle producer = KafkaClient(RD_KAFKA_PRODUCER, {{"bootstrap.servers", bootstrap_}});
    for (int i = 0; i < 300; ++i)
      KafkaProduce(producer.get(), "events", i % 3, "v" + std::to_string(i));
    ASSERT_EQ(rd_kafka_flush(producer.get(), 20000), RD_KAFKA_RESP_ERR_NO_ERROR);
  }
  std::map<int32_t, std::vector<std::string>> read = KafkaReadAll(bootstrap_, "events", 3, 300);
  ASSERT_EQ(read.size(), 3u);
  for (int32_t p = 0; p < 3; ++p) {
    std::vector<std::string> expected;
    for (int i = p; i < 300; i += 3) expected.push_back("v" + std::to_string(i));
    EXPECT_EQ(read[p], expected) << "partition " << p;
  }
}

TEST_F(KafkaMockTest, ACommittedTransactionIsReadAndAnAbortedOneIsNot) {
  {
    TestKafkaHandle producer =
        KafkaClient(RD_KAFKA_PRODUCER,
                    {{"bootstrap.servers", bootstrap_}, {"transactional.id", "keyflow-test-0"}});
    auto ok = [](rd_kafka_error_t* e) {
      std::string what = e ? rd_kafka_error_string(e) : "";
      if (e) rd_kafka_error_destroy(e);
      return what;
    };
    ASSERT_EQ(ok(rd_kafka_init_transactions(producer.get(), 20000)), "");
    ASSERT_EQ(ok(rd_kafka_begin_transaction(producer.get())), "");
    for (int i = 0; i < 10; ++i)
      KafkaProduce(producer.get(), "events", 0, "aborted-" + std::to_string(i));
    ASSERT_EQ(ok(rd_kafka_abort_transaction(producer.get(), 20000)), "");
    ASSERT_EQ(ok(rd_kafka_begin_transaction(producer.get())), "");
    for (int i = 0; i < 5; ++i)
      KafkaProduce(producer.get(), "events", 0, "committed-" + std::to_string(i));
    ASSERT_EQ(ok(rd_kafka_commit_transaction(producer.get(), 20000)), "");
  }
  {
    // A last record after both transactions: once it is read, an aborted record would have been.
    TestKafkaHandle producer = KafkaClient(RD_KAFKA_PRODUCER, {{"bootstrap.servers", bootstrap_}});
    KafkaProduce(producer.get(), "events", 0, "end");
    ASSERT_EQ(rd_kafka_flush(producer.get(), 20000), RD_KAFKA_RESP_ERR_NO_ERROR);
  }
  std::map<int32_t, std::vector<std::string>> read = KafkaReadAll(bootstrap_, "events", 1, 6);
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
  ASSERT_OK_AND_ASSIGN(CommandResult fifo,
                       RunCommand({KeyflowBinary("keyflow-kafka-mock"), "--commands",
                                   "/nonexistent-keyflow-dir/commands"},
                                  Duration::Seconds(20)));
  EXPECT_EQ(fifo.exit_code, 1);
  EXPECT_EQ(fifo.err,
            "keyflow-kafka-mock: cannot create the FIFO /nonexistent-keyflow-dir/commands: No "
            "such file or directory\n");
}

}  // namespace
}  // namespace keyflow::test
