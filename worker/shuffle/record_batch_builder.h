// RecordBatchBuilder and DecodeRecordBatch: the RECORDS frame payload codec.
//
// Payload of a RECORDS frame (all little-endian; varint = unsigned LEB128):
//   uint32 record count, then per record:
//     varint key length, key bytes     (Key::bytes())
//     varint key group                 (< 2^31)
//     int64  timestamp                 (ms)
//     varint payload length << 1 | has_fields, payload bytes
//     if has_fields: varint fields length, fields bytes (a field tape, common/record_fields.h)
// (data-plane version 2; version 1 had no has_fields bit.) A key-only record (the job reads no
// fields: payload and fields empty) is exactly as long as in version 1. A record takes at least
// kMinEncodedRecordBytes, which bounds the count a payload can claim. The decoder validates every
// field tape (ValidateFieldTape), so the keyed side may read them without bounds checks.
//
// Hand-rolled with BinaryWriter instead of a cereal archive: one reusable buffer per channel,
// no per-record allocation or virtual call, and the frame header is written in place in front
// of the records so a sealed batch goes to the socket without another copy (numbers in
// worker/README.md, "Data plane").
//
// Threading: a builder belongs to one OutputChannel (the source task thread). DecodeRecordBatch
// is stateless.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/key.h"
#include "common/record.h"
#include "common/status.h"
#include "common/types.h"
#include "worker/shuffle/data_frame.h"

namespace keyflow {

inline constexpr size_t kMinEncodedRecordBytes = 11;  // 1 + 1 + 8 + 1: empty key and payload

// The limits that bound every data-plane frame, so that each receiving socket can refuse larger
// ones (ZMQ_MAXMSGSIZE, InputGateOptions::max_frame_bytes; worker/README.md, "Data plane"):
// a record's key, payload and fields together are at most kMaxRecordBytes (the file source's
// line limit; RecordWriter::Emit refuses a larger record), its encoding adds at most
// kMaxRecordOverheadBytes (varints and the timestamp), and a batch is sealed as soon as it
// reaches batch_size_bytes (at most kMaxBatchSizeBytes), so it holds that plus one record.
inline constexpr size_t kMaxRecordBytes = size_t{64} << 20;
inline constexpr size_t kMaxRecordOverheadBytes = 64;
inline constexpr size_t kMaxBatchSizeBytes = size_t{1} << 20;
inline constexpr size_t kMaxDataFrameBytes =
    kMaxBatchSizeBytes + kMaxRecordBytes + kMaxRecordOverheadBytes;

class RecordBatchBuilder {
 public:
  RecordBatchBuilder();

  // Appends one record (copies its bytes into the batch).
  void Append(const Record& record);
  void Append(std::string_view key, KeyGroupId key_group, Timestamp timestamp,
              std::string_view payload, std::string_view fields = {});

  uint32_t num_records() const { return count_; }
  bool empty() const { return count_ == 0; }
  // Size the frame would have if sealed now (header + payload).
  size_t frame_size() const { return buffer_.size(); }

  // Seals the batch as a RECORDS frame and swaps it into *frame; the builder continues, empty,
  // in *frame's previous buffer (so two buffers alternate and neither is reallocated).
  void FinishInto(SubtaskIndex sender, AttemptNumber attempt, uint64_t sequence,
                  std::string* frame);

  // Drops the records appended so far.
  void Clear();

 private:
  std::string buffer_;  // [header space][uint32 count][records...]
  uint32_t count_ = 0;
};

// One decoded record; the views point into the frame bytes (valid while those live).
struct RecordView {
  std::string_view key;
  KeyGroupId key_group;
  Timestamp timestamp;
  std::string_view payload;
  std::string_view fields;  // a validated field tape, or empty

  Key ToKey() const { return Key::FromBytes(key); }
  Record ToRecord() const {
    return Record{ToKey(), key_group, timestamp, std::string(payload), std::string(fields)};
  }
};

// Decodes a RECORDS payload into *out (cleared first; its capacity is reused). Corruption,
// prefixed with `channel`, for a truncated or malformed payload, a record count that cannot
// fit the payload (checked before anything is reserved), a malformed field tape or trailing bytes.
Status DecodeRecordBatch(std::string_view payload, std::string_view channel,
                         std::vector<RecordView>* out);

}  // namespace keyflow
