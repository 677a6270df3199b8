#include "common/input/kafka_sink_spec.h"

#include <set>

#include "common/input/kafka_params.h"
#include "common/input/kafka_spec.h"

namespace keyflow {
namespace {

using kafka_params::kPropertyPrefix;

const std::set<std::string, std::less<>>& OwnProperties() {
  static const std::set<std::string, std::less<>> kOwn = {"bootstrap.servers", "transactional.id",
                                                          "enable.idempotence"};
  return kOwn;
}

Status Bad(std::string_view text, const std::string& why) {
  return InvalidArgument(
      "--output " +
      KafkaSourceSpec::RedactText(std::string(KafkaSinkSpec::kPrefix) + std::string(text)) + ": " +
      why);
}

}  // namespace

Result<KafkaSinkSpec> KafkaSinkSpec::Parse(std::string_view text) {
  if (Names(text)) text.remove_prefix(kPrefix.size());
  KafkaSinkSpec spec;
  auto visit = [&](std::string_view name, std::string_view value) -> Status {
    if (name.substr(0, kPropertyPrefix.size()) == kPropertyPrefix) {
      return kafka_params::AddProperty(
          name, value, OwnProperties(),
          "use bootstrap=; transactions and idempotence follow guarantee=", &spec.properties);
    }
    if (name == "bootstrap") {
      KF_ASSIGN_OR_RETURN(spec.bootstrap, kafka_params::ParseBootstrap(value));
    } else if (name == "topic") {
      if (value.empty() || value.find(';') != std::string_view::npos) {
        return InvalidArgument("topic must name one topic");
      }
      spec.topic = std::string(value);
    } else if (name == "guarantee") {
      if (value == "exactly-once") {
        spec.guarantee = Guarantee::kExactlyOnce;
      } else if (value == "at-least-once") {
        spec.guarantee = Guarantee::kAtLeastOnce;
      } else {
        return InvalidArgument("guarantee '" + std::string(value) +
                               "' is neither exactly-once nor at-least-once");
      }
    } else if (name == "markers") {
      if (value.empty() || value.find(';') != std::string_view::npos) {
        return InvalidArgument("markers must name one topic");
      }
      spec.marker_topic = std::string(value);
    } else if (name == "key") {
      if (value.empty()) return InvalidArgument("key names no field");
      spec.key_field = std::string(value);
    } else if (name == "partition") {
      int64_t p = -1;
      if (!kafka_params::ParseInt64(value, &p) || p < 0 || p > INT32_MAX) {
        return InvalidArgument("partition '" + std::string(value) +
                               "' is not a partition number (0, 1, ...)");
      }
      spec.partition = static_cast<int32_t>(p);
    } else {
      return InvalidArgument(
          "unknown parameter '" + std::string(name) +
          "' (known: bootstrap, topic, guarantee, key, partition, markers, kafka.<property>)");
    }
    return Status::Ok();
  };
  if (Status s = kafka_params::ForEach(text, visit); !s.ok()) return Bad(text, s.message());
  if (spec.bootstrap.empty()) return Bad(text, "bootstrap=HOST:PORT is missing");
  if (spec.topic.empty()) return Bad(text, "topic=T is missing");
  if (spec.marker_topic == spec.topic) {
    return Bad(text, "markers must be another topic than the output topic");
  }
  if (auto it = spec.properties.find("transaction.timeout.ms"); it != spec.properties.end()) {
    int64_t ms = 0;
    if (!kafka_params::ParseInt64(it->second, &ms) || ms <= 0) {
      return Bad(text, "kafka.transaction.timeout.ms '" + it->second +
                           "' is not a positive number of milliseconds");
    }
  }
  return spec;
}

std::string KafkaSinkSpec::BootstrapServers() const {
  return kafka_params::JoinBootstrap(bootstrap);
}

int64_t KafkaSinkSpec::TransactionTimeoutMs() const {
  int64_t ms = kDefaultTransactionTimeoutMs;
  if (auto it = properties.find("transaction.timeout.ms"); it != properties.end()) {
    kafka_params::ParseInt64(it->second, &ms);
  }
  return ms;
}

int64_t KafkaSinkSpec::MessageMaxBytes() const {
  int64_t bytes = kDefaultMessageMaxBytes;
  if (auto it = properties.find("message.max.bytes"); it != properties.end()) {
    kafka_params::ParseInt64(it->second, &bytes);
  }
  return bytes;
}

Status KafkaSinkSpec::CheckAgainstCheckpointing(int64_t checkpoint_interval_ms) const {
  if (!exactly_once()) return Status::Ok();
  if (checkpoint_interval_ms <= 0) {
    return InvalidArgument(
        "--output kafka: with guarantee=exactly-once commits at checkpoints: set "
        "--checkpoint-interval (e.g. 1s), or write with guarantee=at-least-once");
  }
  const int64_t needed = checkpoint_interval_ms + kCommitAllowanceMs;
  if (TransactionTimeoutMs() < needed) {
    return InvalidArgument(
        "--output kafka: kafka.transaction.timeout.ms=" + std::to_string(TransactionTimeoutMs()) +
        " is shorter than the checkpoint interval (" + std::to_string(checkpoint_interval_ms) +
        " ms) plus " + std::to_string(kCommitAllowanceMs / 1000) +
        " s for the commit: the brokers could abort a transaction a completed checkpoint still "
        "has to commit; raise it to at least " +
        std::to_string(needed) + " (and the brokers' transaction.max.timeout.ms with it)");
  }
  return Status::Ok();
}

std::string KafkaSinkSpec::Redacted() const {
  std::string out(kPrefix);
  out += "bootstrap=";
  for (size_t i = 0; i < bootstrap.size(); ++i) out += (i ? ";" : "") + bootstrap[i];
  out += ",topic=" + topic;
  out += exactly_once() ? ",guarantee=exactly-once" : ",guarantee=at-least-once";
  if (!key_field.empty()) out += ",key=" + key_field;
  if (partition) out += ",partition=" + std::to_string(*partition);
  if (marker_topic != kDefaultMarkerTopic) out += ",markers=" + marker_topic;
  return out + kafka_params::RedactedProperties(properties);
}

}  // namespace keyflow
