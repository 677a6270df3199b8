// JobSpec: everything a submitted job needs, as the CLI sends it and the coordinator deploys it.
// Validated once, at submission (Validate), so a bad flag is refused before anything runs.
#pragma once

#include <cereal/cereal.hpp>
#include <cereal/types/vector.hpp>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/key.h"
#include "common/protocol/job_graph_serialization.h"
#include "common/status.h"
#include "worker/api/job_graph.h"

namespace keyflow {

// Why 5: a full checkpoint disk with a 1 s interval fails the job within ~6 s, while one slow
// checkpoint or a decline racing a failover does not end a long-running job.
inline constexpr int32_t kDefaultTolerableCheckpointFailures = 5;

// The job library a job's functions come from: stored by the coordinator's blob
// store under its content hash and shipped with every deployment; workers verify the hash
// before they load it. Empty sha256 = the default (built-in) job library of the installation.
struct JobLibraryRef {
  std::string sha256;     // lowercase hex SHA-256 of the shared object's bytes
  std::string file_name;  // the name it was submitted under, e.g. "libsessions.so" (for messages)
  uint64_t size_bytes = 0;

  bool is_default() const { return sha256.empty(); }
  // "job library libsessions.so (52c6c14d07e1)", for messages.
  std::string Describe() const {
    return "job library " + (file_name.empty() ? std::string("?") : file_name) + " (" +
           sha256.substr(0, 12) + ")";
  }
  friend bool operator==(const JobLibraryRef&, const JobLibraryRef&) = default;
  template <class Archive>
  void serialize(Archive& ar) {
    ar(sha256, file_name, size_bytes);
  }
};

struct JobSpec {
  std::string job_name;       // a job of job_library, e.g. "count-window"
  JobLibraryRef job_library;  // where job_name comes from (version >= 4)
  // The job's JobDefinition::reads_fields, resolved at submit: when false the sources ship only
  // key and timestamp (no fields, no raw JSON), the fastest path (version >= 4).
  bool reads_fields = false;
  // JobDefinition::fields, resolved at submit with the job's params: with reads_fields, the
  // sources ship only these top-level fields; empty = every field (version >= 5).
  std::vector<std::string> fields;
  std::map<std::string, std::string> params;  // job parameters (--param k=v)
  std::string input;                          // file, directory or gen:...
  std::string output_dir;                     // file sink directory; empty = no file output
  int32_t parallelism = 0;                    // 0 = number of registered workers
  int32_t max_parallelism = 0;                // 0 = default from parallelism (Flink's rule)
  std::string key_field = "uid";
  std::string ts_field = "ts";
  KeyType key_type = KeyType::kString;
  int64_t watermark_bound_ms = 0;       // bounded out-of-orderness
  int64_t watermark_interval_ms = 200;  // periodic watermark emission
  int64_t idle_timeout_ms = 0;          // 0 = sources never mark themselves idle
  bool fail_on_bad_record = false;      // --on-bad-record fail|skip
  // --on-input-change warn|fail: a file source input that grows, is truncated or is replaced
  // while it is read is a warning (the bytes not read are named) or fails the job.
  bool fail_on_input_change = false;
  // Checkpointing (issue 4): 0 = no periodic checkpoints.
  int64_t checkpoint_interval_ms = 0;
  int64_t checkpoint_timeout_ms = 600'000;
  int64_t checkpoint_min_pause_ms = 0;
  int32_t max_concurrent_checkpoints = 1;
  int32_t retained_checkpoints = 3;
  // Consecutive checkpoint failures (declined, expired, not written) tolerated; one more fails
  // the job (Flink's execution.checkpointing.tolerable-failed-checkpoints).
  int32_t tolerable_checkpoint_failures = kDefaultTolerableCheckpointFailures;
  std::string checkpoint_dir;  // empty = the coordinator's --checkpoint-dir
  std::string from_savepoint;  // restore from this checkpoint/savepoint directory
  // Restart strategy: "none", "fixed-delay", "exponential-delay"; "" = exponential-delay when
  // checkpointing is on, none otherwise (coordinator/restart_strategy.h).
  std::string restart_strategy;
  int32_t restart_attempts = 50;
  int64_t restart_delay_ms = 200;
  int64_t restart_max_delay_ms = 30'000;
  // A failed worker not replaced within this time: restart on the remaining workers.
  int64_t replacement_timeout_ms = 10'000;
  // Keyed state backend (issue 11): "heap" or "rocksdb" (version >= 6). `state_dir`: the
  // worker-local working directory of the RocksDB backend; empty = under the worker's run dir.
  std::string state_backend = "heap";
  std::string state_dir;
  // Latency markers (issue 12): a source subtask emits one every this many ms; 0 = off
  // (version >= 6).
  int64_t latency_interval_ms = 200;
  // Incremental checkpoints (issue 11; version >= 7; `keyflow run --incremental true|false`,
  // default true): a periodic checkpoint writes only what changed since the subtask's last
  // completed checkpoint and references the rest in the job's shared directory
  // (checkpoint/README.md "Incremental checkpoints"). Savepoints are always full and
  // self-contained. A JobSpec of version < 7 decodes to false (its checkpoints were full).
  bool incremental_checkpoints = true;
  // --input connector:NAME[:ARGS]: the source's splits, listed by `keyflow run` (which loads the
  // job library) at submit; split i has id i (InputSpec::ConnectorSplits; version >= 8).
  std::vector<std::string> connector_splits;
  // A job whose definition builds a graph (JobDefinition::graph): the graph `keyflow run` built
  // and validated, with key_field/key_type those of its KeyBy. Empty (no operators) for a
  // single-function job (JobDefinition::create) (version >= 9).
  JobGraph graph;

  bool is_graph_job() const { return !graph.operators.empty(); }

  // Stored in checkpoint metadata: a new field is appended under `if (version >= N)` and the
  // class version below raised, so older checkpoints stay readable.
  template <class Archive>
  void serialize(Archive& ar, const std::uint32_t version) {
    ar(job_name, params, input, output_dir, parallelism, max_parallelism, key_field, ts_field,
       key_type, watermark_bound_ms, watermark_interval_ms, idle_timeout_ms, fail_on_bad_record,
       checkpoint_interval_ms, checkpoint_timeout_ms, checkpoint_min_pause_ms,
       max_concurrent_checkpoints, retained_checkpoints, checkpoint_dir, from_savepoint,
       restart_strategy, restart_attempts, restart_delay_ms, restart_max_delay_ms,
       replacement_timeout_ms);
    if (version >= 2) ar(tolerable_checkpoint_failures);
    if (version >= 3) ar(fail_on_input_change);
    if (version >= 4) ar(job_library, reads_fields);
    if (version >= 5) ar(fields);
    if (version >= 6) ar(state_backend, state_dir, latency_interval_ms);
    if (version >= 7) {
      ar(incremental_checkpoints);
    } else if constexpr (Archive::is_loading::value) {
      incremental_checkpoints = false;
    }
    if (version >= 8) ar(connector_splits);
    if (version >= 9) ar(graph);
    // Decoded bytes come from outside: an enum must hold one of its values. (cereal reports
    // malformed input by throwing; the decoders catch it at their module edge.)
    if constexpr (Archive::is_loading::value) {
      if (static_cast<uint8_t>(key_type) > static_cast<uint8_t>(KeyType::kLong)) {
        throw cereal::Exception("the job spec has an unknown key type " +
                                std::to_string(static_cast<int>(key_type)));
      }
    }
  }
};

}  // namespace keyflow

CEREAL_CLASS_VERSION(keyflow::JobSpec, 9);
