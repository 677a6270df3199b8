#include "coordinator/cli/key_group_commands.h"

#include <iostream>
#include <optional>

#include "common/key_group_assignment.h"
#include "common/process/command_line.h"

namespace keyflow::cli {

int RunRangesCommand(const std::vector<std::string>& args, std::istream&, std::ostream& out) {
  po::options_description opts;
  int64_t max_parallelism = 0, parallelism = 0;
  opts.add_options()("max-parallelism,m", po::value(&max_parallelism)->required(),
                     "number of key groups M (1..32768)")(
      "parallelism,p", po::value(&parallelism)->required(), "number of subtasks P (1..M)");
  po::variables_map vm;
  int code;
  if (!ParseCommandLine("usage: keyflow ranges --max-parallelism M --parallelism P\n"
                        "Prints one line per subtask: INDEX START END (inclusive).",
                        opts, {}, args, &vm, &code)) {
    return code;
  }
  Status valid = ValidateParallelism(parallelism, max_parallelism);
  if (!valid.ok()) return Fail(valid, kExitUsage);
  auto ranges = CreateKeyGroupPartitions(static_cast<int32_t>(max_parallelism),
                                         static_cast<int32_t>(parallelism));
  for (size_t i = 0; i < ranges.size(); ++i) {
    out << i << ' ' << ranges[i].start() << ' ' << ranges[i].end() << '\n';
  }
  return kExitOk;
}

int RunKeyGroupCommand(const std::vector<std::string>& args, std::istream& in, std::ostream& out) {
  po::options_description opts;
  int64_t max_parallelism = kDefaultLowerBoundMaxParallelism;
  std::optional<int64_t> parallelism;
  std::string key_type_name = "string";
  std::vector<std::string> positional_keys;
  opts.add_options()("max-parallelism", po::value(&max_parallelism)->default_value(max_parallelism),
                     "number of key groups M (1..32768)")(
      "parallelism", po::value<int64_t>(), "number of subtasks P; adds the owning subtask")(
      "key-type", po::value(&key_type_name)->default_value(key_type_name),
      "string | int | long (Java String/Integer/Long hashCode)")(
      "key", po::value(&positional_keys), "keys (positional); none: read keys from stdin");
  po::positional_options_description pos;
  pos.add("key", -1);
  po::variables_map vm;
  int code;
  if (!ParseCommandLine(
          "usage: keyflow key-group [--max-parallelism M] [--parallelism P] "
          "[--key-type string|int|long] [KEY...]\n"
          "Prints one line per key: KEY<TAB>KEYGROUP<TAB>SUBTASK (SUBTASK is '-' without "
          "--parallelism).\nWith no KEY arguments, reads keys from stdin, one per line.",
          opts, pos, args, &vm, &code, kLongOptionsOnly)) {
    return code;
  }
  if (vm.count("parallelism")) parallelism = vm["parallelism"].as<int64_t>();
  const std::vector<std::string>& keys = positional_keys;

  Status valid = parallelism ? ValidateParallelism(*parallelism, max_parallelism)
                             : ValidateMaxParallelism(max_parallelism);
  if (!valid.ok()) return Fail(valid, kExitUsage);
  Result<KeyType> key_type = ParseKeyType(key_type_name);
  if (!key_type.ok()) return Fail(key_type.status(), kExitUsage);

  int bad = 0;
  auto emit = [&](const std::string& text, const std::string& where) {
    Result<Key> key = ParseKey(text, *key_type);
    if (!key.ok()) {
      std::cerr << "keyflow: " << where << key.status().message() << "\n";
      ++bad;
      return;
    }
    Result<KeyGroupId> g = AssignToKeyGroup(*key, *key_type, static_cast<int32_t>(max_parallelism));
    if (!g.ok()) {
      std::cerr << "keyflow: " << where << g.status().message() << "\n";
      ++bad;
      return;
    }
    out << text << '\t' << g->value() << '\t';
    if (parallelism) {
      out << ComputeOperatorIndexForKeyGroup(static_cast<int32_t>(max_parallelism),
                                             static_cast<int32_t>(*parallelism), *g)
                 .value();
    } else {
      out << '-';
    }
    out << '\n';
  };

  if (!keys.empty()) {
    for (const auto& k : keys) emit(k, "");
  } else {
    std::string line;
    int64_t line_no = 0;
    while (std::getline(in, line)) {
      ++line_no;
      if (!line.empty() && line.back() == '\r') line.pop_back();
      emit(line, "stdin line " + std::to_string(line_no) + ": ");
    }
  }
  if (bad > 0) {
    std::cerr << "keyflow: " << bad << " key(s) rejected\n";
    return kExitUsage;
  }
  return kExitOk;
}

}  // namespace keyflow::cli
