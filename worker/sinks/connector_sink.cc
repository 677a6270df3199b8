#include "worker/sinks/connector_sink.h"

#include <exception>
#include <optional>
#include <utility>

#include "common/binary_io.h"
#include "common/job_library/user_function_guard.h"
#include "common/logging/logging.h"

namespace keyflow {
namespace {

constexpr uint8_t kCommittableVersion = 1;

// Runs `fn` (returning a Status or a Result) and turns an exception into Internal naming `what`.
template <typename Fn>
auto Guarded(const std::string& what, Fn&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (...) {
    return Internal(what + " threw: " + DescribeException(std::current_exception()));
  }
}

struct Committable {
  int32_t writer = 0;
  int64_t checkpoint = 0;
  std::string bytes;

  std::string Encode() const {
    std::string out;
    BinaryWriter w(&out);
    w.U8(kCommittableVersion);
    w.I32(writer);
    w.I64(checkpoint);
    w.Bytes(bytes);
    return out;
  }
  static Result<Committable> Decode(const std::string& encoded) {
    BinaryReader r(encoded);
    const uint8_t version = r.U8();
    Committable c;
    c.writer = r.I32();
    c.checkpoint = r.I64();
    c.bytes = std::string(r.Bytes());
    KF_RETURN_IF_ERROR(r.status("connector sink committable"));
    if (version != kCommittableVersion || c.writer < 0 || !r.at_end()) {
      return Corruption("a connector sink committable of the checkpoint is malformed (version " +
                        std::to_string(version) + ", writer " + std::to_string(c.writer) + ")");
    }
    return c;
  }
};

// Commits `c` with `sink`, kCommitAttempts times at most.
Status Commit(const SinkConnector& sink, const std::string& description, const std::string& args,
              const Committable& c) {
  Status last = Status::Ok();
  for (int attempt = 1; attempt <= kCommitAttempts; ++attempt) {
    last = Guarded(description + " commit", [&]() -> Status { return sink.commit(args, c.bytes); });
    if (last.ok()) return last;
    KF_LOG_WARN("{}: commit of checkpoint {} (writer {}) failed, attempt {} of {}: {}", description,
                c.checkpoint, c.writer, attempt, kCommitAttempts, last.message());
  }
  return last.WithContext(description + " committing checkpoint " + std::to_string(c.checkpoint) +
                          " of writer " + std::to_string(c.writer));
}

class ConnectorSinkAdapter final : public SinkWriter {
 public:
  ConnectorSinkAdapter(std::shared_ptr<const JobLibrary> library, const SinkConnector* sink,
                       std::string description, std::string args, int32_t subtask,
                       std::unique_ptr<ConnectorSinkWriter> writer)
      : library_(std::move(library)),
        sink_(sink),
        description_(std::move(description)),
        args_(std::move(args)),
        subtask_(subtask),
        writer_(std::move(writer)) {}

  Status Write(const OutputRecord& record) override {
    std::optional<int64_t> ts;
    if (record.timestamp && *record.timestamp != kMaxWatermark) ts = record.timestamp->millis();
    return Guarded(description_ + " Write", [&] { return writer_->Write(record.line, ts); });
  }

  Result<std::unique_ptr<SinkPreCommitSync>> PrepareCommit(CheckpointId id) override {
    KF_RETURN_IF_ERROR(Prepare(id.value()));
    return std::unique_ptr<SinkPreCommitSync>();  // PrepareCommit made it durable
  }

  std::vector<std::string> PendingCommittables() const override {
    std::vector<std::string> out;
    out.reserve(pending_.size());
    for (const Committable& c : pending_) out.push_back(c.Encode());
    return out;
  }

  Status NotifyCheckpointComplete(CheckpointId id) override {
    while (!pending_.empty() && pending_.front().checkpoint <= id.value()) {
      KF_RETURN_IF_ERROR(Commit(*sink_, description_, args_, pending_.front()));
      pending_.erase(pending_.begin());
    }
    return Status::Ok();
  }

  Status FinishAndCommit() override {
    const int64_t last = pending_.empty() ? last_prepared_ : pending_.back().checkpoint;
    KF_RETURN_IF_ERROR(Prepare(std::max(last, last_prepared_) + 1));
    for (const Committable& c : pending_)
      KF_RETURN_IF_ERROR(Commit(*sink_, description_, args_, c));
    pending_.clear();
    return Status::Ok();
  }

 private:
  Status Prepare(int64_t checkpoint) {
    Result<std::string> committable = Guarded(description_ + " PrepareCommit",
                                              [&] { return writer_->PrepareCommit(checkpoint); });
    if (!committable.ok()) return committable.status();
    last_prepared_ = checkpoint;
    if (!committable->empty()) {
      pending_.push_back(Committable{subtask_, checkpoint, *std::move(committable)});
    }
    return Status::Ok();
  }

  std::shared_ptr<const JobLibrary> library_;  // first: outlives the writer (its code)
  const SinkConnector* sink_;
  std::string description_;
  std::string args_;
  int32_t subtask_;
  std::unique_ptr<ConnectorSinkWriter> writer_;
  std::vector<Committable> pending_;  // prepared, not committed yet, in checkpoint order
  int64_t last_prepared_ = 0;
};

std::string Description(const std::string& name, const JobLibrary& library) {
  return "sink '" + name + "' of " + library.file_name();
}

}  // namespace

ConnectorOutput ConnectorOutput::Of(const std::string& output) {
  std::string_view rest = std::string_view(output).substr(std::string_view("connector:").size());
  const size_t colon = rest.find(':');
  ConnectorOutput o;
  o.name = std::string(rest.substr(0, colon));
  if (colon != std::string_view::npos) o.args = std::string(rest.substr(colon + 1));
  return o;
}

Result<int> CommitConnectorSinkCommittables(const std::string& output,
                                            const std::vector<std::string>& committables,
                                            int32_t subtask, int32_t parallelism,
                                            const JobLibrary& library) {
  const ConnectorOutput o = ConnectorOutput::Of(output);
  KF_ASSIGN_OR_RETURN(const SinkConnector* sink, library.FindSink(o.name));
  int committed = 0;
  for (const std::string& encoded : committables) {
    KF_ASSIGN_OR_RETURN(Committable c, Committable::Decode(encoded));
    if (c.writer % parallelism != subtask) continue;
    KF_RETURN_IF_ERROR(Commit(*sink, Description(o.name, library), o.args, c));
    ++committed;
  }
  return committed;
}

Result<std::unique_ptr<SinkWriter>> OpenConnectorSink(
    const DeployTask& d, const std::vector<std::string>& restored_committables,
    std::shared_ptr<const JobLibrary> library) {
  if (library == nullptr)
    return FailedPrecondition("--output " + d.spec.output_dir + " needs its library");
  const ConnectorOutput o = ConnectorOutput::Of(d.spec.output_dir);
  KF_ASSIGN_OR_RETURN(const SinkConnector* sink, library->FindSink(o.name));
  const std::string description = Description(o.name, *library);
  KF_ASSIGN_OR_RETURN(int committed, CommitConnectorSinkCommittables(
                                         d.spec.output_dir, restored_committables,
                                         d.subtask.value(), d.spec.parallelism, *library));
  if (committed > 0) {
    KF_LOG_INFO("{}: recovery committed {} committable(s) of the restored checkpoint", description,
                committed);
  }
  Result<std::unique_ptr<ConnectorSinkWriter>> writer = Guarded(description + " open", [&] {
    return sink->open(o.args, d.subtask.value(), d.spec.parallelism);
  });
  if (!writer.ok()) return writer.status().WithContext(description + " opening its writer");
  if (*writer == nullptr) return Internal(description + " open returned no writer");
  return std::unique_ptr<SinkWriter>(new ConnectorSinkAdapter(
      std::move(library), sink, description, o.args, d.subtask.value(), std::move(writer).value()));
}

}  // namespace keyflow
