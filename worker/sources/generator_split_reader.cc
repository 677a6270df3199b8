#include "worker/sources/generator_split_reader.h"

#include <sys/stat.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>

#include "common/check.h"

namespace keyflow {
namespace {

// These constants and the functions below define the generator's output: changing any of them
// changes every generated stream (and breaks restoring generator positions of old checkpoints in
// the sense that the events after them differ). Do not change them.
constexpr uint64_t kGamma = 0x9E3779B97F4A7C15ull;  // SplitMix64's Weyl increment
constexpr uint64_t kSplitSalt = 0xD1B54A32D192ED03ull;
constexpr uint64_t kJitterSalt = 0x2545F4914F6CDD1Dull;
constexpr uint64_t kPayloadSalt = 0x94D049BB133111EBull;
constexpr uint64_t kAmountSalt = 0xBF58476D1CE4E5B9ull;
constexpr uint64_t kHotSalt = 0x9FB21C651E98DF25ull;
constexpr int64_t kAmountRange = 1000;
constexpr double kEpsilon = 1e-9;  // absorbs rounding in the pacing arithmetic

// SplitMix64's output function: a bijective 64-bit mixer.
inline uint64_t Mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// floor(h * n / 2^64): a uniform value in [0, n) from a uniform 64-bit hash.
inline int64_t Scale(uint64_t h, int64_t n) {
  return static_cast<int64_t>((static_cast<__uint128_t>(h) * static_cast<uint64_t>(n)) >> 64);
}

// Eight letters 'a'..'z' from the eight bytes of `w`: byte b -> 'a' + (b * 26 >> 8), computed in
// 16-bit lanes (no carries between lanes: 255 * 26 < 2^16).
inline void LettersFromWord(uint64_t w, uint8_t out[8]) {
  constexpr uint64_t kLanes = 0x00FF00FF00FF00FFull;
  uint64_t even = (((w & kLanes) * 26) >> 8) & kLanes;
  uint64_t odd = ((((w >> 8) & kLanes) * 26) >> 8) & kLanes;
  uint64_t letters = (even | (odd << 8)) + 0x6161616161616161ull;  // + 'a' in every byte
  std::memcpy(out, &letters, 8);
}

// n letters [a-z] derived from `h` into p.
void FillLetters(uint64_t h, char* p, int32_t n) {
  uint64_t state = h ^ kPayloadSalt;
  for (int32_t i = 0; i < n; i += 8) {
    uint8_t letters[8];
    LettersFromWord(Mix(state += kGamma), letters);
    std::memcpy(p + i, letters, static_cast<size_t>(std::min(8, n - i)));
  }
}

}  // namespace

Result<GeneratorSplitReader> GeneratorSplitReader::Create(const GeneratorSpec& spec,
                                                          int32_t split_index,
                                                          const KeyGroupAssigner& assigner,
                                                          SplitPosition from, const Clock* clock,
                                                          const GeneratorRecordFormat& format) {
  if (assigner.key_type() != KeyType::kString) {
    return InvalidArgument(
        "the generator (--input gen:...) produces string "
        "keys, but the key type "
        "is " +
        std::string(KeyTypeName(assigner.key_type())) + "; use --key-type string");
  }
  if (split_index < 0 || split_index >= spec.splits) {
    return InvalidArgument("generator split " + std::to_string(split_index) + " does not exist: " +
                           spec.ToString() + " has " + std::to_string(spec.splits) +
                           " splits; was --input changed since the checkpoint?");
  }
  KF_CHECK(spec.events > 0 && spec.keys >= spec.splits && spec.disorder_ms >= 0 &&
           spec.step_ms >= 0 && spec.payload_bytes >= 0 && spec.rate >= 0 && spec.skew >= 0 &&
           spec.hot >= 0 && spec.hot <= 1 && spec.hot_share >= 0 && spec.hot_share <= 1 &&
           !(spec.hot > 0 && spec.skew > 0))
      << "unvalidated generator spec " << spec.ToString();
  KF_CHECK((spec.rate == 0 && spec.hold.empty()) || clock != nullptr)
      << "a rate-limited or held generator needs a clock";
  GeneratorSplitReader r(spec, split_index, assigner);
  if (format.with_fields) {
    r.with_fields_ = true;
    r.key_field_ = format.key_field;
    r.ts_field_ = format.timestamp_field;
    if (!format.fields.empty()) {
      auto listed = [&](std::string_view name) {
        return std::find(format.fields.begin(), format.fields.end(), name) != format.fields.end();
      };
      r.write_key_ = listed(r.key_field_);
      r.write_ts_ = listed(r.ts_field_);
      r.write_amount_ = listed("amount");
      r.write_note_ = listed("note");
    }
  }
  if (from.next_event_index() > r.size_) {
    return InvalidArgument("cannot resume generator split " + std::to_string(split_index) +
                           " at event " + std::to_string(from.next_event_index()) +
                           ": it has only " + std::to_string(r.size_) + " events (" +
                           spec.ToString() + "); was --input changed since the checkpoint?");
  }
  r.next_ = from.next_event_index();
  r.hold_ = spec.hold;
  r.clock_ = clock;
  if (spec.rate > 0) {
    r.per_ms_ = spec.rate / spec.splits / 1000.0;
    r.max_burst_ = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(r.per_ms_ * 1000.0)));
    r.budget_ = 0;
  } else {
    r.budget_ = std::numeric_limits<int64_t>::max();
  }
  return r;
}

GeneratorSplitReader::GeneratorSplitReader(const GeneratorSpec& spec, int32_t split,
                                           const KeyGroupAssigner& assigner)
    : assigner_(assigner),
      split_(split),
      splits_(spec.splits),
      size_(spec.EventsInSplit(split)),
      keys_in_split_(spec.KeysInSplit(split)),
      start_ms_(spec.start_ms),
      step_ms_(spec.step_ms),
      disorder_ms_(spec.disorder_ms),
      payload_bytes_(spec.payload_bytes),
      note_bytes_(spec.note_bytes),
      split_base_(Mix(Mix(spec.seed) + static_cast<uint64_t>(split) * kSplitSalt)),
      skewed_(spec.skew > 0) {
  if (spec.hot > 0) {
    hot_keys_in_split_ = spec.HotKeysInSplit(split);
    hot_share_ = spec.hot_share;
  }
  if (skewed_) {
    // Inverse CDF of the density x^-Z on [1, n+1): x = (1 + u*((n+1)^a - 1))^(1/a), a = 1-Z; for Z
    // = 1: x = (n+1)^u. Rank = floor(x) - 1.
    double n1 = static_cast<double>(keys_in_split_) + 1.0;
    zipf_a_ = 1.0 - spec.skew;
    if (std::fabs(zipf_a_) < 1e-12) {
      zipf_log_n1_ = std::log(n1);
    } else {
      zipf_inv_a_ = 1.0 / zipf_a_;
      zipf_c_ = std::pow(n1, zipf_a_) - 1.0;
    }
  }
}

int64_t GeneratorSplitReader::ZipfRank(uint64_t hash) const {
  double u = static_cast<double>(hash >> 11) * 0x1.0p-53;  // [0, 1)
  double x =
      zipf_log_n1_ != 0 ? std::exp(u * zipf_log_n1_) : std::pow(1.0 + u * zipf_c_, zipf_inv_a_);
  int64_t rank = static_cast<int64_t>(x) - 1;
  if (rank < 0) return 0;
  if (rank >= keys_in_split_) return keys_in_split_ - 1;
  return rank;
}

int64_t GeneratorSplitReader::HotSetRank(int64_t index, uint64_t hash) const {
  if (index < keys_in_split_) return index;                                      // the first pass
  const double u = static_cast<double>(Mix(hash ^ kHotSalt) >> 11) * 0x1.0p-53;  // [0, 1)
  return Scale(hash, u < hot_share_ ? hot_keys_in_split_ : keys_in_split_);
}

void GeneratorSplitReader::EventAt(int64_t index, Record* out) const {
  KF_DCHECK(index >= 0 && index < size_);
  const uint64_t h = Mix(split_base_ + static_cast<uint64_t>(index + 1) * kGamma);

  const int64_t rank = skewed_                  ? ZipfRank(h)
                       : hot_keys_in_split_ > 0 ? HotSetRank(index, h)
                                                : Scale(h, keys_in_split_);
  const int64_t k = rank * splits_ + split_;
  char text[24] = {'u', 'i', 'd', '-'};
  char* end = std::to_chars(text + 4, text + sizeof(text), k).ptr;
  std::string_view key(text, static_cast<size_t>(end - text));
  KeyGroupId group;
  KF_CHECK(assigner_.AssignString(key, &group));
  out->key = Key::FromBytes(key);
  out->key_group = group;

  const int64_t g = index * splits_ + split_;
  const int64_t jitter = disorder_ms_ > 0 ? Scale(Mix(h ^ kJitterSalt), disorder_ms_) : 0;
  out->timestamp = Timestamp(start_ms_ + g * step_ms_ + jitter);

  if (with_fields_) {
    WriteFields(h, key, out->timestamp, out);
    return;
  }
  out->fields.clear();
  if (payload_bytes_ == 0) {
    out->payload.clear();
    return;
  }
  out->payload.resize(static_cast<size_t>(payload_bytes_));
  FillLetters(h, out->payload.data(), payload_bytes_);
}

void GeneratorSplitReader::WriteFields(uint64_t h, std::string_view key, Timestamp timestamp,
                                       Record* out) const {
  out->payload.clear();  // raw_json() renders the tape
  tape_.Reset(&out->fields);
  tape_.BeginObject();
  if (write_key_) {
    tape_.Name(key_field_);
    tape_.String(key);
  }
  if (write_ts_) {
    tape_.Name(ts_field_);
    tape_.Int(timestamp.millis());
  }
  if (write_amount_) {
    tape_.Name("amount");
    tape_.Int(Scale(Mix(h ^ kAmountSalt), kAmountRange));
  }
  if (note_bytes_ > 0) {
    // The note is made even when the job's projection drops it: it stands for input bytes a
    // real source reads and parses before it can drop them, so the benchmark pays for it.
    note_.resize(static_cast<size_t>(note_bytes_));
    FillLetters(h, note_.data(), note_bytes_);
    if (write_note_) {
      tape_.Name("note");
      tape_.String(note_);
    }
  }
  tape_.EndObject();
}

bool GeneratorSplitReader::Held() {
  if (hold_.empty()) return false;
  struct stat st {};
  if (::stat(hold_.c_str(), &st) == 0) {
    hold_.clear();  // released: the split ends
    return false;
  }
  next_available_ = Timestamp(clock_->Now().millis() + 50);
  return true;
}

bool GeneratorSplitReader::Refill() {
  const int64_t now = clock_->Now().millis();
  if (!started_) {
    started_ = true;
    anchor_ms_ = now;
    emitted_ = 0;
  }
  auto allowed_at = [&](int64_t t) {
    return static_cast<int64_t>(
               std::floor(static_cast<double>(t - anchor_ms_) * per_ms_ + kEpsilon)) +
           1;
  };
  int64_t available = allowed_at(now) - emitted_;
  if (available > max_burst_) {
    // Idle (or backpressured) for a while: allow one second's worth now, not the backlog.
    anchor_ms_ = now;
    emitted_ = 1 - max_burst_;
    available = max_burst_;
  }
  if (available > 0) {
    budget_ = available;
    return true;
  }
  // allowed_at(t) >= emitted_ + 1  <=>  (t - anchor) * per_ms >= emitted_
  budget_ = 0;
  next_available_ =
      Timestamp(anchor_ms_ + static_cast<int64_t>(
                                 std::ceil(static_cast<double>(emitted_) / per_ms_ - kEpsilon)));
  if (next_available_.millis() <= now) next_available_ = Timestamp(now + 1);
  return false;
}

}  // namespace keyflow
