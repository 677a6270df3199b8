// Parsing and printing of durations in flags and job parameters: "250ms", "1s", "10min",
// "12h", "2d"; a bare number means milliseconds (as Flink's TimeUtils.parseDuration).
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"
#include "common/types.h"

namespace keyflow {

// Accepted units: ms|milli|millis, s|sec|secs|second|seconds, m|min|mins|minute|minutes,
// h|hour|hours, d|day|days. Negative values and overflow are rejected.
Result<Duration> ParseDuration(std::string_view text);

// The shortest exact rendering: 43200000 -> "12h", 1500 -> "1500ms".
std::string FormatDuration(Duration d);

}  // namespace keyflow
