// Fuzz target: data-plane frames (worker/shuffle/data_frame.h) as a receiving InputChannel sees
// them, and the payloads behind them.
//
// Input: mode byte, then bytes.
//   mode bit 0 = 0: the bytes are a whole frame, decoded as received from a socket.
//   mode bit 0 = 1: the bytes are a payload; bits 1..3 pick the frame kind (1..6, else invalid);
//                   the frame is sealed with a valid header and checksum, so the fuzzer reaches
//                   the payload decoders.
// Properties: decoding never crashes; a decoded event re-encodes to a frame that decodes to the
// same event; a decoded RECORDS payload holds only non-negative key groups.
#include <cstdint>
#include <string>
#include <vector>

#include "tests/fuzz/fuzz_util.h"
#include "worker/shuffle/data_frame.h"
#include "worker/shuffle/record_batch_builder.h"

namespace keyflow {
namespace {

constexpr std::string_view kChannel = "channel from source subtask 0 to keyed subtask 0";

void CheckDecodedFrame(const DecodedFrame& frame) {
  if (frame.header.kind == FrameKind::kRecords) {
    std::vector<RecordView> records;
    Status s = DecodeRecordBatch(frame.payload, kChannel, &records);
    if (!s.ok()) {
      KF_CHECK(records.empty()) << "a failed decode leaves no records";
      return;
    }
    for (const RecordView& r : records) KF_CHECK_GE(r.key_group.value(), 0);
    return;
  }
  Result<ChannelEvent> event = DecodeChannelEvent(frame, kChannel);
  if (!event.ok()) return;
  std::string again;
  EncodeEventFrame(frame.header.sender, frame.header.attempt, frame.header.sequence, *event,
                   &again);
  Result<DecodedFrame> redecoded = DecodeFrame(again, kChannel);
  KF_CHECK(redecoded.ok()) << redecoded.status().ToString();
  KF_CHECK(redecoded->header.kind == frame.header.kind);
  KF_CHECK_EQ(redecoded->header.sequence, frame.header.sequence);
  Result<ChannelEvent> event_again = DecodeChannelEvent(*redecoded, kChannel);
  KF_CHECK(event_again.ok()) << event_again.status().ToString();
  KF_CHECK(*event_again == *event) << "event changed in an encode/decode round trip";
}

}  // namespace
}  // namespace keyflow

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace keyflow;
  fuzz::FuzzInput in = fuzz::FuzzInput::From(data, size);
  std::string frame;
  if ((in.mode & 1) == 0) {
    frame.assign(in.bytes);
  } else {
    frame.assign(kFrameHeaderSize, '\0');
    frame.append(in.bytes);
    FrameHeader header;
    header.kind = static_cast<FrameKind>((in.mode >> 1) & 7);
    header.sender = SubtaskIndex(in.mode >> 4);
    header.attempt = AttemptNumber(1);
    header.sequence = size;
    SealFrame(header, &frame);
  }
  Result<DecodedFrame> decoded = DecodeFrame(frame, kChannel);
  if (decoded.ok()) CheckDecodedFrame(*decoded);
  return 0;
}
