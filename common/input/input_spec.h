// InputSpec: what --input names, resolved into the job's list of source splits.
//
//   --input FILE        one JSON Lines file, one split
//   --input DIR         every regular file directly in DIR, sorted by name (byte order), one split
//                       each; names starting with '.' or '_' are skipped (hidden and in-progress
//                       files, as Flink's DefaultFileFilter and our own file sink write them);
//                       subdirectories are not read
//   --input gen:...     the built-in generator (generator_spec.h), one split per generator split
//   --input monitor:DIR[,interval=DURATION]
//                       DIR watched continuously (a never-ending source): the files in it now
//                       and every file that appears later, one split each, with the same
//                       name rules as DIR; the directory is listed every `interval` (default
//                       10s). DIR may be empty at the start. Put files in by rename (write them
//                       elsewhere or under a '.'/'_' name first): a file is read as it was when
//                       its split was opened.
//   --input kafka:bootstrap=HOST:PORT,topic=T[,...]
//                       the partitions of Kafka topics (kafka_spec.h), one split each; a
//                       never-ending source unless stop=latest. Parse contacts no broker: the
//                       coordinator's split enumerator discovers the partitions.
//   --input connector:NAME[:ARGS]
//                       a source of the job's library (worker/api/source_connector.h): its
//                       splits are ARGS's, listed once at submit by `keyflow run` (which loads
//                       the library) into JobSpec::connector_splits; Parse reads nothing.
//
// A path that starts with "gen:", "monitor:", "kafka:" or "connector:" can be given as
// "./gen:...". Split ids are
// the indexes into splits(), so they are the same in every process that parses the same --input
// (for a monitored directory: of the files present at the parse; later files get the ids the
// coordinator's split enumerator gives them).
//
// Used by the worker when it deploys the source subtask, by the CLI to validate --input before
// submitting, and by the coordinator to check a submitted gen: spec (in common/ because the
// coordinator must not depend on the worker module). Parse() reads the file system (stat,
// readdir) and nothing else. Value type.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/duration.h"
#include "common/input/generator_spec.h"
#include "common/input/kafka_spec.h"
#include "common/input/source_split.h"
#include "common/status.h"

namespace keyflow {

class InputSpec {
 public:
  enum class Kind : uint8_t { kFiles, kGenerator, kMonitor, kKafka, kConnector };
  static constexpr Duration kDefaultMonitorInterval = Duration::Millis(10'000);

  // Errors (InvalidArgument unless said otherwise): empty text; NotFound for a missing path;
  // a path that is neither a regular file nor a directory; a directory without input files;
  // IoError when the directory cannot be listed; every generator error of ParseGeneratorSpec;
  // for monitor: a bad interval, or DIR missing or not a directory (an empty one is fine).
  static Result<InputSpec> Parse(std::string_view text);
  // Whether `text` names the generator ("gen:..."); Parse reads no file for it.
  static bool IsGenerator(std::string_view text);
  // Whether `text` names a monitored directory ("monitor:...").
  static bool IsMonitor(std::string_view text);
  // Whether `text` names Kafka topics ("kafka:..."); Parse reads no file for it.
  static bool IsKafka(std::string_view text);
  // Whether `text` names a job library's source ("connector:..."); Parse reads nothing for it.
  static bool IsConnector(std::string_view text);
  // The splits of a connector input, from JobSpec::connector_splits: split i has id i.
  static std::vector<SourceSplit> ConnectorSplits(const std::vector<std::string>& splits);
  // The file-system path `text` reads (the file or directory, DIR of monitor:DIR,...), empty
  // for the generator. Reads no file; a malformed monitor spec gives what follows "monitor:".
  static std::string PathOf(std::string_view text);
  // `text` with its path made absolute against the working directory (the generator as it is):
  // what a client sends, since workers and the coordinator resolve paths elsewhere.
  static std::string WithAbsolutePath(std::string_view text);

  // `text` as logs, errors and status may show it: a Kafka spec's secret properties are
  // replaced by "***" (KafkaSourceSpec::RedactText); other inputs as they are.
  static std::string Redacted(std::string_view text);

  // The regular files directly in `dir` (following symlinks) whose names do not start with
  // '.' or '_', as paths "dir/name", sorted by name. IoError if it cannot be listed.
  static Result<std::vector<std::string>> ListFiles(const std::string& dir);

  Kind kind() const { return kind_; }
  const std::string& text() const { return text_; }
  // Never empty, except for a monitored directory and Kafka (discovered by the coordinator) and
  // a connector (JobSpec::connector_splits, see ConnectorSplits). File
  // splits in name order; generator splits 0..S-1.
  const std::vector<SourceSplit>& splits() const { return splits_; }
  // Precondition: kind() == kGenerator.
  const GeneratorSpec& generator() const;
  // Precondition (both): kind() == kMonitor.
  const std::string& monitored_directory() const;
  Duration monitor_interval() const;
  // Precondition: kind() == kKafka.
  const KafkaSourceSpec& kafka() const;
  // Precondition (both): kind() == kConnector. NAME and ARGS of connector:NAME[:ARGS].
  const std::string& connector_name() const;
  const std::string& connector_args() const;

 private:
  static Result<InputSpec> ParseMonitor(std::string_view text);

  Kind kind_ = Kind::kFiles;
  std::string text_;
  std::vector<SourceSplit> splits_;
  GeneratorSpec generator_;
  std::string directory_;  // kMonitor
  Duration monitor_interval_ = kDefaultMonitorInterval;
  KafkaSourceSpec kafka_;
  std::string connector_name_;  // kConnector
  std::string connector_args_;
};

}  // namespace keyflow
