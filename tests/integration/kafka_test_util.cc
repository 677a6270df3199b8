#include "tests/integration/kafka_test_util.h"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <tuple>

#include "common/check.h"
#include "tests/integration/cluster.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow::test {

void TestKafkaDeleter::operator()(rd_kafka_t* rk) const {
  if (rd_kafka_type(rk) == RD_KAFKA_PRODUCER) {
    rd_kafka_flush(rk, 5000);
  } else {
    rd_kafka_consumer_close(rk);
  }
  rd_kafka_destroy(rk);
}

TestKafkaHandle KafkaClient(rd_kafka_type_t type,
                            const std::map<std::string, std::string>& settings) {
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  char err[512];
  for (const auto& [name, value] : settings) {
    EXPECT_EQ(rd_kafka_conf_set(conf, name.c_str(), value.c_str(), err, sizeof err),
              RD_KAFKA_CONF_OK)
        << err;
  }
  rd_kafka_t* rk = rd_kafka_new(type, conf, err, sizeof err);
  EXPECT_NE(rk, nullptr) << err;
  return TestKafkaHandle(rk);
}

void KafkaProduce(rd_kafka_t* producer, const std::string& topic, int32_t partition,
                  const std::string& value, int64_t timestamp_ms) {
  auto produce = [&] {
    return rd_kafka_producev(producer, RD_KAFKA_V_TOPIC(topic.c_str()),
                             RD_KAFKA_V_PARTITION(partition),
                             RD_KAFKA_V_VALUE(const_cast<char*>(value.data()), value.size()),
                             RD_KAFKA_V_TIMESTAMP(timestamp_ms),
                             RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
  };
  rd_kafka_resp_err_t e = produce();
  if (e == RD_KAFKA_RESP_ERR__QUEUE_FULL) {  // let the queue drain, once
    rd_kafka_flush(producer, 20000);
    e = produce();
  }
  ASSERT_EQ(e, RD_KAFKA_RESP_ERR_NO_ERROR) << rd_kafka_err2str(e);
}

std::map<int32_t, std::vector<std::string>> KafkaReadAll(const std::string& bootstrap,
                                                         const std::string& topic,
                                                         int32_t partitions, size_t expected) {
  TestKafkaHandle consumer = KafkaClient(RD_KAFKA_CONSUMER, {{"bootstrap.servers", bootstrap},
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
  return out;
}

void KafkaProduceLines(const std::string& bootstrap, const std::string& topic, int32_t partition,
                       const std::string& path) {
  TestKafkaHandle producer = KafkaClient(RD_KAFKA_PRODUCER, {{"bootstrap.servers", bootstrap}});
  std::ifstream in(path);
  ASSERT_TRUE(in) << path;
  std::string line;
  while (std::getline(in, line)) KafkaProduce(producer.get(), topic, partition, line);
  ASSERT_EQ(rd_kafka_flush(producer.get(), 20000), RD_KAFKA_RESP_ERR_NO_ERROR);
}

void KafkaProduceLinesWithKafkaTimestamps(const std::string& bootstrap, const std::string& topic,
                                          int32_t partition, const std::string& path,
                                          const std::string& ts_field) {
  TestKafkaHandle producer = KafkaClient(RD_KAFKA_PRODUCER, {{"bootstrap.servers", bootstrap}});
  std::ifstream in(path);
  ASSERT_TRUE(in) << path;
  std::string line;
  while (std::getline(in, line)) {
    nlohmann::json value = nlohmann::json::parse(line);
    ASSERT_TRUE(value.contains(ts_field)) << line;
    const int64_t ts = value[ts_field].get<int64_t>();
    value.erase(ts_field);
    KafkaProduce(producer.get(), topic, partition, value.dump(), ts);
  }
  ASSERT_EQ(rd_kafka_flush(producer.get(), 20000), RD_KAFKA_RESP_ERR_NO_ERROR);
}

std::vector<TestKafkaMessage> KafkaReadToEnd(const std::string& bootstrap, const std::string& topic,
                                             int32_t partitions) {
  TestKafkaHandle consumer = KafkaClient(RD_KAFKA_CONSUMER, {{"bootstrap.servers", bootstrap},
                                                             {"group.id", "keyflow-test"},
                                                             {"isolation.level", "read_committed"},
                                                             {"enable.auto.commit", "false"}});
  std::map<int32_t, int64_t> end;
  rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(partitions);
  for (int32_t p = 0; p < partitions; ++p) {
    int64_t low = 0;
    int64_t high = 0;
    EXPECT_EQ(
        rd_kafka_query_watermark_offsets(consumer.get(), topic.c_str(), p, &low, &high, 10000),
        RD_KAFKA_RESP_ERR_NO_ERROR);
    end[p] = high;
    rd_kafka_topic_partition_list_add(list, topic.c_str(), p)->offset = RD_KAFKA_OFFSET_BEGINNING;
  }
  EXPECT_EQ(rd_kafka_assign(consumer.get(), list), RD_KAFKA_RESP_ERR_NO_ERROR);
  std::vector<TestKafkaMessage> out;
  auto done = [&] {
    for (int i = 0; i < list->cnt; ++i) list->elems[i].offset = RD_KAFKA_OFFSET_INVALID;
    rd_kafka_position(consumer.get(), list);
    for (int i = 0; i < list->cnt; ++i) {
      const int64_t at = list->elems[i].offset;
      const int64_t high = end[list->elems[i].partition];
      if (high > 0 && (at < 0 || at < high)) return false;
    }
    return true;
  };
  const int64_t deadline = MonotonicMillis() + 20000;
  while (!done() && MonotonicMillis() < deadline) {
    rd_kafka_message_t* m = rd_kafka_consumer_poll(consumer.get(), 100);
    if (m == nullptr) continue;
    if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR && m->offset < end[m->partition]) {
      TestKafkaMessage t;
      t.partition = m->partition;
      t.offset = m->offset;
      if (m->key != nullptr) t.key.emplace(static_cast<const char*>(m->key), m->key_len);
      t.value.assign(static_cast<const char*>(m->payload), m->len);
      rd_kafka_timestamp_type_t type;
      t.timestamp_ms = rd_kafka_message_timestamp(m, &type);
      out.push_back(std::move(t));
    }
    rd_kafka_message_destroy(m);
  }
  rd_kafka_topic_partition_list_destroy(list);
  std::sort(out.begin(), out.end(), [](const TestKafkaMessage& a, const TestKafkaMessage& b) {
    return std::tie(a.partition, a.offset) < std::tie(b.partition, b.offset);
  });
  return out;
}

std::map<int32_t, int64_t> KafkaCommittedOffsets(const std::string& bootstrap,
                                                 const std::string& group, const std::string& topic,
                                                 int32_t partitions) {
  TestKafkaHandle consumer =
      KafkaClient(RD_KAFKA_CONSUMER, {{"bootstrap.servers", bootstrap}, {"group.id", group}});
  rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(partitions);
  for (int32_t p = 0; p < partitions; ++p)
    rd_kafka_topic_partition_list_add(list, topic.c_str(), p);
  std::map<int32_t, int64_t> out;
  if (rd_kafka_committed(consumer.get(), list, 10000) == RD_KAFKA_RESP_ERR_NO_ERROR) {
    for (int i = 0; i < list->cnt; ++i) out[list->elems[i].partition] = list->elems[i].offset;
  }
  rd_kafka_topic_partition_list_destroy(list);
  return out;
}

Result<std::unique_ptr<TestKafkaCluster>> TestKafkaCluster::Start(
    const std::string& dir, int brokers, const std::vector<std::string>& topics,
    const std::vector<std::string>& missing_topics) {
  std::unique_ptr<TestKafkaCluster> c(new TestKafkaCluster());
  if (const char* real = std::getenv("KEYFLOW_KAFKA_BOOTSTRAP"); real != nullptr && *real) {
    c->bootstrap_ = real;
    return c;
  }
  const std::string file = dir + "/kafka-bootstrap";
  c->commands_ = dir + "/kafka-commands";
  std::vector<std::string> args = {KeyflowBinary("keyflow-kafka-mock"),
                                   "--brokers",
                                   std::to_string(brokers),
                                   "--bootstrap-file",
                                   file,
                                   "--commands",
                                   c->commands_};
  for (const std::string& topic : topics) {
    args.push_back("--topic");
    args.push_back(topic);
  }
  for (const std::string& topic : missing_topics) {
    args.push_back("--missing-topic");
    args.push_back(topic);
  }
  KF_ASSIGN_OR_RETURN(ChildProcess mock, ChildProcess::Start(args, dir + "/kafka-mock.log"));
  c->mock_.emplace(std::move(mock));
  KF_RETURN_IF_ERROR(WaitUntil([&] { return !ReadFileOrEmpty(file).empty(); },
                               Duration::Seconds(20), "the mock cluster's bootstrap file"));
  c->bootstrap_ = ReadFileOrEmpty(file);
  c->bootstrap_.pop_back();  // '\n'
  return c;
}

std::vector<std::string> TestKafkaCluster::Answers() const {
  std::vector<std::string> out;
  std::istringstream log(ReadFileOrEmpty(mock_->log_path()));
  std::string line;
  while (std::getline(log, line)) {
    if (line == "ok" || line.rfind("error: ", 0) == 0) out.push_back(line);
  }
  return out;
}

Result<std::string> TestKafkaCluster::Command(const std::string& line) {
  KF_CHECK(mock_.has_value()) << "commands need keyflow-kafka-mock";
  const size_t before = Answers().size();
  {
    std::ofstream fifo(commands_);  // the mock holds it open: this does not block
    fifo << line << "\n";
    if (!fifo.good()) return IoError("cannot write the mock's command FIFO " + commands_);
  }
  std::vector<std::string> answers;
  KF_RETURN_IF_ERROR(WaitUntil(
      [&] {
        answers = Answers();
        return answers.size() > before;
      },
      Duration::Seconds(20), "the mock's answer to '" + line + "'"));
  return answers[before];
}

TestKafkaCluster::~TestKafkaCluster() {
  if (!mock_) return;
  EXPECT_OK(mock_->Signal(SIGTERM));
  Result<int> code = mock_->Wait(Duration::Seconds(20));
  EXPECT_OK(code);
  if (code.ok()) {
    EXPECT_EQ(*code, 0) << Tail(mock_->log_path());
  }
}

}  // namespace keyflow::test
