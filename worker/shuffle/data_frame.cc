#include "worker/shuffle/data_frame.h"

#include <cstring>
#include <limits>

#include "common/binary_io.h"
#include "common/hashing.h"

namespace keyflow {
namespace {

template <typename T>
void Put(std::string* frame, size_t offset, T v) {
  std::memcpy(frame->data() + offset, &v, sizeof(T));
}

template <typename T>
T Get(std::string_view frame, size_t offset) {
  T v;
  std::memcpy(&v, frame.data() + offset, sizeof(T));
  return v;
}

bool IsKnownKind(uint8_t kind) {
  return kind >= static_cast<uint8_t>(FrameKind::kRecords) &&
         kind <= static_cast<uint8_t>(FrameKind::kLatencyMarker);
}

Status FrameError(std::string_view channel, const std::string& what) {
  return Corruption(std::string(channel) + ": " + what);
}

}  // namespace

std::string_view FrameKindName(FrameKind kind) {
  switch (kind) {
    case FrameKind::kRecords:
      return "RECORDS";
    case FrameKind::kWatermark:
      return "WATERMARK";
    case FrameKind::kWatermarkStatus:
      return "WATERMARK_STATUS";
    case FrameKind::kBarrier:
      return "BARRIER";
    case FrameKind::kCancelBarrier:
      return "CANCEL_BARRIER";
    case FrameKind::kEndOfInput:
      return "END_OF_INPUT";
    case FrameKind::kLatencyMarker:
      return "LATENCY_MARKER";
  }
  return "UNKNOWN";
}

void SealFrame(const FrameHeader& header, std::string* frame) {
  KF_CHECK_GE(frame->size(), kFrameHeaderSize);
  size_t payload = frame->size() - kFrameHeaderSize;
  KF_CHECK_LE(payload, std::numeric_limits<uint32_t>::max());
  Put<uint32_t>(frame, 0, kFrameMagic);
  Put<uint16_t>(frame, 4, kDataPlaneVersion);
  Put<uint16_t>(frame, 6, 0);
  Put<uint8_t>(frame, 16, static_cast<uint8_t>(header.kind));
  Put<uint8_t>(frame, 17, 0);
  Put<uint16_t>(frame, 18, 0);
  Put<int32_t>(frame, 20, header.sender.value());
  Put<int64_t>(frame, 24, header.attempt.value());
  Put<uint64_t>(frame, 32, header.sequence);
  Put<uint32_t>(frame, 40, static_cast<uint32_t>(payload));
  uint64_t checksum =
      Checksum64(frame->data() + kFrameChecksummedFrom, frame->size() - kFrameChecksummedFrom);
  Put<uint64_t>(frame, kFrameChecksumOffset, checksum);
}

void EncodeEventFrame(SubtaskIndex sender, AttemptNumber attempt, uint64_t sequence,
                      const ChannelEvent& event, std::string* out) {
  KF_CHECK(event.kind != FrameKind::kRecords) << "records travel in record batches";
  out->assign(kFrameHeaderSize, '\0');
  BinaryWriter w(out);
  switch (event.kind) {
    case FrameKind::kWatermark:
      w.I64(event.watermark.millis());
      break;
    case FrameKind::kWatermarkStatus:
      w.U8(event.idle ? 1 : 0);
      break;
    case FrameKind::kBarrier:
      w.I64(event.checkpoint_id.value());
      w.I64(event.checkpoint_timestamp.millis());
      break;
    case FrameKind::kCancelBarrier:
      w.I64(event.checkpoint_id.value());
      break;
    case FrameKind::kLatencyMarker:
      w.I64(event.marked_time_us);
      break;
    case FrameKind::kEndOfInput:
    case FrameKind::kRecords:
      break;
  }
  SealFrame(FrameHeader{event.kind, sender, attempt, sequence}, out);
}

Result<DecodedFrame> DecodeFrame(std::string_view frame, std::string_view channel) {
  if (frame.size() < kFrameHeaderSize) {
    return FrameError(channel, "frame is truncated: " + std::to_string(frame.size()) +
                                   " bytes, shorter than the " + std::to_string(kFrameHeaderSize) +
                                   "-byte header");
  }
  if (Get<uint32_t>(frame, 0) != kFrameMagic) {
    return FrameError(channel,
                      "bad magic: not a keyflow data-plane frame (is another program sending to "
                      "this port?)");
  }
  uint16_t version = Get<uint16_t>(frame, 4);
  if (version != kDataPlaneVersion) {
    return FrameError(channel, "peer speaks data-plane version " + std::to_string(version) +
                                   ", this worker speaks " + std::to_string(kDataPlaneVersion) +
                                   ": run the same keyflow version on all hosts");
  }
  if (Get<uint16_t>(frame, 6) != 0) return FrameError(channel, "reserved header bytes are not 0");
  uint64_t payload_length = Get<uint32_t>(frame, 40);
  uint64_t actual = frame.size() - kFrameHeaderSize;
  if (payload_length != actual) {
    return FrameError(channel, "payload length field says " + std::to_string(payload_length) +
                                   " bytes but the frame carries " + std::to_string(actual) +
                                   (payload_length > actual ? " (truncated frame)" : ""));
  }
  uint64_t expected = Get<uint64_t>(frame, kFrameChecksumOffset);
  uint64_t computed = Checksum64(frame.substr(kFrameChecksummedFrom));
  if (expected != computed) {
    return FrameError(channel, "checksum mismatch (frame damaged in transit)");
  }
  uint8_t kind = Get<uint8_t>(frame, 16);
  if (!IsKnownKind(kind)) return FrameError(channel, "unknown frame kind " + std::to_string(kind));
  if (Get<uint8_t>(frame, 17) != 0 || Get<uint16_t>(frame, 18) != 0) {
    return FrameError(channel, "reserved header bytes are not 0");
  }
  DecodedFrame out;
  out.header.kind = static_cast<FrameKind>(kind);
  out.header.sender = SubtaskIndex(Get<int32_t>(frame, 20));
  out.header.attempt = AttemptNumber(Get<int64_t>(frame, 24));
  out.header.sequence = Get<uint64_t>(frame, 32);
  out.payload = frame.substr(kFrameHeaderSize);
  return out;
}

Result<ChannelEvent> DecodeChannelEvent(const DecodedFrame& frame, std::string_view channel) {
  const FrameKind kind = frame.header.kind;
  KF_CHECK(kind != FrameKind::kRecords);
  size_t expected = 0;
  switch (kind) {
    case FrameKind::kWatermark:
      expected = 8;
      break;
    case FrameKind::kWatermarkStatus:
      expected = 1;
      break;
    case FrameKind::kBarrier:
      expected = 16;
      break;
    case FrameKind::kCancelBarrier:
    case FrameKind::kLatencyMarker:
      expected = 8;
      break;
    case FrameKind::kEndOfInput:
    case FrameKind::kRecords:
      expected = 0;
      break;
  }
  if (frame.payload.size() != expected) {
    return FrameError(channel, std::string(FrameKindName(kind)) + " frame has a " +
                                   std::to_string(frame.payload.size()) +
                                   "-byte payload, expected " + std::to_string(expected));
  }
  BinaryReader r(frame.payload);
  ChannelEvent e;
  e.kind = kind;
  switch (kind) {
    case FrameKind::kWatermark:
      e.watermark = Timestamp(r.I64());
      break;
    case FrameKind::kWatermarkStatus: {
      uint8_t status = r.U8();
      if (status > 1) {
        return FrameError(channel, "WATERMARK_STATUS " + std::to_string(status) +
                                       " is neither ACTIVE (0) nor IDLE (1)");
      }
      e.idle = status == 1;
      break;
    }
    case FrameKind::kBarrier:
      e.checkpoint_id = CheckpointId(r.I64());
      e.checkpoint_timestamp = Timestamp(r.I64());
      break;
    case FrameKind::kCancelBarrier:
      e.checkpoint_id = CheckpointId(r.I64());
      break;
    case FrameKind::kLatencyMarker:
      e.marked_time_us = r.I64();
      if (e.marked_time_us < 0) {
        return FrameError(channel, "LATENCY_MARKER time " + std::to_string(e.marked_time_us) +
                                       " is before the epoch");
      }
      break;
    case FrameKind::kEndOfInput:
    case FrameKind::kRecords:
      break;
  }
  return e;
}

}  // namespace keyflow
