#include "common/input/generator_spec.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <initializer_list>
#include <limits>

namespace keyflow {
namespace {

constexpr std::string_view kUsage = "gen:events=N,keys=K,splits=S[,seed=X,...]";
constexpr std::string_view kKnown =
    "events, keys, splits, seed, rate, disorder, start, step, skew, payload, note, hot, "
    "hot_share, hold";

std::string Quote(std::string_view s) {
  return "'" + std::string(s) + "'";
}

template <typename Int>
Result<Int> ParseInteger(std::string_view name, std::string_view text) {
  Int v{};
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec == std::errc::result_out_of_range) {
    return InvalidArgument("generator parameter " + Quote(name) +
                           " is out of range: " + std::string(text));
  }
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size()) {
    return InvalidArgument("generator parameter " + Quote(name) +
                           " must be a decimal integer, got " + Quote(text));
  }
  return v;
}

Result<double> ParseNumber(std::string_view name, std::string_view text) {
  double v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size() || !std::isfinite(v)) {
    return InvalidArgument("generator parameter " + Quote(name) + " must be a number, got " +
                           Quote(text));
  }
  return v;
}

Status MustBePositive(std::string_view name, int64_t v) {
  if (v > 0) return Status::Ok();
  return InvalidArgument("generator parameter " + Quote(name) + " must be > 0, got " +
                         std::to_string(v));
}

template <typename T>
Status MustBeNonNegative(std::string_view name, T v) {
  if (v >= 0) return Status::Ok();
  std::string text;
  if constexpr (std::is_floating_point_v<T>) {
    char buf[64];
    auto r = std::to_chars(buf, buf + sizeof(buf), v);
    text.assign(buf, r.ptr);
  } else {
    text = std::to_string(v);
  }
  return InvalidArgument("generator parameter " + Quote(name) + " must be >= 0, got " + text);
}

std::string FormatDouble(double v) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, r.ptr);
}

}  // namespace

int64_t GeneratorSpec::HotKeysInSplit(int32_t s) const {
  const int64_t keys_in_split = KeysInSplit(s);
  const auto hot_keys = static_cast<int64_t>(std::ceil(hot * static_cast<double>(keys_in_split)));
  return std::clamp<int64_t>(hot_keys, 1, keys_in_split);
}

std::string GeneratorSpec::ToString() const {
  std::string s = "gen:events=" + std::to_string(events) + ",keys=" + std::to_string(keys) +
                  ",splits=" + std::to_string(splits) + ",seed=" + std::to_string(seed) +
                  ",rate=" + FormatDouble(rate) + ",disorder=" + std::to_string(disorder_ms) +
                  ",start=" + std::to_string(start_ms) + ",step=" + std::to_string(step_ms) +
                  ",skew=" + FormatDouble(skew) + ",payload=" + std::to_string(payload_bytes) +
                  ",note=" + std::to_string(note_bytes);
  if (hot > 0) s += ",hot=" + FormatDouble(hot) + ",hot_share=" + FormatDouble(hot_share);
  if (!hold.empty()) s += ",hold=" + hold;
  return s;
}

Result<GeneratorSpec> ParseGeneratorSpec(std::string_view params) {
  GeneratorSpec spec;
  // Which parameters were given, in the order of kKnown.
  enum Param {
    kEvents,
    kKeys,
    kSplits,
    kSeed,
    kRate,
    kDisorder,
    kStart,
    kStep,
    kSkew,
    kPayload,
    kNote,
    kHot,
    kHotShare,
    kHold
  };
  constexpr std::string_view kNames[] = {"events",   "keys",  "splits",    "seed", "rate",
                                         "disorder", "start", "step",      "skew", "payload",
                                         "note",     "hot",   "hot_share", "hold"};
  bool seen[std::size(kNames)] = {};

  size_t pos = 0;
  while (pos <= params.size() && !params.empty()) {
    size_t comma = params.find(',', pos);
    if (comma == std::string_view::npos) comma = params.size();
    std::string_view item = params.substr(pos, comma - pos);
    pos = comma + 1;
    if (item.empty()) {
      return InvalidArgument("empty generator parameter in " + Quote(params) +
                             " (two commas in a row, or a trailing comma?)");
    }
    size_t eq = item.find('=');
    std::string_view name = item.substr(0, eq);
    if (eq == std::string_view::npos) {
      return InvalidArgument("generator parameter " + Quote(name) + " needs a value (" +
                             std::string(name) + "=...)");
    }
    std::string_view value = item.substr(eq + 1);
    int index = -1;
    for (size_t i = 0; i < std::size(kNames); ++i) {
      if (kNames[i] == name) index = static_cast<int>(i);
    }
    if (index < 0) {
      return InvalidArgument("unknown generator parameter " + Quote(name) +
                             "; known parameters: " + std::string(kKnown));
    }
    if (seen[index]) {
      return InvalidArgument("generator parameter " + Quote(name) + " is given twice");
    }
    seen[index] = true;
    switch (index) {
      case kEvents: {
        KF_ASSIGN_OR_RETURN(spec.events, ParseInteger<int64_t>(name, value));
        KF_RETURN_IF_ERROR(MustBePositive(name, spec.events));
        break;
      }
      case kKeys: {
        KF_ASSIGN_OR_RETURN(spec.keys, ParseInteger<int64_t>(name, value));
        KF_RETURN_IF_ERROR(MustBePositive(name, spec.keys));
        break;
      }
      case kSplits: {
        KF_ASSIGN_OR_RETURN(spec.splits, ParseInteger<int32_t>(name, value));
        KF_RETURN_IF_ERROR(MustBePositive(name, spec.splits));
        if (spec.splits > GeneratorSpec::kMaxSplits) {
          return InvalidArgument("generator parameter 'splits' must be <= " +
                                 std::to_string(GeneratorSpec::kMaxSplits) + ", got " +
                                 std::to_string(spec.splits));
        }
        break;
      }
      case kSeed: {
        KF_ASSIGN_OR_RETURN(spec.seed, ParseInteger<uint64_t>(name, value));
        break;
      }
      case kRate: {
        KF_ASSIGN_OR_RETURN(spec.rate, ParseNumber(name, value));
        KF_RETURN_IF_ERROR(MustBeNonNegative(name, spec.rate));
        break;
      }
      case kDisorder: {
        KF_ASSIGN_OR_RETURN(spec.disorder_ms, ParseInteger<int64_t>(name, value));
        KF_RETURN_IF_ERROR(MustBeNonNegative(name, spec.disorder_ms));
        break;
      }
      case kStart: {
        KF_ASSIGN_OR_RETURN(spec.start_ms, ParseInteger<int64_t>(name, value));
        break;
      }
      case kStep: {
        KF_ASSIGN_OR_RETURN(spec.step_ms, ParseInteger<int64_t>(name, value));
        KF_RETURN_IF_ERROR(MustBeNonNegative(name, spec.step_ms));
        break;
      }
      case kSkew: {
        KF_ASSIGN_OR_RETURN(spec.skew, ParseNumber(name, value));
        KF_RETURN_IF_ERROR(MustBeNonNegative(name, spec.skew));
        break;
      }
      case kPayload: {
        KF_ASSIGN_OR_RETURN(spec.payload_bytes, ParseInteger<int32_t>(name, value));
        KF_RETURN_IF_ERROR(MustBeNonNegative(name, spec.payload_bytes));
        if (spec.payload_bytes > GeneratorSpec::kMaxPayloadBytes) {
          return InvalidArgument("generator parameter 'payload' must be <= " +
                                 std::to_string(GeneratorSpec::kMaxPayloadBytes) + " bytes, got " +
                                 std::to_string(spec.payload_bytes));
        }
        break;
      }
      case kNote: {
        KF_ASSIGN_OR_RETURN(spec.note_bytes, ParseInteger<int32_t>(name, value));
        KF_RETURN_IF_ERROR(MustBeNonNegative(name, spec.note_bytes));
        if (spec.note_bytes > GeneratorSpec::kMaxPayloadBytes) {
          return InvalidArgument("generator parameter 'note' must be <= " +
                                 std::to_string(GeneratorSpec::kMaxPayloadBytes) + " bytes, got " +
                                 std::to_string(spec.note_bytes));
        }
        break;
      }
      case kHold: {
        if (value.empty() || value.front() != '/') {
          return InvalidArgument(
              "generator parameter 'hold' must be an absolute path (a file "
              "whose creation lets the input end), got " +
              Quote(value));
        }
        spec.hold = std::string(value);
        break;
      }
      case kHot:
      case kHotShare: {
        double& fraction = index == kHot ? spec.hot : spec.hot_share;
        KF_ASSIGN_OR_RETURN(fraction, ParseNumber(name, value));
        const bool zero_allowed = index == kHotShare;
        if (fraction > 1 || fraction < 0 || (fraction == 0 && !zero_allowed)) {
          return InvalidArgument("generator parameter " + Quote(name) + " is a fraction of " +
                                 (index == kHot ? "keys and must be > 0 and <= 1"
                                                : "records and must be >= 0 and <= 1") +
                                 ", got " + std::string(value));
        }
        break;
      }
    }
  }
  if (seen[kHotShare] && !seen[kHot]) {
    return InvalidArgument(
        "generator parameter 'hot_share' needs 'hot' (the fraction of keys that are hot), e.g. "
        "hot=0.01,hot_share=0.9");
  }
  if (spec.hot > 0 && spec.skew > 0) {
    return InvalidArgument(
        "generator parameters 'hot' and 'skew' cannot be combined: use a hot set or a Zipf skew");
  }
  for (Param required : {kEvents, kKeys, kSplits}) {
    if (!seen[required]) {
      return InvalidArgument("generator parameter " + Quote(kNames[required]) + " is missing (" +
                             std::string(kUsage) + ")");
    }
  }
  if (spec.keys < spec.splits) {
    return InvalidArgument("generator parameter 'keys' (" + std::to_string(spec.keys) +
                           ") must be >= 'splits' (" + std::to_string(spec.splits) +
                           "): every key belongs to exactly one split");
  }
  // The last event has timestamp start + (events - 1) * step + (disorder - 1) at most.
  int64_t span, last;
  if (__builtin_mul_overflow(spec.events - 1, spec.step_ms, &span) ||
      __builtin_add_overflow(spec.start_ms, span, &last) ||
      __builtin_add_overflow(last, spec.disorder_ms, &last)) {
    return InvalidArgument(
        "generator timestamps overflow: start + (events - 1) * step + disorder "
        "does not fit in "
        "a 64-bit integer; use a smaller start, step, disorder or events");
  }
  return spec;
}

}  // namespace keyflow
