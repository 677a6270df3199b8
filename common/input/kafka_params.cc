#include "common/input/kafka_params.h"

#include <charconv>

#include "common/input/kafka_spec.h"

namespace keyflow::kafka_params {

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

bool ParseInt64(std::string_view text, int64_t* out) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size();
}

Status ForEach(std::string_view text,
               const std::function<Status(std::string_view name, std::string_view value)>& visit) {
  std::set<std::string, std::less<>> seen;
  size_t begin = 0;
  while (begin < text.size()) {
    size_t end = text.find(',', begin);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view item = text.substr(begin, end - begin);
    begin = end + 1;
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos || eq == 0) {
      return InvalidArgument("'" + std::string(item) + "' is not NAME=VALUE");
    }
    const std::string_view name = item.substr(0, eq);
    if (!seen.insert(std::string(name)).second) {
      return InvalidArgument("'" + std::string(name) + "' is given twice");
    }
    KF_RETURN_IF_ERROR(visit(name, item.substr(eq + 1)));
  }
  return Status::Ok();
}

Result<std::vector<std::string>> ParseBootstrap(std::string_view value) {
  std::vector<std::string> servers = SplitList(value);
  for (const std::string& server : servers) {
    const size_t colon = server.rfind(':');
    int64_t port = 0;
    if (colon == std::string::npos || colon == 0 ||
        !ParseInt64(std::string_view(server).substr(colon + 1), &port) || port <= 0 ||
        port > 65535) {
      return InvalidArgument("bootstrap server '" + server + "' is not HOST:PORT");
    }
  }
  return servers;
}

std::string JoinBootstrap(const std::vector<std::string>& servers) {
  std::string out;
  for (const std::string& server : servers) {
    if (!out.empty()) out += ',';
    out += server;
  }
  return out;
}

Status AddProperty(std::string_view name, std::string_view value,
                   const std::set<std::string, std::less<>>& own, std::string_view own_hint,
                   std::map<std::string, std::string>* properties) {
  const std::string property(name.substr(kPropertyPrefix.size()));
  if (property.empty()) return InvalidArgument("'kafka.' names no librdkafka property");
  if (own.count(property) != 0) {
    return InvalidArgument("the property '" + property + "' is keyflow's own (" +
                           std::string(own_hint) + ")");
  }
  (*properties)[property] = std::string(value);
  return Status::Ok();
}

std::string RedactedProperties(const std::map<std::string, std::string>& properties) {
  std::string out;
  for (const auto& [name, value] : properties) {
    out += ",kafka." + name + "=" +
           (KafkaSourceSpec::IsSecretProperty(name) ? std::string("***") : value);
  }
  return out;
}

}  // namespace keyflow::kafka_params
