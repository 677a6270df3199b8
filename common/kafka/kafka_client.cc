#include "common/kafka/kafka_client.h"

#include "common/logging/logging.h"

namespace keyflow {
namespace {

// librdkafka's own log lines (from its threads) go to keyflow's log at debug level: what
// matters (a broker that does not answer, a partition error) reaches the connectors as errors
// and they report it in their own words. Only critical ones (syslog levels 0-2) are warnings.
void ForwardLog(const rd_kafka_t* rk, int level, const char* facility, const char* message) {
  if (level <= 2) {
    KF_LOG_WARN("librdkafka {} {}: {}", rd_kafka_name(rk), facility, message);
  } else {
    KF_LOG_DEBUG("librdkafka {} {}: {}", rd_kafka_name(rk), facility, message);
  }
}

}  // namespace

void KafkaHandleDeleter::operator()(rd_kafka_t* rk) const {
  if (rd_kafka_type(rk) == RD_KAFKA_CONSUMER) rd_kafka_consumer_close(rk);
  rd_kafka_destroy(rk);
}

std::string KafkaPartitionName(const std::string& topic, int32_t partition) {
  return "topic " + topic + " partition " + std::to_string(partition);
}

std::string KafkaErrorText(rd_kafka_resp_err_t err) {
  return rd_kafka_err2str(err);
}

Status KafkaNoAnswer(const std::string& bootstrap_servers, Duration timeout,
                     const std::string& what, rd_kafka_resp_err_t err) {
  return Unavailable("the Kafka brokers " + bootstrap_servers + " did not answer " + what +
                     " within " + FormatDuration(timeout) + ": " + KafkaErrorText(err));
}

Result<KafkaHandle> NewKafkaClient(rd_kafka_type_t type, const KafkaSourceSpec& spec,
                                   const std::map<std::string, std::string>& own) {
  std::map<std::string, std::string> settings = own;
  if (type == RD_KAFKA_CONSUMER) settings.emplace("group.id", spec.group);
  return NewKafkaClient(type, spec.BootstrapServers(), spec.properties, settings);
}

Result<KafkaHandle> NewKafkaClient(rd_kafka_type_t type, const std::string& bootstrap_servers,
                                   const std::map<std::string, std::string>& properties,
                                   const std::map<std::string, std::string>& own,
                                   const std::function<void(rd_kafka_conf_t*)>& configure) {
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  char err[512];
  auto set = [&](const std::string& name, const std::string& value, bool user) -> Status {
    if (rd_kafka_conf_set(conf, name.c_str(), value.c_str(), err, sizeof err) == RD_KAFKA_CONF_OK) {
      return Status::Ok();
    }
    rd_kafka_conf_destroy(conf);
    // librdkafka's message quotes the value for some errors: not shown for a secret.
    const std::string why = KafkaSourceSpec::IsSecretProperty(name) ? "invalid value" : err;
    return InvalidArgument((user ? "kafka." : "Kafka client setting ") + name + ": " + why);
  };
  KF_RETURN_IF_ERROR(set("bootstrap.servers", bootstrap_servers, false));
  rd_kafka_conf_set_log_cb(conf, ForwardLog);
  for (const auto& [name, value] : properties) KF_RETURN_IF_ERROR(set(name, value, true));
  for (const auto& [name, value] : own) KF_RETURN_IF_ERROR(set(name, value, false));
  if (configure) configure(conf);
  rd_kafka_t* rk = rd_kafka_new(type, conf, err, sizeof err);
  if (rk == nullptr) {  // conf is still ours on failure
    rd_kafka_conf_destroy(conf);
    return InvalidArgument(std::string("cannot create a Kafka client: ") + err);
  }
  return KafkaHandle(rk);
}

}  // namespace keyflow
