// The Kafka sink (--output kafka:...): a SinkWriter per keyed subtask that writes the job's
// results to one Kafka topic, exactly once or at least once (KafkaSinkSpec).
//
// Exactly once: write-ahead into the checkpoint, then a Kafka transaction with a commit marker.
//
//   Write                      the record (key from key=, value = the output line, timestamp =
//                              its event time) is buffered in memory, not sent
//   PrepareCommit(c)           the buffer becomes committable c: {job, writer = this subtask, c,
//                              the records}. It is this subtask's sink state in checkpoint c, so
//                              once checkpoint c completes the records are durable in it
//   NotifyCheckpointComplete   for each pending committable <= c, in order, one transaction of
//                              producer "keyflow-<job>-w<writer>" (the writer's transactional
//                              id): the records, and a marker record in partition 0 of the
//                              marker topic (markers=) with the transactional id as key and c
//                              as value; then commit. The marker commits atomically with the
//                              records. Afterwards the marker's offset is committed for the
//                              group "keyflow-sink-<job>-w<writer>" (not transactional: a hint
//                              where the next lookup starts, see below)
//   restore / rescale          every subtask receives every committable of the checkpoint;
//                              subtask s commits those of writers w with w % P == s: it opens
//                              producer "keyflow-<job>-w<w>" (init_transactions fences any
//                              producer of an earlier attempt and aborts its open transaction),
//                              then looks up the writer's last marker — reading partition 0 of
//                              the marker topic (read_committed) from the hint to its end — and
//                              commits only the committables above it
//
// So a crash after checkpoint c completed and before (or during) its commit loses nothing (c's
// records are in the checkpoint and are committed after recovery) and duplicates nothing (a
// commit that did happen wrote its marker with it). Nothing becomes visible before its
// checkpoint completed. Writer ids are subtask indices and checkpoint ids only grow within a
// job, so each writer's markers only grow. The hint is only ever at or before the writer's last
// marker (it is set after the commit), so a stale or missing hint makes the lookup longer, never
// wrong. The records of one checkpoint interval travel in the checkpoint: a subtask's interval
// is limited to kMaxKafkaSinkPendingBytes (the write fails with a sentence; shorten the
// checkpoint interval or use at-least-once). Transactions are open only while a commit runs.
//
// Why a marker topic and not the group offsets of send_offsets_to_transaction: both commit
// atomically with the records on Kafka, but librdkafka's mock cluster (the tests' broker) accepts
// transactional offset commits without storing them; a marker record works on both.
//
// At least once: records are produced as they come (idempotent producer) and flushed at every
// barrier; the checkpoint is acknowledged only once every record before it was acknowledged by
// the brokers.
//
// Threading: the task thread, except the pre-commit sync (any thread, once).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/binary_io.h"
#include "common/input/kafka_sink_spec.h"
#include "common/kafka/kafka_client.h"
#include "common/status.h"
#include "common/types.h"
#include "worker/sinks/sink_writer.h"

namespace keyflow {

struct KafkaSinkRecord {
  std::optional<std::string> key;
  std::string value;
  std::optional<int64_t> timestamp_ms;
  friend bool operator==(const KafkaSinkRecord&, const KafkaSinkRecord&) = default;
};

struct KafkaSinkCommittable {
  std::string job_id;
  int32_t writer = 0;  // the subtask that wrote it
  CheckpointId checkpoint{0};
  std::vector<KafkaSinkRecord> records;

  // u8 version (1), bytes job_id, varint writer, i64 checkpoint, varint count, per record: u8
  // flags (1 key, 2 timestamp), [bytes key], bytes value, [i64 timestamp]; then u64 Checksum64
  // of everything before. Decode refuses (Corruption) a bad version, checksum or length.
  std::string Encode() const;
  static Result<KafkaSinkCommittable> Decode(std::string_view bytes);
  std::string TransactionalId() const { return TransactionalId(job_id, writer); }
  static std::string TransactionalId(const std::string& job_id, int32_t writer);
  // The consumer group whose committed offset on the marker partition is the lookup hint.
  static std::string HintGroup(const std::string& job_id, int32_t writer);
  friend bool operator==(const KafkaSinkCommittable&, const KafkaSinkCommittable&) = default;
};

// Commits the committables of one writer (one transactional id), each at most once.
class KafkaTransactionalCommitter {
 public:
  // Makes the transactional producer and fences earlier ones (init_transactions), then looks up
  // the writer's last marker. Unavailable if the brokers do not answer in time (or an open
  // transaction of another producer holds the marker partition for longer).
  static Result<std::unique_ptr<KafkaTransactionalCommitter>> Open(const KafkaSinkSpec& spec,
                                                                   const std::string& job_id,
                                                                   int32_t writer);
  // Precondition: c is this committer's writer's. Commits c's records and marker in one
  // transaction, unless the last marker is already at or past c.checkpoint (then returns Ok
  // having written nothing). Retries what librdkafka calls retriable; a fenced producer (a newer
  // attempt took over the writer) is FailedPrecondition.
  Status Commit(const KafkaSinkCommittable& c);
  // The writer's marker: the last checkpoint whose records are committed (0: none).
  CheckpointId last_committed() const { return last_committed_; }
  // Records written by Commit (not counting skipped committables).
  uint64_t records_committed() const { return records_committed_; }
  rd_kafka_t* producer() const { return producer_.get(); }

 private:
  explicit KafkaTransactionalCommitter(const KafkaSinkSpec& spec) : spec_(spec) {}
  Status LookUpLastMarker();
  Status CommitOnce(const KafkaSinkCommittable& c);
  void CommitHint();
  static void OnDelivery(rd_kafka_t* rk, const rd_kafka_message_t* m, void* opaque);

  KafkaSinkSpec spec_;
  std::string transactional_id_;
  KafkaHandle producer_;
  KafkaHandle hint_consumer_;   // group HintGroup(): the hint's reads and commits
  int64_t marker_offset_ = -1;  // of the last marker written (delivery report), -1: unknown
  CheckpointId last_committed_{0};
  uint64_t records_committed_ = 0;
};

// What OpenKafkaSink needs of a deployment.
struct KafkaSinkContext {
  std::string job_id;
  int32_t subtask = 0;
  int32_t parallelism = 1;
  // The restored checkpoint's Kafka sink committables (all subtasks'), encoded.
  std::vector<std::string> restored_committables;
};

// Recovers (exactly once: commits this subtask's share of the restored committables, see the
// file comment) and opens the writer. Errors name the topic and what failed.
Result<std::unique_ptr<SinkWriter>> OpenKafkaSink(const KafkaSinkSpec& spec,
                                                  const KafkaSinkContext& context);

// The committables of `restored` (encoded) that subtask `subtask` of `parallelism` commits, and
// commits them: writer w's go to subtask w % parallelism. Returns how many records it wrote.
Result<uint64_t> RecoverKafkaSinkCommittables(const KafkaSinkSpec& spec,
                                              const std::vector<std::string>& restored,
                                              int32_t subtask, int32_t parallelism);

// At most this many bytes of records per subtask and checkpoint interval (exactly once).
inline constexpr size_t kMaxKafkaSinkPendingBytes = size_t{16} << 20;

}  // namespace keyflow
