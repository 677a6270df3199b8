#include "common/input/kafka_spec.h"

#include <charconv>
#include <set>

namespace keyflow {
namespace {

constexpr std::string_view kPropertyPrefix = "kafka.";
constexpr std::string_view kTimestampStart = "timestamp:";

// Properties keyflow sets itself: the source's behaviour depends on them.
const std::set<std::string, std::less<>>& OwnProperties() {
  static const std::set<std::string, std::less<>> kOwn = {
      "bootstrap.servers",    "group.id",
      "enable.auto.commit",   "auto.offset.reset",
      "enable.partition.eof", "enable.auto.offset.store"};
  return kOwn;
}

std::vector<std::string> SplitList(std::string_view text) {
  std::vector<std::string> out;
  size_t begin = 0;
  while (begin <= text.size()) {
    size_t end = text.find(';', begin);
    if (end == std::string_view::npos) end = text.size();
    out.emplace_back(text.substr(begin, end - begin));
    begin = end + 1;
  }
  return out;
}

Status Bad(std::string_view text, const std::string& why) {
  return InvalidArgument(
      "--input " +
      KafkaSourceSpec::RedactText(std::string(KafkaSourceSpec::kPrefix) + std::string(text)) +
      ": " + why);
}

bool ParseInt64(std::string_view text, int64_t* out) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size();
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
  std::set<std::string, std::less<>> seen;
  size_t begin = 0;
  while (begin < text.size()) {
    size_t end = text.find(',', begin);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view item = text.substr(begin, end - begin);
    begin = end + 1;
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos || eq == 0) {
      return Bad(text, "'" + std::string(item) + "' is not NAME=VALUE");
    }
    const std::string_view name = item.substr(0, eq);
    const std::string_view value = item.substr(eq + 1);
    if (!seen.insert(std::string(name)).second) {
      return Bad(text, "'" + std::string(name) + "' is given twice");
    }
    if (name.substr(0, kPropertyPrefix.size()) == kPropertyPrefix) {
      const std::string property(name.substr(kPropertyPrefix.size()));
      if (property.empty()) return Bad(text, "'kafka.' names no librdkafka property");
      if (OwnProperties().count(property) != 0) {
        return Bad(text, "the property '" + property +
                             "' is keyflow's own (use bootstrap= and group=; offsets are "
                             "checkpointed by keyflow)");
      }
      spec.properties[property] = std::string(value);
    } else if (name == "bootstrap") {
      spec.bootstrap = SplitList(value);
      for (const std::string& server : spec.bootstrap) {
        const size_t colon = server.rfind(':');
        int64_t port = 0;
        if (colon == std::string::npos || colon == 0 ||
            !ParseInt64(std::string_view(server).substr(colon + 1), &port) || port <= 0 ||
            port > 65535) {
          return Bad(text, "bootstrap server '" + server + "' is not HOST:PORT");
        }
      }
    } else if (name == "topic") {
      spec.topics = SplitList(value);
      for (const std::string& topic : spec.topics) {
        if (topic.empty()) return Bad(text, "a topic name is empty");
      }
    } else if (name == "group") {
      if (value.empty()) return Bad(text, "group is empty");
      spec.group = std::string(value);
    } else if (name == "start") {
      if (value == "earliest") {
        spec.start = Start::kEarliest;
      } else if (value == "latest") {
        spec.start = Start::kLatest;
      } else if (value == "committed") {
        spec.start = Start::kCommitted;
      } else if (value.substr(0, kTimestampStart.size()) == kTimestampStart &&
                 ParseInt64(value.substr(kTimestampStart.size()), &spec.start_timestamp_ms) &&
                 spec.start_timestamp_ms >= 0) {
        spec.start = Start::kTimestamp;
      } else {
        return Bad(text, "start '" + std::string(value) +
                             "' is none of earliest, latest, committed, timestamp:MS");
      }
    } else if (name == "stop") {
      if (value != "latest") {
        return Bad(text, "stop '" + std::string(value) + "' is not 'latest' (the only bound)");
      }
      spec.bounded = true;
    } else if (name == "idle" || name == "discovery") {
      Result<Duration> d = ParseDuration(value);
      if (!d.ok() || d->millis() <= 0) {
        return Bad(text, std::string(name) + " '" + std::string(value) +
                             "' is not a positive duration (e.g. 500ms, 10s, 1min)");
      }
      (name == "idle" ? spec.idle_timeout : spec.discovery_interval) = *d;
    } else {
      return Bad(text, "unknown parameter '" + std::string(name) +
                           "' (known: bootstrap, topic, group, start, stop, idle, discovery, "
                           "kafka.<property>)");
    }
  }
  if (spec.bootstrap.empty()) return Bad(text, "bootstrap=HOST:PORT is missing");
  if (spec.topics.empty()) return Bad(text, "topic=T is missing");
  return spec;
}

std::string KafkaSourceSpec::BootstrapServers() const {
  std::string out;
  for (const std::string& server : bootstrap) {
    if (!out.empty()) out += ',';
    out += server;
  }
  return out;
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
  out += ",topic=";
  for (size_t i = 0; i < topics.size(); ++i) out += (i ? ";" : "") + topics[i];
  out += ",group=" + group + ",start=" + std::string(KafkaStartName(start));
  if (start == Start::kTimestamp) out += ":" + std::to_string(start_timestamp_ms);
  if (bounded) out += ",stop=latest";
  if (idle_timeout.millis() > 0) out += ",idle=" + FormatDuration(idle_timeout);
  if (discovery_interval != kDefaultDiscoveryInterval) {
    out += ",discovery=" + FormatDuration(discovery_interval);
  }
  for (const auto& [name, value] : properties) {
    out += ",kafka." + name + "=" + (IsSecretProperty(name) ? std::string("***") : value);
  }
  return out;
}

}  // namespace keyflow
