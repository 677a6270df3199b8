#include "common/input/kafka_spec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "common/input/input_spec.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(KafkaSourceSpec, ParsesEveryParameter) {
  ASSERT_OK_AND_ASSIGN(
      KafkaSourceSpec spec,
      KafkaSourceSpec::Parse("kafka:bootstrap=a:9092;b:9093,topic=t1;t2,group=g,"
                             "start=timestamp:1700000000000,stop=latest,idle=5s,discovery=2s,"
                             "kafka.security.protocol=SASL_SSL,kafka.sasl.password=hunter2"));
  EXPECT_EQ(spec.bootstrap, (std::vector<std::string>{"a:9092", "b:9093"}));
  EXPECT_EQ(spec.BootstrapServers(), "a:9092,b:9093");
  EXPECT_EQ(spec.topics, (std::vector<std::string>{"t1", "t2"}));
  EXPECT_EQ(spec.group, "g");
  EXPECT_EQ(spec.start, KafkaSourceSpec::Start::kTimestamp);
  EXPECT_EQ(spec.start_timestamp_ms, 1700000000000);
  EXPECT_TRUE(spec.bounded);
  EXPECT_EQ(spec.discovery_interval, Duration::Seconds(2));
  EXPECT_EQ(spec.idle_timeout, Duration::Seconds(5));
  EXPECT_EQ(spec.properties, (std::map<std::string, std::string>{
                                 {"sasl.password", "hunter2"}, {"security.protocol", "SASL_SSL"}}));
  EXPECT_EQ(spec.Redacted(),
            "kafka:bootstrap=a:9092;b:9093,topic=t1;t2,group=g,start=timestamp:1700000000000,"
            "stop=latest,idle=5s,discovery=2s,kafka.sasl.password=***,"
            "kafka.security.protocol=SASL_SSL");
}

TEST(KafkaSourceSpec, DefaultsAreEarliestUnboundedGroupKeyflowEveryTenSeconds) {
  ASSERT_OK_AND_ASSIGN(KafkaSourceSpec spec,
                       KafkaSourceSpec::Parse("bootstrap=localhost:9092,topic=events"));
  EXPECT_EQ(spec.start, KafkaSourceSpec::Start::kEarliest);
  EXPECT_FALSE(spec.bounded);
  EXPECT_EQ(spec.group, "keyflow");
  EXPECT_EQ(spec.discovery_interval, Duration::Seconds(10));
  EXPECT_EQ(spec.idle_timeout, Duration::Millis(0)) << "partitions are never idle by default";
  EXPECT_EQ(spec.Redacted(),
            "kafka:bootstrap=localhost:9092,topic=events,group=keyflow,start=earliest");
  for (const char* start : {"latest", "committed"}) {
    ASSERT_OK_AND_ASSIGN(
        spec, KafkaSourceSpec::Parse(std::string("bootstrap=h:1,topic=t,start=") + start));
    EXPECT_EQ(KafkaStartName(spec.start), start);
  }
}

TEST(KafkaSourceSpec, BadParametersAreOneSentenceNamingThem) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"topic=t", "bootstrap=HOST:PORT is missing"},
      {"bootstrap=h:1", "topic=T (or pattern=REGEX) is missing"},
      {"bootstrap=h:1,topic=t,pattern=t.*", "topic= and pattern= exclude each other"},
      {"bootstrap=h:1,pattern=(unclosed", "pattern '(unclosed' is not a regular expression"},
      {"bootstrap=h:1,topic=t,ts=", "ts is empty"},
      {"bootstrap=h,topic=t", "bootstrap server 'h' is not HOST:PORT"},
      {"bootstrap=h:0,topic=t", "bootstrap server 'h:0' is not HOST:PORT"},
      {"bootstrap=h:1,topic=a;,", "a topic name is empty"},
      {"bootstrap=h:1,topic=t,start=first",
       "start 'first' is none of earliest, latest, committed, timestamp:MS"},
      {"bootstrap=h:1,topic=t,start=timestamp:-5", "start 'timestamp:-5' is none of"},
      {"bootstrap=h:1,topic=t,stop=never", "stop 'never' is not 'latest'"},
      {"bootstrap=h:1,topic=t,discovery=0ms", "discovery '0ms' is not a positive duration"},
      {"bootstrap=h:1,topic=t,idle=soon", "idle 'soon' is not a positive duration"},
      {"bootstrap=h:1,topic=t,topic=u", "'topic' is given twice"},
      {"bootstrap=h:1,topic=t,colour=red", "unknown parameter 'colour'"},
      {"bootstrap=h:1,topic=t,oops", "'oops' is not NAME=VALUE"},
      {"bootstrap=h:1,topic=t,kafka.group.id=x", "the property 'group.id' is keyflow's own"},
      {"bootstrap=h:1,topic=t,kafka.=x", "'kafka.' names no librdkafka property"},
  };
  for (const auto& [text, why] : cases) {
    Result<KafkaSourceSpec> spec = KafkaSourceSpec::Parse(text);
    ASSERT_FALSE(spec.ok()) << text;
    EXPECT_EQ(spec.status().code(), StatusCode::kInvalidArgument) << text;
    EXPECT_THAT(spec.status().message(), HasSubstr("--input kafka:" + text + ": " + why));
  }
}

TEST(KafkaSourceSpec, APatternReadsEveryMatchingTopicButKafkasOwn) {
  ASSERT_OK_AND_ASSIGN(KafkaSourceSpec spec,
                       KafkaSourceSpec::Parse("bootstrap=h:1,pattern=events-[a-z]+,ts=kafka"));
  EXPECT_TRUE(spec.topics.empty());
  EXPECT_EQ(spec.topic_pattern, "events-[a-z]+");
  EXPECT_TRUE(spec.kafka_timestamp);
  EXPECT_TRUE(spec.ReadsTopic("events-eu"));
  EXPECT_FALSE(spec.ReadsTopic("events-eu2")) << "the whole name must match";
  EXPECT_FALSE(spec.ReadsTopic("old-events-eu"));
  EXPECT_EQ(spec.TopicsText(), "topics matching /events-[a-z]+/");
  EXPECT_EQ(spec.Redacted(),
            "kafka:bootstrap=h:1,pattern=events-[a-z]+,group=keyflow,start=earliest,ts=kafka");
  ASSERT_OK_AND_ASSIGN(spec, KafkaSourceSpec::Parse("bootstrap=h:1,pattern=.*"));
  EXPECT_TRUE(spec.ReadsTopic("anything"));
  EXPECT_FALSE(spec.ReadsTopic("__consumer_offsets")) << "Kafka's internal topics never match";
  ASSERT_OK_AND_ASSIGN(spec, KafkaSourceSpec::Parse("bootstrap=h:1,topic=a;b"));
  EXPECT_TRUE(spec.ReadsTopic("b"));
  EXPECT_FALSE(spec.ReadsTopic("c"));
  EXPECT_EQ(spec.TopicsText(), "topics a, b");
}

TEST(KafkaSourceSpec, TsNamesTheTimeFieldOrTheKafkaTimestamp) {
  ASSERT_OK_AND_ASSIGN(KafkaSourceSpec spec,
                       KafkaSourceSpec::Parse("bootstrap=h:1,topic=t,ts=event_time"));
  EXPECT_EQ(spec.timestamp_field, "event_time");
  EXPECT_FALSE(spec.kafka_timestamp);
  EXPECT_EQ(spec.Redacted(),
            "kafka:bootstrap=h:1,topic=t,group=keyflow,start=earliest,ts=event_time");
  EXPECT_OK(spec.CheckAgainstKeyField("uid"));
  Status same = spec.CheckAgainstKeyField("event_time");
  EXPECT_EQ(same.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(same.message(), HasSubstr("ts=event_time is the key field too"));
  ASSERT_OK_AND_ASSIGN(spec, KafkaSourceSpec::Parse("bootstrap=h:1,topic=t"));
  EXPECT_TRUE(spec.timestamp_field.empty()) << "the job's --ts-field";
  EXPECT_FALSE(spec.kafka_timestamp);
}

TEST(KafkaSourceSpec, SecretsAreRecognisedByName) {
  for (const char* name : {"sasl.password", "ssl.key.password", "sasl.oauthbearer.client.secret",
                           "ssl.key.pem", "sasl.jaas.config"}) {
    EXPECT_TRUE(KafkaSourceSpec::IsSecretProperty(name)) << name;
  }
  for (const char* name : {"security.protocol", "sasl.username", "ssl.key.location",
                           "ssl.ca.location", "socket.timeout.ms"}) {
    EXPECT_FALSE(KafkaSourceSpec::IsSecretProperty(name)) << name;
  }
}

TEST(KafkaSourceSpec, SecretsAreRedactedFromTheTextAsGivenAndFromErrors) {
  const std::string text =
      "kafka:kafka.sasl.password=hunter2,bootstrap=h:1,topic=t,kafka.sasl.username=u,"
      "kafka.ssl.key.password=k3y";
  EXPECT_EQ(KafkaSourceSpec::RedactText(text),
            "kafka:kafka.sasl.password=***,bootstrap=h:1,topic=t,kafka.sasl.username=u,"
            "kafka.ssl.key.password=***");
  EXPECT_EQ(InputSpec::Redacted(text), KafkaSourceSpec::RedactText(text));
  EXPECT_EQ(InputSpec::Redacted("gen:events=1,keys=1,splits=1"), "gen:events=1,keys=1,splits=1");
  Result<KafkaSourceSpec> bad = KafkaSourceSpec::Parse(text + ",start=soon");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), Not(HasSubstr("hunter2")));
  EXPECT_THAT(bad.status().message(), Not(HasSubstr("k3y")));
  EXPECT_THAT(bad.status().message(), HasSubstr("kafka.sasl.password=***"));
}

TEST(KafkaSourceSpec, InputSpecParsesKafkaWithoutContactingABroker) {
  ASSERT_OK_AND_ASSIGN(InputSpec input,
                       InputSpec::Parse("kafka:bootstrap=192.0.2.1:9092,topic=events"));
  EXPECT_EQ(input.kind(), InputSpec::Kind::kKafka);
  EXPECT_TRUE(input.splits().empty()) << "the coordinator discovers the partitions";
  EXPECT_EQ(input.kafka().topics, (std::vector<std::string>{"events"}));
  EXPECT_TRUE(InputSpec::IsKafka("kafka:x"));
  EXPECT_EQ(InputSpec::PathOf("kafka:bootstrap=h:1,topic=t"), "");
  EXPECT_EQ(InputSpec::WithAbsolutePath("kafka:bootstrap=h:1,topic=t"),
            "kafka:bootstrap=h:1,topic=t");
  EXPECT_EQ(InputSpec::Parse("kafka:topic=t").status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace keyflow
