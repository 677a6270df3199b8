#include "common/input/input_spec.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <memory>

#include "common/check.h"

namespace keyflow {
namespace {

constexpr std::string_view kGeneratorPrefix = "gen:";
constexpr std::string_view kMonitorPrefix = "monitor:";
constexpr std::string_view kIntervalOption = ",interval=";
constexpr std::string_view kConnectorPrefix = "connector:";

struct DirCloser {
  void operator()(DIR* d) const { ::closedir(d); }
};

}  // namespace

Result<std::vector<std::string>> InputSpec::ListFiles(const std::string& dir) {
  std::unique_ptr<DIR, DirCloser> d(::opendir(dir.c_str()));
  if (!d) return ErrnoError("cannot list input directory '" + dir + "'", errno);
  std::vector<std::string> names;
  errno = 0;
  while (struct dirent* e = ::readdir(d.get())) {
    std::string_view name = e->d_name;
    if (name.empty() || name[0] == '.' || name[0] == '_') continue;
    std::string path = dir;
    if (path.back() != '/') path += '/';
    path += name;
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) {
      if (errno == ENOENT) continue;  // deleted while listing, or a dangling symlink
      return ErrnoError("cannot stat input file '" + path + "'", errno);
    }
    if (S_ISREG(st.st_mode)) names.emplace_back(name);
    errno = 0;
  }
  if (errno != 0) return ErrnoError("cannot list input directory '" + dir + "'", errno);
  std::sort(names.begin(), names.end());
  for (std::string& name : names) {
    std::string path = dir;
    if (path.back() != '/') path += '/';
    name = path + name;
  }
  return names;
}

const GeneratorSpec& InputSpec::generator() const {
  KF_CHECK(kind_ == Kind::kGenerator) << "generator() of a file input";
  return generator_;
}

const std::string& InputSpec::monitored_directory() const {
  KF_CHECK(kind_ == Kind::kMonitor) << "monitored_directory() of another input";
  return directory_;
}

Duration InputSpec::monitor_interval() const {
  KF_CHECK(kind_ == Kind::kMonitor) << "monitor_interval() of another input";
  return monitor_interval_;
}

bool InputSpec::IsGenerator(std::string_view text) {
  return text.substr(0, kGeneratorPrefix.size()) == kGeneratorPrefix;
}

const KafkaSourceSpec& InputSpec::kafka() const {
  KF_CHECK(kind_ == Kind::kKafka) << "kafka() of another input";
  return kafka_;
}

const std::string& InputSpec::connector_name() const {
  KF_CHECK(kind_ == Kind::kConnector) << "connector_name() of another input";
  return connector_name_;
}

const std::string& InputSpec::connector_args() const {
  KF_CHECK(kind_ == Kind::kConnector) << "connector_args() of another input";
  return connector_args_;
}

bool InputSpec::IsConnector(std::string_view text) {
  return text.substr(0, kConnectorPrefix.size()) == kConnectorPrefix;
}

std::vector<SourceSplit> InputSpec::ConnectorSplits(const std::vector<std::string>& splits) {
  std::vector<SourceSplit> out;
  out.reserve(splits.size());
  for (size_t i = 0; i < splits.size(); ++i) {
    out.push_back(SourceSplit::Connector(SplitId(static_cast<int32_t>(i)), splits[i]));
  }
  return out;
}

bool InputSpec::IsKafka(std::string_view text) {
  return text.substr(0, KafkaSourceSpec::kPrefix.size()) == KafkaSourceSpec::kPrefix;
}

std::string InputSpec::Redacted(std::string_view text) {
  return IsKafka(text) ? KafkaSourceSpec::RedactText(text) : std::string(text);
}

bool InputSpec::IsMonitor(std::string_view text) {
  return text.substr(0, kMonitorPrefix.size()) == kMonitorPrefix;
}

std::string InputSpec::PathOf(std::string_view text) {
  if (IsGenerator(text) || IsKafka(text) || IsConnector(text)) return "";
  if (!IsMonitor(text)) return std::string(text);
  text.remove_prefix(kMonitorPrefix.size());
  const size_t option = text.rfind(kIntervalOption);
  return std::string(option == std::string_view::npos ? text : text.substr(0, option));
}

std::string InputSpec::WithAbsolutePath(std::string_view text) {
  if (IsGenerator(text) || IsKafka(text) || IsConnector(text) || text.empty()) {
    return std::string(text);
  }
  if (!IsMonitor(text)) return std::filesystem::absolute(std::string(text)).string();
  const std::string dir = PathOf(text);
  if (dir.empty()) return std::string(text);
  return std::string(kMonitorPrefix) + std::filesystem::absolute(dir).string() +
         std::string(text.substr(kMonitorPrefix.size() + dir.size()));
}

Result<InputSpec> InputSpec::ParseMonitor(std::string_view text) {
  InputSpec spec;
  spec.text_ = std::string(text);
  spec.kind_ = Kind::kMonitor;
  spec.directory_ = PathOf(text);
  std::string_view rest = text.substr(kMonitorPrefix.size() + spec.directory_.size());
  if (!rest.empty()) {
    rest.remove_prefix(kIntervalOption.size());
    Result<Duration> interval = ParseDuration(rest);
    if (!interval.ok() || interval->millis() <= 0) {
      return InvalidArgument("--input " + spec.text_ + ": interval '" + std::string(rest) +
                             "' is not a positive duration (e.g. 500ms, 10s, 1min)");
    }
    spec.monitor_interval_ = *interval;
  }
  if (spec.directory_.empty()) {
    return InvalidArgument("--input " + spec.text_ +
                           " names no directory: give monitor:DIR[,interval=DURATION]");
  }
  struct stat st;
  if (::stat(spec.directory_.c_str(), &st) != 0) {
    const int err = errno;
    if (err == ENOENT || err == ENOTDIR) {
      return NotFound("the directory to monitor '" + spec.directory_ +
                      "' does not exist: create it first (it may be empty)");
    }
    return ErrnoError("cannot access the directory to monitor '" + spec.directory_ + "'", err);
  }
  if (!S_ISDIR(st.st_mode)) {
    return InvalidArgument("--input " + spec.text_ + ": '" + spec.directory_ +
                           "' is not a directory (monitor: watches a directory for new files)");
  }
  KF_ASSIGN_OR_RETURN(std::vector<std::string> files, ListFiles(spec.directory_));
  for (size_t i = 0; i < files.size(); ++i) {
    spec.splits_.push_back(SourceSplit::File(SplitId(static_cast<int32_t>(i)), files[i]));
  }
  return spec;
}

Result<InputSpec> InputSpec::Parse(std::string_view text) {
  InputSpec spec;
  spec.text_ = std::string(text);
  if (text.empty()) {
    return InvalidArgument(
        "--input is empty: give a JSON Lines file, a directory of them, or "
        "gen:events=N,keys=K,splits=S");
  }
  if (IsGenerator(text)) {
    KF_ASSIGN_OR_RETURN(spec.generator_, ParseGeneratorSpec(text.substr(kGeneratorPrefix.size())));
    spec.kind_ = Kind::kGenerator;
    spec.splits_.reserve(static_cast<size_t>(spec.generator_.splits));
    for (int32_t s = 0; s < spec.generator_.splits; ++s) {
      spec.splits_.push_back(SourceSplit::Generator(SplitId(s), s));
    }
    return spec;
  }
  if (IsMonitor(text)) return ParseMonitor(text);
  if (IsKafka(text)) {
    KF_ASSIGN_OR_RETURN(spec.kafka_, KafkaSourceSpec::Parse(text));
    spec.kind_ = Kind::kKafka;
    return spec;
  }
  if (IsConnector(text)) {
    std::string_view rest = text.substr(kConnectorPrefix.size());
    const size_t colon = rest.find(':');
    spec.connector_name_ = std::string(rest.substr(0, colon));
    if (colon != std::string_view::npos) spec.connector_args_ = std::string(rest.substr(colon + 1));
    const bool valid =
        !spec.connector_name_.empty() &&
        std::all_of(spec.connector_name_.begin(), spec.connector_name_.end(), [](char c) {
          return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
        });
    if (!valid) {
      return InvalidArgument("--input " + spec.text_ +
                             ": give connector:NAME[:ARGS], NAME a source of the job library "
                             "(lowercase letters, digits and '-')");
    }
    spec.kind_ = Kind::kConnector;
    return spec;
  }

  spec.kind_ = Kind::kFiles;
  struct stat st;
  if (::stat(spec.text_.c_str(), &st) != 0) {
    int err = errno;
    if (err == ENOENT || err == ENOTDIR) {
      return NotFound("input '" + spec.text_ +
                      "' does not exist; give a JSON Lines file, a directory of them, or "
                      "gen:events=N,keys=K,splits=S");
    }
    return ErrnoError("cannot access input '" + spec.text_ + "'", err);
  }
  if (S_ISREG(st.st_mode)) {
    spec.splits_.push_back(SourceSplit::File(SplitId(0), spec.text_));
    return spec;
  }
  if (!S_ISDIR(st.st_mode)) {
    return InvalidArgument("input '" + spec.text_ + "' is neither a regular file nor a directory");
  }
  KF_ASSIGN_OR_RETURN(std::vector<std::string> files, ListFiles(spec.text_));
  if (files.empty()) {
    return InvalidArgument("input directory '" + spec.text_ +
                           "' contains no input files (only regular files whose names do not "
                           "start with '.' or '_' are read)");
  }
  spec.splits_.reserve(files.size());
  for (size_t i = 0; i < files.size(); ++i) {
    spec.splits_.push_back(SourceSplit::File(SplitId(static_cast<int32_t>(i)), files[i]));
  }
  return spec;
}

}  // namespace keyflow
