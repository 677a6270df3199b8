#include "common/input/kafka_spec.h"

#include <algorithm>
#include <regex>
#include <set>

#include "common/input/kafka_params.h"

namespace keyflow {
namespace {

using kafka_params::kPropertyPrefix;
constexpr std::string_view kTimestampStart = "timestamp:";

// Properties keyflow sets itself: the source's behaviour depends on them.
const std::set<std::string, std::less<>>& OwnProperties() {
  static const std::set<std::string, std::less<>> kOwn = {
      "bootstrap.servers",    "group.id",
      "enable.auto.commit",   "auto.offset.reset",
      "enable.partition.eof", "enable.auto.offset.store"};
  return kOwn;
}

Status Bad(std::string_view text, const std::string& why) {
  return InvalidArgument(
      "--input " +
      KafkaSourceSpec::RedactText(std::string(KafkaSourceSpec::kPrefix) + std::string(text)) +
      ": " + why);
}

}  // namespace

std::string_view KafkaStartName(KafkaSourceSpec::Start start) {
  switch (start) {
    case KafkaSourceSpec::Start::kEarliest:
      return "earliest";
    case KafkaSourceSpec::Start::kLatest:
      return "latest";
    case KafkaSourceSpec::Start::kCommitted:
      return "committed";
    case KafkaSourceSpec::Start::kTimestamp:
      return "timestamp";
  }
  return "?";
}

Result<KafkaSourceSpec> KafkaSourceSpec::Parse(std::string_view text) {
  if (text.substr(0, kPrefix.size()) == kPrefix) text.remove_prefix(kPrefix.size());
  KafkaSourceSpec spec;
  auto visit = [&](std::string_view name, std::string_view value) -> Status {
    if (name.substr(0, kPropertyPrefix.size()) == kPropertyPrefix) {
      return kafka_params::AddProperty(
          name, value, OwnProperties(),
          "use bootstrap= and group=; offsets are checkpointed by keyflow", &spec.properties);
    } else if (name == "bootstrap") {
      KF_ASSIGN_OR_RETURN(spec.bootstrap, kafka_params::ParseBootstrap(value));
    } else if (name == "topic") {
      spec.topics = kafka_params::SplitList(value);
      for (const std::string& topic : spec.topics) {
        if (topic.empty()) return InvalidArgument("a topic name is empty");
      }
    } else if (name == "pattern") {
      if (value.empty()) return InvalidArgument("pattern is empty");
      try {
        std::regex compiled{std::string(value)};
      } catch (const std::regex_error& e) {
        return InvalidArgument("pattern '" + std::string(value) +
                               "' is not a regular expression (ECMAScript): " + e.what());
      }
      spec.topic_pattern = std::string(value);
    } else if (name == "ts") {
      if (value.empty()) return InvalidArgument("ts is empty (a field name, or kafka)");
      if (value == "kafka") {
        spec.kafka_timestamp = true;
      } else {
        spec.timestamp_field = std::string(value);
      }
    } else if (name == "group") {
      if (value.empty()) return InvalidArgument("group is empty");
      spec.group = std::string(value);
    } else if (name == "start") {
      if (value == "earliest") {
        spec.start = Start::kEarliest;
      } else if (value == "latest") {
        spec.start = Start::kLatest;
      } else if (value == "committed") {
        spec.start = Start::kCommitted;
      } else if (value.substr(0, kTimestampStart.size()) == kTimestampStart &&
                 kafka_params::ParseInt64(value.substr(kTimestampStart.size()),
                                          &spec.start_timestamp_ms) &&
                 spec.start_timestamp_ms >= 0) {
        spec.start = Start::kTimestamp;
      } else {
        return InvalidArgument("start '" + std::string(value) +
                               "' is none of earliest, latest, committed, timestamp:MS");
      }
    } else if (name == "stop") {
      if (value != "latest") {
        return InvalidArgument("stop '" + std::string(value) +
                               "' is not 'latest' (the only bound)");
      }
      spec.bounded = true;
    } else if (name == "idle" || name == "discovery") {
      Result<Duration> d = ParseDuration(value);
      if (!d.ok() || d->millis() <= 0) {
        return InvalidArgument(std::string(name) + " '" + std::string(value) +
                               "' is not a positive duration (e.g. 500ms, 10s, 1min)");
      }
      (name == "idle" ? spec.idle_timeout : spec.discovery_interval) = *d;
    } else {
      return InvalidArgument("unknown parameter '" + std::string(name) +
                             "' (known: bootstrap, topic, pattern, group, start, stop, ts, "
                             "idle, discovery, kafka.<property>)");
    }
    return Status::Ok();
  };
  if (Status s = kafka_params::ForEach(text, visit); !s.ok()) return Bad(text, s.message());
  if (spec.bootstrap.empty()) return Bad(text, "bootstrap=HOST:PORT is missing");
  if (spec.topics.empty() && spec.topic_pattern.empty()) {
    return Bad(text, "topic=T (or pattern=REGEX) is missing");
  }
  if (!spec.topics.empty() && !spec.topic_pattern.empty()) {
    return Bad(text, "topic= and pattern= exclude each other: give one");
  }
  return spec;
}

Status KafkaSourceSpec::CheckAgainstKeyField(std::string_view key_field) const {
  if (timestamp_field.empty() || timestamp_field != key_field) return Status::Ok();
  return InvalidArgument("--input " + Redacted() + ": ts=" + timestamp_field +
                         " is the key field too: name the field that holds the event time, "
                         "or use ts=kafka for the Kafka timestamp");
}

bool KafkaSourceSpec::ReadsTopic(std::string_view topic) const {
  if (topic_pattern.empty()) {
    return std::find(topics.begin(), topics.end(), topic) != topics.end();
  }
  if (topic.substr(0, 2) == "__") return false;  // Kafka's own (__consumer_offsets, ...)
  return std::regex_match(topic.begin(), topic.end(), std::regex(topic_pattern));
}

std::string KafkaSourceSpec::TopicsText() const {
  if (!topic_pattern.empty()) return "topics matching /" + topic_pattern + "/";
  std::string out = topics.size() == 1 ? "topic " : "topics ";
  for (size_t i = 0; i < topics.size(); ++i) out += (i ? ", " : "") + topics[i];
  return out;
}

std::string KafkaSourceSpec::BootstrapServers() const {
  return kafka_params::JoinBootstrap(bootstrap);
}

bool KafkaSourceSpec::IsSecretProperty(std::string_view name) {
  auto ends_with = [&](std::string_view suffix) {
    return name.size() >= suffix.size() && name.substr(name.size() - suffix.size()) == suffix;
  };
  return name.find("password") != std::string_view::npos ||
         name.find("secret") != std::string_view::npos || ends_with(".key") ||
         ends_with(".key.pem") || name.find("jaas") != std::string_view::npos;
}

std::string KafkaSourceSpec::RedactText(std::string_view text) {
  std::string out;
  size_t begin = 0;
  while (begin <= text.size()) {
    size_t end = text.find(',', begin);
    if (end == std::string_view::npos) end = text.size();
    std::string_view item = text.substr(begin, end - begin);
    if (begin > 0) out += ',';
    // The first item may carry the "kafka:" prefix.
    std::string_view name_part = item;
    if (begin == 0 && name_part.substr(0, kPrefix.size()) == kPrefix) {
      name_part.remove_prefix(kPrefix.size());
    }
    const size_t eq = name_part.find('=');
    if (eq != std::string_view::npos &&
        name_part.substr(0, kPropertyPrefix.size()) == kPropertyPrefix &&
        IsSecretProperty(name_part.substr(kPropertyPrefix.size(), eq - kPropertyPrefix.size()))) {
      out += item.substr(0, item.size() - (name_part.size() - eq - 1));
      out += "***";
    } else {
      out += item;
    }
    begin = end + 1;
  }
  return out;
}

std::string KafkaSourceSpec::Redacted() const {
  std::string out(kPrefix);
  out += "bootstrap=";
  for (size_t i = 0; i < bootstrap.size(); ++i) out += (i ? ";" : "") + bootstrap[i];
  if (topic_pattern.empty()) {
    out += ",topic=";
    for (size_t i = 0; i < topics.size(); ++i) out += (i ? ";" : "") + topics[i];
  } else {
    out += ",pattern=" + topic_pattern;
  }
  out += ",group=" + group + ",start=" + std::string(KafkaStartName(start));
  if (start == Start::kTimestamp) out += ":" + std::to_string(start_timestamp_ms);
  if (bounded) out += ",stop=latest";
  if (kafka_timestamp) out += ",ts=kafka";
  if (!timestamp_field.empty()) out += ",ts=" + timestamp_field;
  if (idle_timeout.millis() > 0) out += ",idle=" + FormatDuration(idle_timeout);
  if (discovery_interval != kDefaultDiscoveryInterval) {
    out += ",discovery=" + FormatDuration(discovery_interval);
  }
  return out + kafka_params::RedactedProperties(properties);
}

}  // namespace keyflow
