#include "worker/sinks/builtin_sink.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/binary_io.h"
#include "common/input/kafka_sink_spec.h"
#include "common/logging/logging.h"
#include "common/output_directory.h"
#include "worker/connectors/kafka/kafka_sink.h"
#include "worker/sinks/connector_sink.h"

namespace keyflow {
namespace {

class FileSinkAdapter final : public SinkWriter {
 public:
  explicit FileSinkAdapter(FileSink sink) : sink_(std::move(sink)) {}

  Status Write(const OutputRecord& record) override { return sink_.Write(record.line); }

  Result<std::unique_ptr<SinkPreCommitSync>> PrepareCommit(CheckpointId id) override {
    KF_ASSIGN_OR_RETURN(std::optional<FileSinkPreCommit> pre, sink_.StartPreCommit(id));
    if (!pre) return std::unique_ptr<SinkPreCommitSync>();
    return std::unique_ptr<SinkPreCommitSync>(std::move(pre->sync));
  }

  std::vector<std::string> PendingCommittables() const override {
    std::vector<std::string> out;
    for (const FileSinkCommittable& c : sink_.pending_committables()) {
      std::string bytes;
      BinaryWriter w(&bytes);
      c.EncodeTo(&w);
      out.push_back(std::move(bytes));
    }
    return out;
  }

  Status NotifyCheckpointComplete(CheckpointId id) override {
    return sink_.NotifyCheckpointComplete(id);
  }

  Status FinishAndCommit() override {
    KF_ASSIGN_OR_RETURN(std::vector<std::string> files, sink_.FinishAndCommit());
    KF_LOG_INFO("sink committed subtask={} files={}", sink_.options().subtask.value(),
                files.size());
    return Status::Ok();
  }

 private:
  FileSink sink_;
};

// At least once: what was written before a barrier is flushed at the barrier.
class PrintSinkAdapter final : public SinkWriter {
 public:
  explicit PrintSinkAdapter(PrintSink sink) : sink_(std::move(sink)) {}

  Status Write(const OutputRecord& record) override { return sink_.Write(record.line); }
  Status Flush() override { return sink_.Flush(); }
  Result<std::unique_ptr<SinkPreCommitSync>> PrepareCommit(CheckpointId) override {
    KF_RETURN_IF_ERROR(sink_.Flush());
    return std::unique_ptr<SinkPreCommitSync>();
  }
  std::vector<std::string> PendingCommittables() const override { return {}; }
  Status NotifyCheckpointComplete(CheckpointId) override { return Status::Ok(); }
  Status FinishAndCommit() override { return sink_.Flush(); }

 private:
  PrintSink sink_;
};

}  // namespace

std::unique_ptr<SinkWriter> FileSinkWriter(FileSink sink) {
  return std::make_unique<FileSinkAdapter>(std::move(sink));
}

std::unique_ptr<SinkWriter> PrintSinkWriter(PrintSink sink) {
  return std::make_unique<PrintSinkAdapter>(std::move(sink));
}

namespace {

// The restored checkpoint's pending output (its sink committables), committed where the
// checkpointed job wrote it if that is not where this job writes (a job restored from another's
// savepoint, with another --output); returns the committables left for this job's sink.
Result<std::vector<std::string>> CommitWhereTheyWereWritten(const DeployTask& d,
                                                            const JobLibrary* library) {
  if (!d.restore) return std::vector<std::string>();
  const std::string& old_output = d.restore->sink_directory;
  const std::vector<std::string>& committables = d.restore->sink_committables;
  if (old_output == d.spec.output_dir || committables.empty()) return committables;
  if (OutputIsConnector(old_output)) {
    if (library == nullptr)
      return FailedPrecondition("committing to " + old_output + " needs its library");
    KF_RETURN_IF_ERROR_CTX(
        CommitConnectorSinkCommittables(old_output, committables, d.subtask.value(),
                                        d.spec.parallelism, *library)
            .status(),
        "committing the restored checkpoint's results to " + old_output);
  } else if (KafkaSinkSpec::Names(old_output)) {
    KF_ASSIGN_OR_RETURN(KafkaSinkSpec old, KafkaSinkSpec::Parse(old_output));
    KF_RETURN_IF_ERROR_CTX(
        RecoverKafkaSinkCommittables(old, committables, d.subtask.value(), d.spec.parallelism)
            .status(),
        "committing the restored checkpoint's results to Kafka topic " + old.topic);
  } else if (!old_output.empty()) {
    for (const std::string& bytes : committables) {
      BinaryReader r(bytes);
      KF_ASSIGN_OR_RETURN(FileSinkCommittable c, FileSinkCommittable::DecodeFrom(&r));
      KF_RETURN_IF_ERROR_CTX(FileSink::Commit(old_output, c),
                             "committing the restored checkpoint's results in " + old_output);
    }
  }
  return std::vector<std::string>();
}

}  // namespace

Result<std::unique_ptr<SinkWriter>> OpenBuiltinSink(const DeployTask& d, std::FILE* print_stream,
                                                    std::shared_ptr<const JobLibrary> library) {
  const JobSpec& spec = d.spec;
  KF_ASSIGN_OR_RETURN(std::vector<std::string> restored_committables,
                      CommitWhereTheyWereWritten(d, library.get()));
  if (OutputIsConnector(spec.output_dir)) {
    return OpenConnectorSink(d, restored_committables, std::move(library));
  }
  if (KafkaSinkSpec::Names(spec.output_dir)) {
    KF_ASSIGN_OR_RETURN(KafkaSinkSpec kafka, KafkaSinkSpec::Parse(spec.output_dir));
    KafkaSinkContext context;
    context.job_id = d.job_id;
    context.subtask = d.subtask.value();
    context.parallelism = spec.parallelism;
    context.restored_committables = std::move(restored_committables);
    return OpenKafkaSink(kafka, context);
  }
  if (spec.output_dir.empty()) {
    return PrintSinkWriter(PrintSink::ForSubtask(d.subtask, spec.parallelism, print_stream));
  }
  if (d.attempt.value() == 1 && !d.restore) {
    KF_RETURN_IF_ERROR(CheckOutputDirectoryIsFresh(spec.output_dir));
  }
  // File names carry the job id: jobs sharing an output directory (e.g. one restored from
  // another's savepoint) never touch each other's files.
  const std::string prefix = "part-" + d.job_id;
  std::optional<CheckpointId> restored;
  if (d.restore) restored = d.restore->checkpoint;
  std::vector<FileSinkCommittable> committables;
  for (const std::string& bytes : restored_committables) {
    BinaryReader r(bytes);
    KF_ASSIGN_OR_RETURN(FileSinkCommittable c, FileSinkCommittable::DecodeFrom(&r));
    committables.push_back(std::move(c));
  }
  KF_ASSIGN_OR_RETURN(
      FileSinkRecoveryStats stats,
      FileSink::Recover(spec.output_dir, prefix, restored, committables, d.attempt));
  if (stats.committed + stats.deleted > 0) {
    KF_LOG_INFO("sink recovery committed={} already_committed={} deleted={}", stats.committed,
                stats.already_committed, stats.deleted);
  }
  FileSinkOptions so;
  so.prefix = prefix;
  so.directory = spec.output_dir;
  so.subtask = d.subtask;
  so.attempt = d.attempt;
  KF_ASSIGN_OR_RETURN(FileSink sink, FileSink::Open(so));
  return FileSinkWriter(std::move(sink));
}

}  // namespace keyflow
