#include "coordinator/cli/checkpoint_inspect_command.h"

#include <ctime>
#include <filesystem>
#include <iomanip>
#include <nlohmann/json.hpp>
#include <ostream>
#include <sstream>

#include "checkpoint/checkpoint_storage.h"
#include "common/process/command_line.h"

namespace keyflow::cli {
namespace {

// 1714564800123 -> "2024-05-01T12:00:00.123Z".
std::string FormatUtcMillis(int64_t ms) {
  std::time_t secs = static_cast<std::time_t>(ms >= 0 ? ms / 1000 : (ms - 999) / 1000);
  int millis = static_cast<int>(ms - static_cast<int64_t>(secs) * 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
  std::ostringstream os;
  os << buf << '.' << std::setw(3) << std::setfill('0') << millis << 'Z';
  return os.str();
}

std::string Hex64(uint64_t v) {
  std::ostringstream os;
  os << std::hex << std::setw(16) << std::setfill('0') << v;
  return os.str();
}

struct Totals {
  uint64_t files = 0, bytes = 0, written_bytes = 0, key_groups = 0, keys = 0, timers = 0;
};

Totals ComputeTotals(const CheckpointMetadata& m) {
  Totals t;
  for (const SubtaskCheckpointState& s : m.subtasks) {
    const KeyGroupsStateHandle& h = s.keyed_state;
    t.files += (h.incremental() ? 0 : 1) + s.SharedFiles().size() +
               (s.native_state ? s.native_state->private_files.size() : 0);
    t.bytes += s.StateBytes();
    t.written_bytes += s.written_bytes;
    t.key_groups += static_cast<uint64_t>(h.range.size());
    for (size_t k = 0; k < h.keys.size(); ++k) {
      t.keys += h.keys[k];
      t.timers += h.timers[k];
    }
  }
  return t;
}

void PrintText(const CheckpointMetadata& m, const std::string& dir, const Status& files,
               std::ostream& out) {
  auto field = [&out](const std::string& name) -> std::ostream& {
    return out << std::left << std::setw(19) << (name + ":") << std::right;
  };
  field("job") << m.job_id << "\n";
  field("job name") << m.spec.job_name << "\n";
  field("id") << m.id.value() << "\n";
  field("type") << m.TypeName() << "\n";
  field("directory") << dir << "\n";
  field("triggered") << FormatUtcMillis(m.timestamp_ms) << "\n";
  field("completed") << FormatUtcMillis(m.completed_ms) << " (" << m.completed_ms - m.timestamp_ms
                     << " ms after the trigger)\n";
  field("attempt") << m.attempt.value() << "\n";
  field("max parallelism") << m.max_parallelism() << "\n";
  field("parallelism") << m.parallelism() << "\n";
  field("split positions") << m.split_positions.size() << "\n";
  field("sink committables") << m.sink_committables.size() << "\n";
  field("state files") << (files.ok() ? "ok" : "BROKEN: " + files.message()) << "\n";
  for (const SubtaskCheckpointState& s : m.subtasks) {
    const KeyGroupsStateHandle& h = s.keyed_state;
    out << "\nsubtask " << s.subtask.value() << ": "
        << (h.incremental() ? std::to_string(h.shared_files.size()) + " shared files" : h.path)
        << ", key groups " << h.range.start() << "-" << h.range.end() << ", " << s.StateBytes()
        << " bytes (" << s.written_bytes << " written by this checkpoint), checksum "
        << Hex64(h.checksum) << "\n";
    for (const SharedStateFile& f : h.shared_files) {
      out << "  shared " << f.name << " " << f.size << " bytes\n";
    }
    if (s.native_state) {
      out << "  native " << s.native_state->backend << " v" << s.native_state->format_version
          << ": " << s.native_state->shared_files.size() << " shared files, "
          << s.native_state->private_files.size() << " private files, "
          << s.native_state->total_keys << " keys\n";
    }
    out << "  " << std::setw(9) << "key group" << std::setw(14) << "offset" << std::setw(14)
        << "bytes" << std::setw(12) << "keys" << std::setw(12) << "timers"
        << "\n";
    uint64_t bytes = 0, keys = 0, timers = 0;
    for (KeyGroupId g : h.range.key_groups()) {
      const size_t k = static_cast<size_t>(h.range.IndexOf(g));
      out << "  " << std::setw(9) << g.value() << std::setw(14) << h.offsets[k] << std::setw(14)
          << h.lengths[k] << std::setw(12) << h.keys[k] << std::setw(12) << h.timers[k] << "\n";
      bytes += h.lengths[k];
      keys += h.keys[k];
      timers += h.timers[k];
    }
    out << "  " << std::left << std::setw(23) << "total" << std::right << std::setw(14) << bytes
        << std::setw(12) << keys << std::setw(12) << timers << "\n";
  }
  Totals t = ComputeTotals(m);
  out << "\ntotal: " << t.files << " files, " << t.bytes << " bytes (" << t.written_bytes
      << " written), " << t.key_groups << " key groups, " << t.keys << " keys, " << t.timers
      << " timers\n";
}

void PrintJson(const CheckpointMetadata& m, const std::string& dir, const Status& files,
               std::ostream& out) {
  nlohmann::json j;
  j["job_id"] = m.job_id;
  j["job_name"] = m.spec.job_name;
  j["id"] = m.id.value();
  j["type"] = std::string(m.TypeName());
  j["directory"] = dir;
  j["triggered_ms"] = m.timestamp_ms;
  j["completed_ms"] = m.completed_ms;
  j["attempt"] = m.attempt.value();
  j["max_parallelism"] = m.max_parallelism();
  j["parallelism"] = m.parallelism();
  nlohmann::json splits = nlohmann::json::array();
  for (const auto& [split, position] : m.split_positions) splits.push_back(split);
  j["splits"] = splits;
  j["sink_committables"] = m.sink_committables.size();
  j["state_files_ok"] = files.ok();
  if (!files.ok()) j["state_files_error"] = files.message();
  nlohmann::json subtasks = nlohmann::json::array();
  for (const SubtaskCheckpointState& s : m.subtasks) {
    const KeyGroupsStateHandle& h = s.keyed_state;
    nlohmann::json st;
    st["subtask"] = s.subtask.value();
    st["file"] = h.path;
    st["path"] = h.incremental() ? std::string() : dir + "/" + h.path;
    st["first_key_group"] = h.range.start();
    st["last_key_group"] = h.range.end();
    st["size"] = h.size;
    st["state_bytes"] = s.StateBytes();
    st["written_bytes"] = s.written_bytes;
    nlohmann::json shared = nlohmann::json::array();
    for (const SharedStateFile& f : s.SharedFiles()) {
      shared.push_back({{"name", f.name}, {"size", f.size}, {"checksum", Hex64(f.checksum)}});
    }
    st["shared_files"] = std::move(shared);
    if (s.native_state) {
      st["native"] = {{"backend", s.native_state->backend},
                      {"format_version", s.native_state->format_version},
                      {"backend_id", s.native_state->backend_id},
                      {"private_files", s.native_state->private_files.size()},
                      {"total_keys", s.native_state->total_keys}};
    }
    st["checksum"] = Hex64(h.checksum);
    nlohmann::json groups = nlohmann::json::array();
    uint64_t keys = 0, timers = 0;
    for (KeyGroupId g : h.range.key_groups()) {
      const size_t k = static_cast<size_t>(h.range.IndexOf(g));
      groups.push_back({{"key_group", g.value()},
                        {"offset", h.offsets[k]},
                        {"bytes", h.lengths[k]},
                        {"keys", h.keys[k]},
                        {"timers", h.timers[k]}});
      keys += h.keys[k];
      timers += h.timers[k];
    }
    st["keys"] = keys;
    st["timers"] = timers;
    st["key_groups"] = std::move(groups);
    subtasks.push_back(std::move(st));
  }
  j["subtasks"] = std::move(subtasks);
  Totals t = ComputeTotals(m);
  j["totals"] = {
      {"files", t.files},           {"bytes", t.bytes}, {"written_bytes", t.written_bytes},
      {"key_groups", t.key_groups}, {"keys", t.keys},   {"timers", t.timers}};
  // Job ids, split ids and file names come from users: never throw on invalid UTF-8.
  out << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
}

}  // namespace

int RunCheckpointInspect(const std::vector<std::string>& args, std::ostream& out) {
  po::options_description opts;
  std::string path;
  bool json = false;
  opts.add_options()("path", po::value(&path)->required(),
                     "checkpoint/savepoint directory or its _metadata")(
      "json", po::bool_switch(&json), "print machine-readable JSON");
  po::positional_options_description pos;
  pos.add("path", 1);
  po::variables_map vm;
  int code;
  if (!ParseCommandLine(
          "usage: keyflow checkpoint inspect PATH [--json]\n"
          "Prints a checkpoint's or savepoint's metadata: job, id, type, times, max parallelism,\n"
          "parallelism, and per subtask its state file, key-group range and size, with offset,\n"
          "bytes, keys and timers of every key group. PATH is a chk-<n>/savepoint directory\n"
          "or its _metadata file.",
          opts, pos, args, &vm, &code)) {
    return code;
  }
  std::error_code ec;
  std::string absolute = std::filesystem::absolute(path, ec).lexically_normal().string();
  if (ec) absolute = path;
  while (absolute.size() > 1 && absolute.back() == '/') absolute.pop_back();
  const bool is_dir = std::filesystem::is_directory(absolute, ec);
  const std::string dir =
      is_dir ? absolute : std::filesystem::path(absolute).parent_path().string();

  Result<CheckpointMetadata> m = CheckpointStorage::ReadMetadata(absolute);
  if (!m.ok()) {
    return Fail(m.status().message() + "\n(not a usable checkpoint: restore from another one)",
                kExitFailure);
  }
  Status files = CheckpointStorage::VerifyStateFiles(dir, *m);
  if (json) {
    PrintJson(*m, dir, files, out);
  } else {
    PrintText(*m, dir, files, out);
  }
  if (!files.ok()) {
    return Fail(files.message() + "\n(the checkpoint cannot be restored: use an earlier one)",
                kExitFailure);
  }
  return kExitOk;
}

}  // namespace keyflow::cli
