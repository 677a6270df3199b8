// InputSpec: what --input names, resolved into the job's list of source splits.
//
//   --input FILE        one JSON Lines file, one split
//   --input DIR         every regular file directly in DIR, sorted by name (byte order), one split
//                       each; names starting with '.' or '_' are skipped (hidden and in-progress
//                       files, as Flink's DefaultFileFilter and our own file sink write them);
//                       subdirectories are not read
//   --input gen:...     the built-in generator (generator_spec.h), one split per generator split
//
// A path that starts with "gen:" can be given as "./gen:...". Split ids are the indexes into
// splits(), so they are the same in every process that parses the same --input.
//
// Used by the worker when it deploys the source subtask, by the CLI to validate --input before
// submitting, and by the coordinator to check a submitted gen: spec (in common/ because the
// coordinator must not depend on the worker module). Parse() reads the file system (stat,
// readdir) and nothing else. Value type.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/input/generator_spec.h"
#include "common/input/source_split.h"
#include "common/status.h"

namespace keyflow {

class InputSpec {
 public:
  enum class Kind : uint8_t { kFiles, kGenerator };

  // Errors (InvalidArgument unless said otherwise): empty text; NotFound for a missing path;
  // a path that is neither a regular file nor a directory; a directory without input files;
  // IoError when the directory cannot be listed; every generator error of ParseGeneratorSpec.
  static Result<InputSpec> Parse(std::string_view text);
  // Whether `text` names the generator ("gen:..."); Parse reads no file for it.
  static bool IsGenerator(std::string_view text);

  Kind kind() const { return kind_; }
  const std::string& text() const { return text_; }
  // Never empty. File splits in name order; generator splits 0..S-1.
  const std::vector<SourceSplit>& splits() const { return splits_; }
  // Precondition: kind() == kGenerator.
  const GeneratorSpec& generator() const;

 private:
  Kind kind_ = Kind::kFiles;
  std::string text_;
  std::vector<SourceSplit> splits_;
  GeneratorSpec generator_;
};

}  // namespace keyflow
