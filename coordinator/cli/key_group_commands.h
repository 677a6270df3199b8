// `keyflow ranges` and `keyflow key-group`: where keys and key groups live for a given
// parallelism and max parallelism (Flink's KeyGroupRangeAssignment, common/key_group_assignment.h).
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace keyflow::cli {

// keyflow ranges --max-parallelism M --parallelism P
// Prints "INDEX START END" per subtask.
int RunRangesCommand(const std::vector<std::string>& args, std::istream& in, std::ostream& out);

// keyflow key-group [--max-parallelism M] [--parallelism P] [--key-type T] [KEY...]
// Prints "KEY\tKEYGROUP\tSUBTASK" per key; reads keys from `in` (one per line) without KEY args.
int RunKeyGroupCommand(const std::vector<std::string>& args, std::istream& in, std::ostream& out);

}  // namespace keyflow::cli
