#include "worker/connectors/kafka/kafka_sink.h"

#include <simdjson.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <utility>

#include "common/hashing.h"
#include "common/logging/logging.h"

namespace keyflow {
namespace {

constexpr uint8_t kCommittableVersion = 1;
constexpr int kInitTimeoutMs = 30'000;
constexpr int kCommitTimeoutMs = 60'000;
constexpr int kMarkerTimeoutMs = 15'000;
constexpr int kFlushTimeoutMs = 60'000;
constexpr int kMaxCommitAttempts = 5;

std::string Where(const KafkaSinkSpec& spec) {
  return "Kafka topic " + spec.topic;
}

// librdkafka's error object, owned.
struct KafkaErrorDeleter {
  void operator()(rd_kafka_error_t* e) const { rd_kafka_error_destroy(e); }
};
using KafkaError = std::unique_ptr<rd_kafka_error_t, KafkaErrorDeleter>;

Status ErrorStatus(const std::string& what, const rd_kafka_error_t* e) {
  std::string text = what + ": " + rd_kafka_error_string(e);
  if (rd_kafka_error_is_fatal(e)) {
    return FailedPrecondition(text +
                              " (fatal: the producer was fenced by a newer attempt or "
                              "is unusable)");
  }
  return Unavailable(text);
}

// Fault injection for crash drills: KEYFLOW_CRASH_AT=<step> kills the worker with SIGKILL when
// the sink reaches the step, as `kill -9` at that instant would (worker/README.md).
void CrashPoint(std::string_view step) {
  const char* at = std::getenv("KEYFLOW_CRASH_AT");
  if (at == nullptr || step != at) return;
  std::fprintf(stderr,
               "keyflow-worker: crash point %s reached (KEYFLOW_CRASH_AT): killing this "
               "process\n",
               at);
  std::fflush(stderr);
  ::raise(SIGKILL);
}

// Produces `r` to the spec's topic, waiting while librdkafka's queue is full.
Status Produce(rd_kafka_t* rk, const KafkaSinkSpec& spec, const KafkaSinkRecord& r) {
  const int32_t partition = spec.partition ? *spec.partition : RD_KAFKA_PARTITION_UA;
  const void* key = r.key ? r.key->data() : nullptr;
  const size_t key_size = r.key ? r.key->size() : 0;
  for (;;) {
    const rd_kafka_resp_err_t err =
        rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(spec.topic.c_str()), RD_KAFKA_V_PARTITION(partition),
                          RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_KEY(key, key_size),
                          RD_KAFKA_V_VALUE(const_cast<char*>(r.value.data()), r.value.size()),
                          RD_KAFKA_V_TIMESTAMP(r.timestamp_ms.value_or(0)), RD_KAFKA_V_END);
    if (err == RD_KAFKA_RESP_ERR_NO_ERROR) return Status::Ok();
    if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL) {
      return Unavailable("producing to " + Where(spec) + ": " + KafkaErrorText(err));
    }
    rd_kafka_poll(rk, 10);
  }
}

// Producer settings keyflow owns: Kafka's default (murmur2) partitioner unless the user chose.
std::map<std::string, std::string> ProducerSettings(const KafkaSinkSpec& spec) {
  std::map<std::string, std::string> own{{"enable.idempotence", "true"}};
  if (spec.properties.count("partitioner") == 0) own["partitioner"] = "murmur2_random";
  if (spec.properties.count("transaction.timeout.ms") == 0) {
    own["transaction.timeout.ms"] = std::to_string(KafkaSinkSpec::kDefaultTransactionTimeoutMs);
  }
  return own;
}

// The value of the top-level member `field` of the JSON object `line`: a string's text,
// anything else as its JSON; none if the line has no such member or is not an object.
class KeyExtractor {
 public:
  explicit KeyExtractor(std::string field) : field_(std::move(field)) {}
  std::optional<std::string> KeyOf(std::string_view line) {
    padded_.assign(line);
    padded_.resize(line.size() + simdjson::SIMDJSON_PADDING);
    simdjson::ondemand::document doc;
    if (parser_.iterate(padded_.data(), line.size(), padded_.size()).get(doc)) return std::nullopt;
    simdjson::ondemand::object object;
    if (doc.get_object().get(object)) return std::nullopt;
    for (auto member : object) {
      std::string_view name;
      if (member.unescaped_key().get(name) || name != field_) continue;
      simdjson::ondemand::value value;
      if (member.value().get(value)) return std::nullopt;
      std::string_view text;
      if (value.type() == simdjson::ondemand::json_type::string) {
        if (value.get_string().get(text)) return std::nullopt;
        return std::string(text);
      }
      text = value.raw_json_token();
      while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
      return std::string(text);
    }
    return std::nullopt;
  }

 private:
  std::string field_;
  std::string padded_;
  simdjson::ondemand::parser parser_;
};

// InvalidArgument when `r` is larger than the producer accepts: refused when written, before it
// enters a checkpoint, so that no checkpoint holds output that can never be committed.
Status CheckRecordSize(const KafkaSinkSpec& spec, const KafkaSinkRecord& r) {
  // librdkafka counts a record as key + value + the most its v2 framing may take (length,
  // attributes, timestamp and offset deltas, key/value lengths, header count as varints).
  constexpr size_t kRecordOverheadBytes = 5 + 1 + 10 + 5 + 5 + 5 + 5;
  const int64_t bytes = static_cast<int64_t>(r.value.size() + (r.key ? r.key->size() : size_t{0}) +
                                             kRecordOverheadBytes);
  if (bytes <= spec.MessageMaxBytes()) return Status::Ok();
  return InvalidArgument("an output record of " + std::to_string(bytes) +
                         " bytes (key, value and 36 bytes of framing) is larger than the " +
                         std::to_string(spec.MessageMaxBytes()) + " bytes a Kafka record to " +
                         Where(spec) +
                         " may have (kafka.message.max.bytes; the topic's max.message.bytes "
                         "must allow it too): the job cannot write it");
}

KafkaSinkRecord ToKafkaRecord(const OutputRecord& record, std::optional<KeyExtractor>& keys) {
  KafkaSinkRecord r;
  if (keys) r.key = keys->KeyOf(record.line);
  r.value = record.line;
  // The final watermark (records emitted at the end of input) is no time a Kafka record can
  // carry: those get none (the broker's), as do negative times.
  if (record.timestamp && record.timestamp->millis() >= 0 && *record.timestamp != kMaxWatermark) {
    r.timestamp_ms = record.timestamp->millis();
  }
  return r;
}

size_t RecordBytes(const KafkaSinkRecord& r) {
  return r.value.size() + (r.key ? r.key->size() : 0) + 16;
}

class ExactlyOnceKafkaSink final : public SinkWriter {
 public:
  ExactlyOnceKafkaSink(KafkaSinkSpec spec, KafkaSinkContext context,
                       std::unique_ptr<KafkaTransactionalCommitter> committer)
      : spec_(std::move(spec)), context_(std::move(context)), committer_(std::move(committer)) {
    if (!spec_.key_field.empty()) keys_.emplace(spec_.key_field);
  }

  Status Write(const OutputRecord& record) override {
    KafkaSinkRecord r = ToKafkaRecord(record, keys_);
    KF_RETURN_IF_ERROR(CheckRecordSize(spec_, r));
    buffered_bytes_ += RecordBytes(r);
    if (buffered_bytes_ > kMaxKafkaSinkPendingBytes) {
      return OutOfRange(
          "the exactly-once Kafka sink to " + Where(spec_) +
          " holds a checkpoint interval's "
          "output in the checkpoint, at most " +
          std::to_string(kMaxKafkaSinkPendingBytes >> 20) + " MiB per subtask, and subtask " +
          std::to_string(context_.subtask) +
          " wrote more: shorten --checkpoint-interval or use guarantee=at-least-once");
    }
    buffer_.push_back(std::move(r));
    return Status::Ok();
  }

  Result<std::unique_ptr<SinkPreCommitSync>> PrepareCommit(CheckpointId id) override {
    if (!buffer_.empty()) {
      KafkaSinkCommittable c;
      c.job_id = context_.job_id;
      c.writer = context_.subtask;
      c.checkpoint = id;
      c.records = std::move(buffer_);
      pending_.push_back(std::move(c));
      buffer_.clear();
      buffered_bytes_ = 0;
    }
    last_prepared_ = id;
    // Durable with the checkpoint itself: nothing to sync.
    return std::unique_ptr<SinkPreCommitSync>();
  }

  std::vector<std::string> PendingCommittables() const override {
    std::vector<std::string> out;
    out.reserve(pending_.size());
    for (const KafkaSinkCommittable& c : pending_) out.push_back(c.Encode());
    return out;
  }

  Status NotifyCheckpointComplete(CheckpointId id) override {
    while (!pending_.empty() && pending_.front().checkpoint <= id) {
      CrashPoint("kafka-sink-before-commit");
      const auto start = std::chrono::steady_clock::now();
      KF_RETURN_IF_ERROR(committer_->Commit(pending_.front()));
      KF_LOG_DEBUG("kafka sink committed subtask={} checkpoint={} records={} ms={}",
                   context_.subtask, pending_.front().checkpoint.value(),
                   pending_.front().records.size(),
                   std::chrono::duration_cast<std::chrono::milliseconds>(
                       std::chrono::steady_clock::now() - start)
                       .count());
      CrashPoint("kafka-sink-after-commit");
      pending_.erase(pending_.begin());
    }
    return Status::Ok();
  }

  Status FinishAndCommit() override {
    // Without checkpoints (refused at submit) the tail would have no checkpoint to wait for.
    KF_RETURN_IF_ERROR(PrepareCommit(CheckpointId(last_prepared_.value() + 1)).status());
    KF_RETURN_IF_ERROR(NotifyCheckpointComplete(last_prepared_));
    KF_LOG_INFO("kafka sink committed subtask={} topic={} records={}", context_.subtask,
                spec_.topic, committer_->records_committed());
    return Status::Ok();
  }

 private:
  KafkaSinkSpec spec_;
  KafkaSinkContext context_;
  std::unique_ptr<KafkaTransactionalCommitter> committer_;
  std::optional<KeyExtractor> keys_;
  std::vector<KafkaSinkRecord> buffer_;
  size_t buffered_bytes_ = 0;
  std::vector<KafkaSinkCommittable> pending_;
  CheckpointId last_prepared_{0};
};

// Delivery failures of the at-least-once producer, from librdkafka's delivery report callback
// (served by rd_kafka_poll/flush on the calling thread).
struct DeliveryState {
  std::atomic<uint64_t> failed{0};
  std::atomic<rd_kafka_resp_err_t> first_error{RD_KAFKA_RESP_ERR_NO_ERROR};
};

void OnDelivery(rd_kafka_t*, const rd_kafka_message_t* m, void* opaque) {
  if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) return;
  auto* state = static_cast<DeliveryState*>(opaque);
  rd_kafka_resp_err_t none = RD_KAFKA_RESP_ERR_NO_ERROR;
  state->first_error.compare_exchange_strong(none, m->err);
  state->failed.fetch_add(1);
}

// Shares the producer and its delivery state with the writer: it may run after the writer is
// gone (a task torn down while its checkpoint's sync was still queued).
class FlushSync final : public SinkPreCommitSync {
 public:
  FlushSync(std::shared_ptr<rd_kafka_t> rk, std::shared_ptr<const DeliveryState> state,
            std::string where)
      : rk_(std::move(rk)), state_(std::move(state)), where_(std::move(where)) {}
  Status Run() override {
    const rd_kafka_resp_err_t err = rd_kafka_flush(rk_.get(), kFlushTimeoutMs);
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      return Unavailable("flushing to " + where_ +
                         " at the checkpoint barrier: " + KafkaErrorText(err));
    }
    if (state_->failed.load() > 0) {
      return Unavailable(std::to_string(state_->failed.load()) + " record(s) to " + where_ +
                         " were not delivered: " + KafkaErrorText(state_->first_error.load()));
    }
    return Status::Ok();
  }

 private:
  std::shared_ptr<rd_kafka_t> rk_;
  std::shared_ptr<const DeliveryState> state_;
  std::string where_;
};

class AtLeastOnceKafkaSink final : public SinkWriter {
 public:
  // `producer` reports deliveries to `state` (its opaque): the producer goes first.
  AtLeastOnceKafkaSink(KafkaSinkSpec spec, std::shared_ptr<DeliveryState> state,
                       KafkaHandle producer)
      : spec_(std::move(spec)),
        state_(std::move(state)),
        producer_(producer.release(),
                  [state = state_](rd_kafka_t* rk) { KafkaHandleDeleter()(rk); }) {
    if (!spec_.key_field.empty()) keys_.emplace(spec_.key_field);
  }

  Status Write(const OutputRecord& record) override {
    KafkaSinkRecord r = ToKafkaRecord(record, keys_);
    KF_RETURN_IF_ERROR(CheckRecordSize(spec_, r));
    KF_RETURN_IF_ERROR(Produce(producer_.get(), spec_, r));
    if (++since_poll_ >= 1024) {
      since_poll_ = 0;
      rd_kafka_poll(producer_.get(), 0);
      KF_RETURN_IF_ERROR(Failures());
    }
    return Status::Ok();
  }
  Status Flush() override {
    rd_kafka_poll(producer_.get(), 0);
    return Failures();
  }
  Result<std::unique_ptr<SinkPreCommitSync>> PrepareCommit(CheckpointId) override {
    return std::unique_ptr<SinkPreCommitSync>(
        std::make_unique<FlushSync>(producer_, state_, Where(spec_)));
  }
  std::vector<std::string> PendingCommittables() const override { return {}; }
  Status NotifyCheckpointComplete(CheckpointId) override { return Status::Ok(); }
  Status FinishAndCommit() override { return FlushSync(producer_, state_, Where(spec_)).Run(); }

 private:
  Status Failures() const {
    if (state_->failed.load() == 0) return Status::Ok();
    return Unavailable("records to " + Where(spec_) +
                       " were not delivered: " + KafkaErrorText(state_->first_error.load()));
  }

  KafkaSinkSpec spec_;
  std::shared_ptr<DeliveryState> state_;
  std::shared_ptr<rd_kafka_t> producer_;  // its deleter keeps state_ alive until it is destroyed
  std::optional<KeyExtractor> keys_;
  int since_poll_ = 0;
};

}  // namespace

std::string KafkaSinkCommittable::TransactionalId(const std::string& job_id, int32_t writer) {
  return "keyflow-" + job_id + "-w" + std::to_string(writer);
}

std::string KafkaSinkCommittable::HintGroup(const std::string& job_id, int32_t writer) {
  return "keyflow-sink-" + job_id + "-w" + std::to_string(writer);
}

std::string KafkaSinkCommittable::Encode() const {
  std::string out;
  BinaryWriter w(&out);
  w.U8(kCommittableVersion);
  w.Bytes(job_id);
  w.VarU64(static_cast<uint64_t>(writer));
  w.I64(checkpoint.value());
  w.VarU64(records.size());
  for (const KafkaSinkRecord& r : records) {
    w.U8(static_cast<uint8_t>((r.key ? 1 : 0) | (r.timestamp_ms ? 2 : 0)));
    if (r.key) w.Bytes(*r.key);
    w.Bytes(r.value);
    if (r.timestamp_ms) w.I64(*r.timestamp_ms);
  }
  w.U64(Checksum64(out));
  return out;
}

Result<KafkaSinkCommittable> KafkaSinkCommittable::Decode(std::string_view bytes) {
  const std::string what = "a Kafka sink committable in the checkpoint";
  if (bytes.size() < 9) return Corruption(what + " is truncated");
  const std::string_view body = bytes.substr(0, bytes.size() - 8);
  BinaryReader tail(bytes.substr(bytes.size() - 8));
  if (tail.U64() != Checksum64(body)) return Corruption(what + " fails its checksum");
  BinaryReader r(body);
  if (const uint8_t v = r.U8(); v != kCommittableVersion) {
    return Corruption(what + " has version " + std::to_string(v) + ", not " +
                      std::to_string(kCommittableVersion) + " (written by another keyflow?)");
  }
  KafkaSinkCommittable c;
  c.job_id = std::string(r.Bytes());
  const uint64_t writer = r.VarU64();
  c.writer = static_cast<int32_t>(writer);
  c.checkpoint = CheckpointId(r.I64());
  const uint64_t n = r.Count(2);
  c.records.reserve(n);
  for (uint64_t i = 0; i < n && r.ok(); ++i) {
    KafkaSinkRecord rec;
    const uint8_t flags = r.U8();
    if (flags & 1) rec.key = std::string(r.Bytes());
    rec.value = std::string(r.Bytes());
    if (flags & 2) rec.timestamp_ms = r.I64();
    c.records.push_back(std::move(rec));
  }
  KF_RETURN_IF_ERROR(r.status(what));
  if (!r.at_end()) return Corruption(what + " has trailing bytes");
  if (writer > INT32_MAX || c.checkpoint.value() <= 0 || c.job_id.empty()) {
    return Corruption(what + " names no valid job, writer or checkpoint");
  }
  return c;
}

Result<std::unique_ptr<KafkaTransactionalCommitter>> KafkaTransactionalCommitter::Open(
    const KafkaSinkSpec& spec, const std::string& job_id, int32_t writer) {
  std::unique_ptr<KafkaTransactionalCommitter> c(new KafkaTransactionalCommitter(spec));
  c->transactional_id_ = KafkaSinkCommittable::TransactionalId(job_id, writer);
  std::map<std::string, std::string> own = ProducerSettings(spec);
  own["transactional.id"] = c->transactional_id_;
  KafkaTransactionalCommitter* self = c.get();
  KF_ASSIGN_OR_RETURN(
      c->producer_, NewKafkaClient(RD_KAFKA_PRODUCER, spec.BootstrapServers(), spec.properties, own,
                                   [self](rd_kafka_conf_t* conf) {
                                     rd_kafka_conf_set_dr_msg_cb(conf, OnDelivery);
                                     rd_kafka_conf_set_opaque(conf, self);
                                   }));
  if (KafkaError e{rd_kafka_init_transactions(c->producer_.get(), kInitTimeoutMs)}) {
    return ErrorStatus(
        "starting the transactional producer " + c->transactional_id_ + " of " + Where(spec),
        e.get());
  }
  KF_ASSIGN_OR_RETURN(c->hint_consumer_,
                      NewKafkaClient(RD_KAFKA_CONSUMER, spec.BootstrapServers(), spec.properties,
                                     {{"group.id", KafkaSinkCommittable::HintGroup(job_id, writer)},
                                      {"enable.auto.commit", "false"},
                                      {"isolation.level", "read_committed"}}));
  // After the fence: a commit of an earlier attempt is either visible now or never will be.
  KF_RETURN_IF_ERROR(c->LookUpLastMarker());
  return c;
}

void KafkaTransactionalCommitter::OnDelivery(rd_kafka_t*, const rd_kafka_message_t* m,
                                             void* opaque) {
  // Only the marker is produced with a message opaque (the committer itself).
  if (m->_private == nullptr || m->err != RD_KAFKA_RESP_ERR_NO_ERROR) return;
  static_cast<KafkaTransactionalCommitter*>(opaque)->marker_offset_ = m->offset;
}

Status KafkaTransactionalCommitter::LookUpLastMarker() {
  rd_kafka_t* consumer = hint_consumer_.get();
  const std::string& topic = spec_.marker_topic;
  const std::string what = "looking up the last commit marker of " + transactional_id_ +
                           " in Kafka topic " + topic + " partition 0";
  KafkaPartitionList list(rd_kafka_topic_partition_list_new(1));
  rd_kafka_topic_partition_list_add(list.get(), topic.c_str(), 0);
  if (const rd_kafka_resp_err_t err = rd_kafka_committed(consumer, list.get(), kMarkerTimeoutMs);
      err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return Unavailable(what + ": reading the hint: " + KafkaErrorText(err));
  }
  const int64_t hint = list->elems[0].offset;  // < 0: none
  int64_t low = 0;
  int64_t high = 0;
  if (const rd_kafka_resp_err_t err = rd_kafka_query_watermark_offsets(
          consumer, topic.c_str(), 0, &low, &high, kMarkerTimeoutMs);
      err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return Unavailable(what + ": " + KafkaErrorText(err));
  }
  const int64_t from = std::max(hint, low);
  if (from >= high) return Status::Ok();
  list->elems[0].offset = from;
  if (const rd_kafka_resp_err_t err = rd_kafka_assign(consumer, list.get());
      err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return Unavailable(what + ": " + KafkaErrorText(err));
  }
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(kMarkerTimeoutMs);
  int64_t next = from;
  uint64_t scanned = 0;
  while (next < high) {
    if (std::chrono::steady_clock::now() > deadline) {
      rd_kafka_assign(consumer, nullptr);
      return Unavailable(what + ": read up to offset " + std::to_string(next) + " of " +
                         std::to_string(high) + " in " + std::to_string(kMarkerTimeoutMs / 1000) +
                         " s (is another producer's transaction open there?)");
    }
    rd_kafka_message_t* m = rd_kafka_consumer_poll(consumer, 100);
    if (m == nullptr) {
      // Control records (transaction markers) take offsets but are not delivered.
      rd_kafka_position(consumer, list.get());
      if (list->elems[0].offset >= 0) next = std::max(next, list->elems[0].offset);
      continue;
    }
    std::unique_ptr<rd_kafka_message_t, void (*)(rd_kafka_message_t*)> owned(
        m, rd_kafka_message_destroy);
    if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) continue;
    if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      rd_kafka_assign(consumer, nullptr);
      return Unavailable(what + ": " + rd_kafka_message_errstr(m));
    }
    next = m->offset + 1;
    ++scanned;
    const std::string_view key(static_cast<const char*>(m->key),
                               m->key == nullptr ? 0 : m->key_len);
    if (key != transactional_id_) continue;
    int64_t checkpoint = 0;
    const std::string_view value(static_cast<const char*>(m->payload), m->len);
    if (std::from_chars(value.data(), value.data() + value.size(), checkpoint).ec != std::errc() ||
        checkpoint <= 0) {
      rd_kafka_assign(consumer, nullptr);
      return Corruption(what + ": the marker at offset " + std::to_string(m->offset) + " holds '" +
                        std::string(value.substr(0, 40)) + "', not a checkpoint id");
    }
    if (CheckpointId(checkpoint) > last_committed_) {
      last_committed_ = CheckpointId(checkpoint);
      marker_offset_ = m->offset;
    }
  }
  rd_kafka_assign(consumer, nullptr);
  KF_LOG_DEBUG("kafka sink marker lookup txn={} from={} to={} scanned={} last={}",
               transactional_id_, from, high, scanned, last_committed_.value());
  return Status::Ok();
}

Status KafkaTransactionalCommitter::Commit(const KafkaSinkCommittable& c) {
  if (c.checkpoint <= last_committed_) return Status::Ok();
  Status last;
  for (int attempt = 1; attempt <= kMaxCommitAttempts; ++attempt) {
    last = CommitOnce(c);
    if (last.ok()) {
      last_committed_ = c.checkpoint;
      records_committed_ += c.records.size();
      CommitHint();
      return Status::Ok();
    }
    if (last.code() != StatusCode::kUnavailable) break;
    KF_LOG_WARN("kafka sink commit failed, retrying attempt={} checkpoint={}: {}", attempt,
                c.checkpoint.value(), last.message());
  }
  return last.WithContext("committing checkpoint " + std::to_string(c.checkpoint.value()) +
                          "'s records of writer " + std::to_string(c.writer) + " to " +
                          Where(spec_));
}

void KafkaTransactionalCommitter::CommitHint() {
  rd_kafka_poll(producer_.get(), 0);  // the marker's delivery report, if not served yet
  if (marker_offset_ < 0) return;
  KafkaPartitionList list(rd_kafka_topic_partition_list_new(1));
  rd_kafka_topic_partition_list_add(list.get(), spec_.marker_topic.c_str(), 0)->offset =
      marker_offset_;
  if (const rd_kafka_resp_err_t err = rd_kafka_commit(hint_consumer_.get(), list.get(), 0);
      err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    // Only the next lookup gets longer.
    KF_LOG_WARN("kafka sink could not store its marker hint txn={}: {}", transactional_id_,
                KafkaErrorText(err));
  }
}

Status KafkaTransactionalCommitter::CommitOnce(const KafkaSinkCommittable& c) {
  rd_kafka_t* rk = producer_.get();
  if (KafkaError e{rd_kafka_begin_transaction(rk)}) {
    return ErrorStatus("beginning a transaction", e.get());
  }
  auto abort = [&](Status why) {
    if (KafkaError e{rd_kafka_abort_transaction(rk, kCommitTimeoutMs)}) {
      KF_LOG_WARN("kafka sink abort failed: {}", rd_kafka_error_string(e.get()));
    }
    return why;
  };
  for (const KafkaSinkRecord& r : c.records) {
    if (Status s = Produce(rk, spec_, r); !s.ok()) return abort(s);
  }
  // The marker, in the same transaction.
  marker_offset_ = -1;
  const std::string value = std::to_string(c.checkpoint.value());
  if (const rd_kafka_resp_err_t err =
          rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(spec_.marker_topic.c_str()),
                            RD_KAFKA_V_PARTITION(0), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                            RD_KAFKA_V_KEY(transactional_id_.data(), transactional_id_.size()),
                            RD_KAFKA_V_VALUE(const_cast<char*>(value.data()), value.size()),
                            RD_KAFKA_V_OPAQUE(this), RD_KAFKA_V_END);
      err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return abort(Unavailable("producing the commit marker to Kafka topic " + spec_.marker_topic +
                             ": " + KafkaErrorText(err)));
  }
  for (;;) {
    KafkaError e{rd_kafka_commit_transaction(rk, kCommitTimeoutMs)};
    if (!e) return Status::Ok();
    if (rd_kafka_error_is_retriable(e.get())) continue;
    Status s = ErrorStatus("committing the transaction", e.get());
    return rd_kafka_error_txn_requires_abort(e.get()) ? abort(s) : s;
  }
}

Result<uint64_t> RecoverKafkaSinkCommittables(const KafkaSinkSpec& spec,
                                              const std::vector<std::string>& restored,
                                              int32_t subtask, int32_t parallelism) {
  // (job, writer) -> its committables in checkpoint order.
  std::map<std::pair<std::string, int32_t>, std::vector<KafkaSinkCommittable>> mine;
  for (const std::string& bytes : restored) {
    KF_ASSIGN_OR_RETURN(KafkaSinkCommittable c, KafkaSinkCommittable::Decode(bytes));
    if (c.writer % parallelism != subtask) continue;
    mine[{c.job_id, c.writer}].push_back(std::move(c));
  }
  uint64_t written = 0;
  for (auto& [writer, committables] : mine) {
    std::sort(committables.begin(), committables.end(),
              [](const auto& a, const auto& b) { return a.checkpoint < b.checkpoint; });
    KF_ASSIGN_OR_RETURN(std::unique_ptr<KafkaTransactionalCommitter> committer,
                        KafkaTransactionalCommitter::Open(spec, writer.first, writer.second));
    const CheckpointId marker = committer->last_committed();  // before this recovery
    for (const KafkaSinkCommittable& c : committables) {
      KF_RETURN_IF_ERROR(committer->Commit(c));
    }
    KF_LOG_INFO(
        "kafka sink recovery writer={} job={} committables={} marker_before={} records_written={}",
        writer.second, writer.first, committables.size(), marker.value(),
        committer->records_committed());
    written += committer->records_committed();
  }
  return written;
}

Result<std::unique_ptr<SinkWriter>> OpenKafkaSink(const KafkaSinkSpec& spec,
                                                  const KafkaSinkContext& context) {
  if (!spec.exactly_once()) {
    auto state = std::make_shared<DeliveryState>();
    DeliveryState* opaque = state.get();
    KF_ASSIGN_OR_RETURN(KafkaHandle producer,
                        NewKafkaClient(RD_KAFKA_PRODUCER, spec.BootstrapServers(), spec.properties,
                                       ProducerSettings(spec), [opaque](rd_kafka_conf_t* conf) {
                                         rd_kafka_conf_set_dr_msg_cb(conf, OnDelivery);
                                         rd_kafka_conf_set_opaque(conf, opaque);
                                       }));
    return std::unique_ptr<SinkWriter>(
        std::make_unique<AtLeastOnceKafkaSink>(spec, std::move(state), std::move(producer)));
  }
  KF_RETURN_IF_ERROR(RecoverKafkaSinkCommittables(spec, context.restored_committables,
                                                  context.subtask, context.parallelism)
                         .status());
  KF_ASSIGN_OR_RETURN(std::unique_ptr<KafkaTransactionalCommitter> committer,
                      KafkaTransactionalCommitter::Open(spec, context.job_id, context.subtask));
  return std::unique_ptr<SinkWriter>(
      std::make_unique<ExactlyOnceKafkaSink>(spec, context, std::move(committer)));
}

}  // namespace keyflow
