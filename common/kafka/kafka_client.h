// The Kafka clients of keyflow's Kafka connectors (librdkafka), shared by the coordinator (which
// discovers partitions: partition_discovery.h) and the workers (which read them).
//
// This is the library keyflow::kafka (common/kafka/), apart from keyflow::common so that only
// the modules with a Kafka connector link librdkafka.
//
// A client gets the spec's bootstrap servers, its group and every kafka.<property>, plus the
// settings keyflow owns (`own`, e.g. enable.auto.commit=false). librdkafka refusing a property
// is an InvalidArgument that names it (never its value: it may be a secret).
//
// Threading: a handle may be used from any one thread at a time (librdkafka's own threads are
// its business).
#pragma once

#include <librdkafka/rdkafka.h>

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "common/duration.h"
#include "common/input/kafka_spec.h"
#include "common/status.h"

namespace keyflow {

struct KafkaHandleDeleter {
  void operator()(rd_kafka_t* rk) const;  // closes a consumer first, then destroys
};
using KafkaHandle = std::unique_ptr<rd_kafka_t, KafkaHandleDeleter>;

struct KafkaTopicPartitionListDeleter {
  void operator()(rd_kafka_topic_partition_list_t* list) const {
    rd_kafka_topic_partition_list_destroy(list);
  }
};
using KafkaPartitionList =
    std::unique_ptr<rd_kafka_topic_partition_list_t, KafkaTopicPartitionListDeleter>;

// A consumer (RD_KAFKA_CONSUMER) or producer client for `spec`. `own` settings go last and win.
Result<KafkaHandle> NewKafkaClient(rd_kafka_type_t type, const KafkaSourceSpec& spec,
                                   const std::map<std::string, std::string>& own);

// The same for any connector: `bootstrap_servers` ("HOST:PORT,..."), the user's kafka.<property>
// settings, then keyflow's `own`; `configure` may set callbacks and an opaque on the
// configuration before the client is made.
Result<KafkaHandle> NewKafkaClient(rd_kafka_type_t type, const std::string& bootstrap_servers,
                                   const std::map<std::string, std::string>& properties,
                                   const std::map<std::string, std::string>& own,
                                   const std::function<void(rd_kafka_conf_t*)>& configure = {});

// "topic events partition 2" — how messages name a partition.
std::string KafkaPartitionName(const std::string& topic, int32_t partition);

// librdkafka's text for `err`.
std::string KafkaErrorText(rd_kafka_resp_err_t err);

// "the Kafka brokers H:P,... did not answer WHAT within T: ERR": a request that timed out.
Status KafkaNoAnswer(const std::string& bootstrap_servers, Duration timeout,
                     const std::string& what, rd_kafka_resp_err_t err);

}  // namespace keyflow
