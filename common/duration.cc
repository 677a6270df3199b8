#include "common/duration.h"

#include <cctype>
#include <charconv>

namespace keyflow {

Result<Duration> ParseDuration(std::string_view text) {
  std::string_view s = text;
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  size_t digits = 0;
  while (digits < s.size() && std::isdigit(static_cast<unsigned char>(s[digits]))) ++digits;
  auto bad = [&](const std::string& why) {
    return InvalidArgument("invalid duration '" + std::string(text) + "': " + why +
                           " (examples: 500ms, 10s, 5min, 12h, 1d)");
  };
  if (digits == 0) return bad("it must start with a non-negative whole number");
  int64_t n = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + digits, n);
  if (ec != std::errc() || ptr != s.data() + digits) return bad("the number is too large");
  std::string_view unit = s.substr(digits);
  while (!unit.empty() && unit.front() == ' ') unit.remove_prefix(1);
  int64_t mult;
  if (unit.empty() || unit == "ms" || unit == "milli" || unit == "millis") {
    mult = 1;
  } else if (unit == "s" || unit == "sec" || unit == "secs" || unit == "second" ||
             unit == "seconds") {
    mult = 1000;
  } else if (unit == "m" || unit == "min" || unit == "mins" || unit == "minute" ||
             unit == "minutes") {
    mult = 60'000;
  } else if (unit == "h" || unit == "hour" || unit == "hours") {
    mult = 3'600'000;
  } else if (unit == "d" || unit == "day" || unit == "days") {
    mult = 86'400'000;
  } else {
    return bad("unknown unit '" + std::string(unit) + "'");
  }
  int64_t ms;
  if (__builtin_mul_overflow(n, mult, &ms)) return bad("the value is too large");
  return Duration::Millis(ms);
}

std::string FormatDuration(Duration d) {
  int64_t ms = d.millis();
  if (ms != 0) {
    if (ms % 86'400'000 == 0) return std::to_string(ms / 86'400'000) + "d";
    if (ms % 3'600'000 == 0) return std::to_string(ms / 3'600'000) + "h";
    if (ms % 60'000 == 0) return std::to_string(ms / 60'000) + "min";
    if (ms % 1000 == 0) return std::to_string(ms / 1000) + "s";
  }
  return std::to_string(ms) + "ms";
}

}  // namespace keyflow
