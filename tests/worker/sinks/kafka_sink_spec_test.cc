#include "common/input/kafka_sink_spec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "tests/testutil/status_matchers.h"

namespace keyflow {
namespace {

using ::testing::HasSubstr;

TEST(KafkaSinkSpec, ParsesEveryParameter) {
  ASSERT_OK_AND_ASSIGN(
      KafkaSinkSpec spec,
      KafkaSinkSpec::Parse("kafka:bootstrap=a:9092;b:9093,topic=out,guarantee=at-least-once,"
                           "key=user,partition=3,markers=m,kafka.compression.type=lz4,"
                           "kafka.sasl.password=hunter2"));
  EXPECT_EQ(spec.BootstrapServers(), "a:9092,b:9093");
  EXPECT_EQ(spec.topic, "out");
  EXPECT_FALSE(spec.exactly_once());
  EXPECT_EQ(spec.key_field, "user");
  EXPECT_EQ(spec.partition, std::optional<int32_t>(3));
  EXPECT_EQ(spec.marker_topic, "m");
  EXPECT_EQ(spec.properties, (std::map<std::string, std::string>{{"compression.type", "lz4"},
                                                                 {"sasl.password", "hunter2"}}));
  EXPECT_EQ(spec.Redacted(),
            "kafka:bootstrap=a:9092;b:9093,topic=out,guarantee=at-least-once,key=user,"
            "partition=3,markers=m,kafka.compression.type=lz4,kafka.sasl.password=***");
}

TEST(KafkaSinkSpec, DefaultsAreExactlyOnceUnkeyedByKeyWithTheDefaultMarkerTopic) {
  ASSERT_OK_AND_ASSIGN(KafkaSinkSpec spec, KafkaSinkSpec::Parse("kafka:bootstrap=h:1,topic=t"));
  EXPECT_TRUE(spec.exactly_once());
  EXPECT_EQ(spec.key_field, "");
  EXPECT_EQ(spec.partition, std::nullopt);
  EXPECT_EQ(spec.marker_topic, "keyflow-sink-commits");
  EXPECT_EQ(spec.TransactionTimeoutMs(), 900'000);
  EXPECT_EQ(spec.Redacted(), "kafka:bootstrap=h:1,topic=t,guarantee=exactly-once");
  EXPECT_TRUE(KafkaSinkSpec::Names("kafka:x"));
  EXPECT_FALSE(KafkaSinkSpec::Names("/tmp/kafka:x"));
}

TEST(KafkaSinkSpec, RefusesBadParametersWithASentenceAndNoSecret) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"topic=t", "bootstrap=HOST:PORT is missing"},
      {"bootstrap=h:1", "topic=T is missing"},
      {"bootstrap=h,topic=t", "bootstrap server 'h' is not HOST:PORT"},
      {"bootstrap=h:1,topic=a;b", "topic must name one topic"},
      {"bootstrap=h:1,topic=t,guarantee=twice", "guarantee 'twice' is neither"},
      {"bootstrap=h:1,topic=t,partition=-1", "partition '-1' is not a partition number"},
      {"bootstrap=h:1,topic=t,key=", "key names no field"},
      {"bootstrap=h:1,topic=t,markers=t", "markers must be another topic"},
      {"bootstrap=h:1,topic=t,topic=u", "'topic' is given twice"},
      {"bootstrap=h:1,topic=t,group=g", "unknown parameter 'group'"},
      {"bootstrap=h:1,topic=t,kafka.transactional.id=x", "'transactional.id' is keyflow's own"},
      {"bootstrap=h:1,topic=t,kafka.enable.idempotence=false", "keyflow's own"},
      {"bootstrap=h:1,topic=t,kafka.transaction.timeout.ms=soon",
       "kafka.transaction.timeout.ms 'soon' is not a positive number"},
      {"bootstrap=h:1,topic=t,kafka.sasl.password=hunter2,bad", "'bad' is not NAME=VALUE"},
  };
  for (const auto& [text, says] : cases) {
    Result<KafkaSinkSpec> spec = KafkaSinkSpec::Parse("kafka:" + text);
    ASSERT_FALSE(spec.ok()) << text;
    EXPECT_EQ(spec.status().code(), StatusCode::kInvalidArgument) << text;
    EXPECT_THAT(spec.status().message(), HasSubstr("--output kafka:")) << text;
    EXPECT_THAT(spec.status().message(), HasSubstr(says)) << text;
    EXPECT_EQ(spec.status().message().find("hunter2"), std::string::npos) << text;
  }
}

TEST(KafkaSinkSpec, ExactlyOnceNeedsCheckpointsAndATransactionTimeoutAboveTheIntervalPlusAMinute) {
  ASSERT_OK_AND_ASSIGN(KafkaSinkSpec eo, KafkaSinkSpec::Parse("kafka:bootstrap=h:1,topic=t"));
  EXPECT_THAT(eo.CheckAgainstCheckpointing(0).message(),
              HasSubstr("set --checkpoint-interval (e.g. 1s), or write with "
                        "guarantee=at-least-once"));
  EXPECT_OK(eo.CheckAgainstCheckpointing(840'000));  // 14 min + 1 min = the default 15 min
  EXPECT_THAT(eo.CheckAgainstCheckpointing(840'001).message(),
              HasSubstr("kafka.transaction.timeout.ms=900000 is shorter than the checkpoint "
                        "interval (840001 ms) plus 60 s"));
  ASSERT_OK_AND_ASSIGN(
      KafkaSinkSpec short_timeout,
      KafkaSinkSpec::Parse("kafka:bootstrap=h:1,topic=t,kafka.transaction.timeout.ms=61000"));
  EXPECT_OK(short_timeout.CheckAgainstCheckpointing(1'000));
  EXPECT_FALSE(short_timeout.CheckAgainstCheckpointing(1'001).ok());
  ASSERT_OK_AND_ASSIGN(KafkaSinkSpec alo,
                       KafkaSinkSpec::Parse("kafka:bootstrap=h:1,topic=t,guarantee=at-least-once"));
  EXPECT_OK(alo.CheckAgainstCheckpointing(0));
}

}  // namespace
}  // namespace keyflow
