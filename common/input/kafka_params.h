// The NAME=VALUE grammar shared by the Kafka source's --input spec (kafka_spec.h) and the Kafka
// sink's --output spec (kafka_sink_spec.h): comma-separated parameters, ';'-separated lists,
// bootstrap servers as HOST:PORT, librdkafka properties as kafka.<property>=V.
//
// Pure functions; no threading concerns.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace keyflow::kafka_params {

inline constexpr std::string_view kPropertyPrefix = "kafka.";

// "a;b;c" -> {"a", "b", "c"}; "" -> {""}.
std::vector<std::string> SplitList(std::string_view text);

// Whole-string decimal int64.
bool ParseInt64(std::string_view text, int64_t* out);

// Calls `visit(name, value)` for each comma-separated NAME=VALUE of `text`, in order. Returns
// the sentence of the first problem (`why` only; the caller names the flag): an item without
// '=', a name given twice, or the first error of `visit`.
Status ForEach(std::string_view text,
               const std::function<Status(std::string_view name, std::string_view value)>& visit);

// Parses bootstrap=VALUE into HOST:PORT entries; InvalidArgument "bootstrap server 'x' is not
// HOST:PORT".
Result<std::vector<std::string>> ParseBootstrap(std::string_view value);

// "HOST:PORT,HOST:PORT": librdkafka's bootstrap.servers.
std::string JoinBootstrap(const std::vector<std::string>& servers);

// A kafka.<property>=V item into *properties; refuses an empty name and a name in `own` (with
// `own_hint` after the sentence).
Status AddProperty(std::string_view name, std::string_view value,
                   const std::set<std::string, std::less<>>& own, std::string_view own_hint,
                   std::map<std::string, std::string>* properties);

// ",kafka.P=V" for each property, secrets as "***" (KafkaSourceSpec::IsSecretProperty).
std::string RedactedProperties(const std::map<std::string, std::string>& properties);

}  // namespace keyflow::kafka_params
