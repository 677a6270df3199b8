// Helpers shared by the fuzz targets (tests/fuzz/*_fuzzer.cc) and the seed generator
// (fuzz_seeds_main.cc): the count-window operator whose snapshot sections the snapshot targets
// restore into, and "resealing" — recomputing the checksums of a mutated input so the fuzzer
// reaches the parsing behind them instead of stopping at the first checksum mismatch.
//
// Every target reads a one-byte mode first (documented in the target); the rest is the input.
// Properties are asserted with KF_CHECK, which aborts: libFuzzer then reports a crash.
#pragma once

#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "checkpoint/checksummed_envelope.h"
#include "common/binary_io.h"
#include "common/hashing.h"
#include "common/job_library/job_library.h"
#include "state/snapshot/keyed_snapshot_format.h"
#include "worker/testing/keyed_operator_test_harness.h"

namespace keyflow::fuzz {

inline constexpr int32_t kMaxParallelism = 128;

// The input of one fuzz iteration: a mode byte and the remaining bytes.
struct FuzzInput {
  uint8_t mode = 0;
  std::string_view bytes;

  static FuzzInput From(const uint8_t* data, size_t size) {
    FuzzInput in;
    if (size > 0) {
      in.mode = data[0];
      in.bytes = std::string_view(reinterpret_cast<const char*>(data) + 1, size - 1);
    }
    return in;
  }
};

// The file a decoder of envelope files reads: the input's bytes as they are (mode bit 0 = 0), or
// as the body of a valid envelope of `magic` and `version` (mode bit 0 = 1), so that the fuzzer
// reaches the parsing behind the checksum.
inline std::string FileOrSealedBody(const FuzzInput& in, std::string_view magic, uint32_t version) {
  return (in.mode & 1) ? EncodeChecksummedEnvelope(magic, version, in.bytes)
                       : std::string(in.bytes);
}

// A decoder refuses bytes with Corruption, or FailedPrecondition (another format version).
inline void CheckDecodeError(const Status& s) {
  KF_CHECK(s.code() == StatusCode::kCorruption || s.code() == StatusCode::kFailedPrecondition)
      << s.ToString();
}

// A restore refuses bytes with Corruption, FailedPrecondition or OutOfRange.
inline void CheckRestoreError(const Status& s) {
  KF_CHECK(s.code() == StatusCode::kCorruption || s.code() == StatusCode::kFailedPrecondition ||
           s.code() == StatusCode::kOutOfRange)
      << s.ToString();
}

// Decodes T values (T::DecodeFrom) one after the other from `bytes` until the bytes end or one
// fails, which must be with Corruption. `check` sees each value, which must then round-trip
// through EncodeTo and DecodeFrom to an equal value (`what` names it when it does not).
template <typename T, typename Check>
void CheckEachDecodedValueRoundTrips(std::string_view bytes, const char* what, Check check) {
  BinaryReader reader(bytes);
  while (!reader.at_end()) {
    Result<T> value = T::DecodeFrom(&reader);
    if (!value.ok()) {
      KF_CHECK(value.status().code() == StatusCode::kCorruption) << value.status().ToString();
      return;
    }
    check(*value);
    std::string encoded;
    BinaryWriter writer(&encoded);
    value->EncodeTo(&writer);
    BinaryReader again(encoded);
    Result<T> decoded = T::DecodeFrom(&again);
    KF_CHECK(decoded.ok()) << decoded.status().ToString();
    KF_CHECK(again.at_end());
    KF_CHECK(*decoded == *value) << what << " changed in an encode/decode round trip";
  }
}

inline KeyType KeyTypeOf(uint8_t selector) {
  return static_cast<KeyType>(selector % 3);
}

// A count-window operator (count 3, timeout 1 h) in a harness with parallelism `parallelism`,
// as subtask `subtask`, already opened: its snapshot_sections() are the real state + timer
// sections a worker restores.
inline std::unique_ptr<KeyedOperatorTestHarness> MakeCountWindowHarness(KeyType key_type,
                                                                        bool event_time,
                                                                        int32_t parallelism = 1,
                                                                        int32_t subtask = 0) {
  // The built-in job library stays loaded for the fuzzer's lifetime: unloading it after each
  // input (its last function gone) would leave libFuzzer's coverage counters of that shared
  // object pointing at unmapped memory (a SEGV in TracePC, not in our code).
  static const std::shared_ptr<const JobLibrary> kKeepLoaded = [] {
    auto library = LoadDefaultJobLibrary();
    KF_CHECK(library.ok()) << library.status().ToString();
    return *library;
  }();
  std::map<std::string, std::string> params = {
      {"count", "3"}, {"timeout", "1h"}, {"time", event_time ? "event" : "processing"}};
  auto function = CreateBuiltInJobFunction("count-window", params);
  KF_CHECK(function.ok()) << function.status().ToString();
  KeyedOperatorTestHarness::Options options;
  options.key_type = key_type;
  options.max_parallelism = kMaxParallelism;
  options.parallelism = parallelism;
  options.subtask = subtask;
  options.params = params;
  auto harness = std::make_unique<KeyedOperatorTestHarness>(std::move(function).value(), options);
  Status opened = harness->Open();
  KF_CHECK(opened.ok()) << opened.ToString();
  return harness;
}

namespace internal {

template <typename T>
bool ReadAt(const std::string& s, size_t offset, T* v) {
  if (offset > s.size() || s.size() - offset < sizeof(T)) return false;
  std::memcpy(v, s.data() + offset, sizeof(T));
  return true;
}

inline void PutChecksum(std::string* s, size_t covered_from, size_t at) {
  uint64_t sum = Checksum64(s->data() + covered_from, at - covered_from);
  std::memcpy(s->data() + at, &sum, 8);
}

}  // namespace internal

// Recomputes every checksum of a keyed snapshot (state/snapshot/keyed_snapshot_format.h) whose
// position can still be found: footer, header, index and each block the index points to.
// Leaves the bytes alone where the structure is too broken to locate a checksum.
inline void ResealKeyedSnapshot(std::string* file) {
  using internal::PutChecksum;
  using internal::ReadAt;
  const size_t size = file->size();
  if (size < kKeyedSnapshotFooterSize + 8) return;
  const size_t footer = size - kKeyedSnapshotFooterSize;
  std::memcpy(file->data() + footer + 24, kKeyedSnapshotFooterMagic, 8);
  PutChecksum(file, footer, footer + 16);

  // Header: magic, u32 version, i32 max parallelism, u8 key type, i32 start, i32 end,
  // varint sections, (u8 id, bytes name)*, u64 checksum.
  BinaryReader h(std::string_view(*file).substr(8));
  h.U32();
  h.I32();
  h.U8();
  h.I32();
  h.I32();
  uint64_t sections = h.Count(2);
  for (uint64_t i = 0; i < sections && h.ok(); ++i) {
    h.U8();
    h.Bytes();
  }
  if (h.ok() && h.remaining() >= 8) {
    size_t header_len = size - h.remaining();
    PutChecksum(file, 0, header_len);
  }

  uint64_t index_offset = 0, index_length = 0;
  if (!ReadAt(*file, footer, &index_offset) || !ReadAt(*file, footer + 8, &index_length)) return;
  if (index_offset > footer || index_length != footer - index_offset || index_length < 8) return;
  // Index entries: u64 offset, u64 length, a varint count per section; then u64 checksum.
  BinaryReader ir(std::string_view(*file).substr(index_offset, index_length - 8));
  while (ir.ok() && !ir.at_end()) {
    uint64_t offset = ir.U64();
    uint64_t length = ir.U64();
    for (uint64_t i = 0; i < sections && ir.ok(); ++i) ir.VarU64();
    if (!ir.ok()) break;
    if (length >= 12 && offset <= index_offset && length <= index_offset - offset) {
      PutChecksum(file, offset, offset + length - 8);
    }
  }
  PutChecksum(file, index_offset, index_offset + index_length - 8);
}

}  // namespace keyflow::fuzz
