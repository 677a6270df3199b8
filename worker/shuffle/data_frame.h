// Data-plane frames: the versioned, checksummed unit that travels on one channel (one ZeroMQ
// message = one frame). Byte format: worker/README.md, section "Data plane".
//
//   offset size field                                     checksummed
//   0      4    magic "KFDP"                              no  (must match exactly)
//   4      2    data-plane format version (3)             no  (must match exactly)
//   6      2    reserved, 0                               no  (must be 0)
//   8      8    checksum: XXH3-64 of bytes [16, end)      -
//   16     1    frame kind (FrameKind)                    yes
//   17     3    reserved, 0                               yes
//   20     4    sender subtask index (int32)              yes
//   24     8    attempt number (int64)                    yes
//   32     8    sequence number (uint64, per channel)     yes
//   40     4    payload length (uint32)                   yes
//   44     n    payload (per kind, below)                 yes
//
// All integers little-endian. The checksum covers the header fields after it as well as the
// payload, so a flipped sender, attempt or sequence byte is detected like a flipped payload byte.
//
// Who uses it: OutputChannel/RecordBatchBuilder encode, InputChannel decodes. Stateless; any
// thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"
#include "common/types.h"

namespace keyflow {

inline constexpr uint32_t kFrameMagic = 0x5044464B;  // "KFDP" in little-endian byte order
// 2: records may carry fields; 3: LATENCY_MARKER frames.
inline constexpr uint16_t kDataPlaneVersion = 3;
inline constexpr size_t kFrameHeaderSize = 44;
inline constexpr size_t kFrameChecksumOffset = 8;
inline constexpr size_t kFrameChecksummedFrom = 16;

enum class FrameKind : uint8_t {
  kRecords = 1,          // payload: a record batch (record_batch_builder.h)
  kWatermark = 2,        // payload: int64 timestamp
  kWatermarkStatus = 3,  // payload: uint8, 0 = ACTIVE, 1 = IDLE
  kBarrier = 4,          // payload: int64 checkpoint id, int64 trigger timestamp
  kCancelBarrier = 5,    // payload: int64 checkpoint id
  kEndOfInput = 6,       // payload: empty
  kLatencyMarker = 7,    // payload: int64 marked time (epoch microseconds of the source's clock)
};

std::string_view FrameKindName(FrameKind kind);  // "RECORDS", "WATERMARK", ...

struct FrameHeader {
  FrameKind kind = FrameKind::kRecords;
  SubtaskIndex sender;    // the source subtask that wrote the frame
  AttemptNumber attempt;  // the deployment attempt of the sender
  uint64_t sequence = 0;  // 0, 1, 2, ... per channel and attempt
};

// An in-band event: everything a channel carries besides records. Per channel, events and
// records arrive in the order they were written.
struct ChannelEvent {
  FrameKind kind = FrameKind::kEndOfInput;  // kRecords only in an InputEvent of a batch
  Timestamp watermark;                      // kWatermark
  bool idle = false;                        // kWatermarkStatus: true = IDLE, false = ACTIVE
  CheckpointId checkpoint_id;               // kBarrier, kCancelBarrier
  Timestamp checkpoint_timestamp;           // kBarrier: when the checkpoint was triggered
  int64_t marked_time_us = 0;               // kLatencyMarker: when the source made it

  static ChannelEvent Watermark(Timestamp w) {
    ChannelEvent e = Of(FrameKind::kWatermark);
    e.watermark = w;
    return e;
  }
  static ChannelEvent Idle() {
    ChannelEvent e = Of(FrameKind::kWatermarkStatus);
    e.idle = true;
    return e;
  }
  static ChannelEvent Active() { return Of(FrameKind::kWatermarkStatus); }
  static ChannelEvent Barrier(CheckpointId id, Timestamp triggered) {
    ChannelEvent e = Of(FrameKind::kBarrier);
    e.checkpoint_id = id;
    e.checkpoint_timestamp = triggered;
    return e;
  }
  static ChannelEvent CancelBarrier(CheckpointId id) {
    ChannelEvent e = Of(FrameKind::kCancelBarrier);
    e.checkpoint_id = id;
    return e;
  }
  static ChannelEvent EndOfInput() { return Of(FrameKind::kEndOfInput); }
  // Flink's LatencyMarker: `marked_time_us` is the source's wall clock (Clock::EpochMicros).
  static ChannelEvent LatencyMarker(int64_t marked_time_us) {
    ChannelEvent e = Of(FrameKind::kLatencyMarker);
    e.marked_time_us = marked_time_us;
    return e;
  }
  static ChannelEvent Of(FrameKind kind) {
    ChannelEvent e;
    e.kind = kind;
    return e;
  }

  friend bool operator==(const ChannelEvent&, const ChannelEvent&) = default;
};

// Writes the header into frame[0, kFrameHeaderSize) of a frame whose payload already follows
// it: sets the payload length from frame->size() and computes the checksum.
// Precondition: frame->size() >= kFrameHeaderSize, payload < 4 GiB.
void SealFrame(const FrameHeader& header, std::string* frame);

// Encodes `event` as a complete frame into *out (replacing its content, reusing its capacity).
void EncodeEventFrame(SubtaskIndex sender, AttemptNumber attempt, uint64_t sequence,
                      const ChannelEvent& event, std::string* out);

struct DecodedFrame {
  FrameHeader header;
  std::string_view payload;  // points into the decoded bytes
};

// Validates a frame: size, magic, version, reserved bytes, payload length (never trusted for
// an allocation), checksum, kind. On failure: Corruption (or for a version mismatch:
// "peer speaks data-plane version X, this worker speaks Y: run the same keyflow version on all
// hosts"), prefixed with `channel`, e.g. "channel from source subtask 2 to keyed subtask 0".
Result<DecodedFrame> DecodeFrame(std::string_view frame, std::string_view channel);

// Decodes the payload of an event frame (any kind but kRecords): exact size, valid values.
Result<ChannelEvent> DecodeChannelEvent(const DecodedFrame& frame, std::string_view channel);

}  // namespace keyflow
