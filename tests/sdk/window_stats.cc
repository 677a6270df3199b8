// window-stats: per key and event-time tumbling window [floor(ts/size)*size, +size), one record
//   {"key":K,"window_start":S,"count":N,"sum":A,"nulls":U,"missing":M,"first_tag":T}
// N = records, A = sum of the integer field `field`, U = records whose `field` is null,
// M = records without it, T = meta.tag of the window's first record (null if it has none).
// Built against the installed SDK only (tests/sdk/README.md).
//
// A user's code that also uses glog or Abseil has their CHECK-style macros: the SDK's headers
// must define only KF_-prefixed ones.
#include <keyflow/keyflow.h>
#if defined(CHECK) || defined(DCHECK) || defined(RETURN_IF_ERROR) || defined(ASSIGN_OR_RETURN)
#error "an SDK header defines an unprefixed macro that collides with glog or Abseil"
#endif
#if !defined(KF_CHECK) || !defined(KF_RETURN_IF_ERROR) || !defined(KF_ASSIGN_OR_RETURN)
#error "the SDK's macros are KF_CHECK, KF_RETURN_IF_ERROR and KF_ASSIGN_OR_RETURN"
#endif

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <system_error>
#include <thread>

namespace {

using keyflow::Collector;
using keyflow::Context;
using keyflow::MapState;
using keyflow::MapStateDescriptor;
using keyflow::OutputRecord;
using keyflow::Record;
using keyflow::RuntimeContext;
using keyflow::Status;
using keyflow::Timestamp;

// Indexes into a window's statistics.
enum Stat : size_t { kCount, kSum, kNulls, kMissing, kStats };

class WindowStats final : public keyflow::KeyedFunction {
 public:
  WindowStats(int64_t size_ms, std::string field, int64_t pause_every, std::string pause_until)
      : size_(size_ms),
        field_(std::move(field)),
        pause_every_(pause_every),
        pause_until_(std::move(pause_until)) {}

  Status Open(RuntimeContext& runtime) override {
    runtime_ = &runtime;
    KF_ASSIGN_OR_RETURN(
        stats_, runtime.GetMapState(MapStateDescriptor<int64_t, std::vector<int64_t>>("stats")));
    KF_ASSIGN_OR_RETURN(first_tag_,
                        runtime.GetMapState(MapStateDescriptor<int64_t, std::string>("first-tag")));
    return Status::Ok();
  }

  void ProcessElement(const Record& r, Context& ctx, Collector<OutputRecord>&) override {
    if (pause_every_ > 0 && ++seen_ % pause_every_ == 0 && Paused()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));  // a slow function, on purpose
    }
    const int64_t ts = r.timestamp.millis();
    const int64_t start = ts - ((ts % size_) + size_) % size_;
    std::vector<int64_t> stats(kStats, 0);
    if (auto current = stats_->Get(start)) {
      stats = *current;
    } else {  // the window's first record
      keyflow::FieldValue tag = r.field("meta")["tag"];
      first_tag_->Put(start, tag.AsString() ? std::string(*tag.AsString()) : std::string("\0", 1));
      ctx.timer_service().RegisterEventTimeTimer(Timestamp(start + size_ - 1));
    }
    stats[kCount] += 1;
    keyflow::FieldValue value = r.field(field_);
    if (value.is_missing()) {
      stats[kMissing] += 1;
    } else if (value.is_null()) {
      stats[kNulls] += 1;
    } else {
      stats[kSum] += value.AsInt64().value_or(0);
    }
    stats_->Put(start, std::move(stats));
  }

  void OnTimer(Timestamp t, keyflow::OnTimerContext& ctx, Collector<OutputRecord>& out) override {
    const int64_t start = t.millis() + 1 - size_;
    auto stats = stats_->Get(start);
    auto tag = first_tag_->Get(start);
    if (!stats || !tag) return;
    keyflow::JsonObject line;
    line.Add("key", ctx.current_key(), runtime_->key_type())
        .Add("window_start", start)
        .Add("count", (*stats)[kCount])
        .Add("sum", (*stats)[kSum])
        .Add("nulls", (*stats)[kNulls])
        .Add("missing", (*stats)[kMissing]);
    if (*tag == std::string("\0", 1)) {
      line.AddNull("first_tag");
    } else {
      line.Add("first_tag", *tag);
    }
    out.Collect(std::move(line));
    stats_->Remove(start);
    first_tag_->Remove(start);
  }

 private:
  // Pausing lasts until the file pause_until_ exists (always when it is "").
  bool Paused() {
    if (!paused_ || pause_until_.empty()) return paused_;
    std::error_code ec;
    paused_ = !std::filesystem::exists(pause_until_, ec);
    return paused_;
  }

  const int64_t size_;
  const std::string field_;
  const int64_t pause_every_;
  const std::string pause_until_;
  bool paused_ = true;
  int64_t seen_ = 0;
  RuntimeContext* runtime_ = nullptr;
  MapState<int64_t, std::vector<int64_t>>* stats_ = nullptr;  // window start -> Stat values
  MapState<int64_t, std::string>* first_tag_ = nullptr;       // window start -> tag ("\0": none)
};

std::vector<keyflow::JobDefinition> Jobs() {
  keyflow::JobDefinition job;
  job.name = "window-stats";
  job.description = "per key and event-time tumbling window: count, sum, nulls, first tag";
  job.params = {
      {"size", keyflow::ParamType::kDuration, "1s", "window size"},
      {"field", keyflow::ParamType::kString, "amount", "the integer field to sum"},
      {"pause-every", keyflow::ParamType::kInt, "0", "sleep 1 ms every N records (0: never)"},
      {"pause-until", keyflow::ParamType::kString, "",
       "pause (pause-every) only until this file exists (\"\": always)"},
  };
  job.create = [](const keyflow::JobParams& p) {
    return std::make_unique<WindowStats>(p.GetDuration("size").millis(), p.GetString("field"),
                                         p.GetInt("pause-every"), p.GetString("pause-until"));
  };
  return {job};
}

// The source connector "lines" (--input connector:lines:DIR): every *.jsonl file of DIR is a
// split, read line by line; the position is the byte offset of the next line. An example of a
// source written against the SDK alone (worker/api/source_connector.h).
class LinesReader final : public keyflow::ConnectorSplitReader {
 public:
  LinesReader(const std::string& path, int64_t offset) : in_(path, std::ios::binary) {
    in_.seekg(offset);
    offset_ = offset;
  }
  bool ok() const { return static_cast<bool>(in_); }

  keyflow::Result<keyflow::ConnectorRead> Next(std::string* record) override {
    if (!std::getline(in_, *record)) {
      if (in_.eof()) return keyflow::ConnectorRead::kEndOfSplit;
      return keyflow::IoError("reading failed at byte " + std::to_string(offset_));
    }
    offset_ += static_cast<int64_t>(record->size()) + 1;
    return keyflow::ConnectorRead::kRecord;
  }
  std::string Position() const override { return std::to_string(offset_); }

 private:
  std::ifstream in_;
  int64_t offset_ = 0;
};

// The sink connector "files" (--output connector:files:DIR): each subtask writes its results to
// a hidden file, which PrepareCommit closes and renames to a staged name (the committable);
// commit renames the staged file to its visible name, or finds it there already.
class FilesWriter final : public keyflow::ConnectorSinkWriter {
 public:
  FilesWriter(std::string dir, int32_t subtask) : dir_(std::move(dir)), subtask_(subtask) {}

  keyflow::Status Write(const std::string& record, std::optional<int64_t>) override {
    if (!out_.is_open()) {
      out_.open(Path(".w" + std::to_string(subtask_) + ".open"), std::ios::trunc);
      if (!out_) return keyflow::IoError("cannot write in " + dir_);
    }
    out_ << record << '\n';
    return out_ ? keyflow::Status::Ok() : keyflow::IoError("cannot write in " + dir_);
  }
  keyflow::Result<std::string> PrepareCommit(int64_t checkpoint) override {
    if (!out_.is_open()) return std::string();  // nothing written since the last one
    out_.close();
    if (!out_) return keyflow::IoError("cannot write in " + dir_);
    const std::string name = "w" + std::to_string(subtask_) + "-c" + std::to_string(checkpoint);
    std::error_code ec;
    std::filesystem::rename(Path(".w" + std::to_string(subtask_) + ".open"),
                            Path("." + name + ".staged"), ec);
    if (ec) return keyflow::IoError("cannot stage " + name + ": " + ec.message());
    return name;
  }

 private:
  std::string Path(const std::string& name) const { return dir_ + "/" + name; }
  std::string dir_;
  int32_t subtask_;
  std::ofstream out_;
};

keyflow::SinkConnector FilesSink() {
  keyflow::SinkConnector files;
  files.name = "files";
  files.description = "a JSON Lines file per subtask and checkpoint in a directory";
  files.check = [](const std::string& dir) {
    return dir.empty() ? keyflow::InvalidArgument("give a directory: connector:files:DIR")
                       : keyflow::Status::Ok();
  };
  files.open = [](const std::string& dir, int32_t subtask,
                  int32_t) -> keyflow::Result<std::unique_ptr<keyflow::ConnectorSinkWriter>> {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) return keyflow::IoError("cannot create " + dir + ": " + ec.message());
    return std::unique_ptr<keyflow::ConnectorSinkWriter>(new FilesWriter(dir, subtask));
  };
  files.commit = [](const std::string& dir, const std::string& name) -> keyflow::Status {
    const std::string visible = dir + "/" + name + ".jsonl";
    std::error_code ec;
    std::filesystem::rename(dir + "/." + name + ".staged", visible, ec);
    if (!ec || std::filesystem::exists(visible)) return keyflow::Status::Ok();  // idempotent
    return keyflow::IoError("cannot commit " + name + ": " + ec.message());
  };
  return files;
}

std::vector<keyflow::SourceConnector> Sources() {
  keyflow::SourceConnector lines;
  lines.name = "lines";
  lines.description = "the *.jsonl files of a directory, a split each";
  lines.splits = [](const std::string& dir) -> keyflow::Result<std::vector<std::string>> {
    std::error_code ec;
    std::vector<std::string> files;
    for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
      if (e.path().extension() == ".jsonl") files.push_back(e.path().filename().string());
    }
    if (ec) return keyflow::InvalidArgument("cannot list directory '" + dir + "': " + ec.message());
    if (files.empty()) return keyflow::InvalidArgument("no *.jsonl file in '" + dir + "'");
    std::sort(files.begin(), files.end());
    return files;
  };
  lines.open = [](const std::string& dir, const std::string& file, const std::string& position)
      -> keyflow::Result<std::unique_ptr<keyflow::ConnectorSplitReader>> {
    auto reader = std::make_unique<LinesReader>(dir + "/" + file,
                                                position.empty() ? 0 : std::stoll(position));
    if (!reader->ok()) return keyflow::NotFound("cannot open '" + dir + "/" + file + "'");
    return std::unique_ptr<keyflow::ConnectorSplitReader>(std::move(reader));
  };
  return {lines};
}

keyflow::Connectors Connectors() {
  return {Sources(), {FilesSink()}};
}

}  // namespace

KEYFLOW_JOB_LIBRARY_WITH_CONNECTORS(Jobs, Connectors)
