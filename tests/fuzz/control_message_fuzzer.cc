// Fuzz target: control messages (common/protocol/control_messages.h, DecodeControlMessage), the
// bytes the coordinator's ROUTER and every worker's and CLI's DEALER receive.
//
// Input: mode byte, then bytes.
//   mode bit 0 = 0: the bytes are a whole message (4-byte version + cereal archive).
//   mode bit 0 = 1: the current protocol version is put in front of the bytes, so the fuzzer
//                   spends its time in the archive.
// Properties: decoding never crashes, never allocates more than a small multiple of the input
// (run with -malloc_limit_mb) and reports errors as Corruption/FailedPrecondition; a decoded
// message re-encodes to bytes that decode and re-encode to the same bytes.
#include <cstdint>
#include <cstring>
#include <string>

#include "common/protocol/control_messages.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace keyflow;
  fuzz::FuzzInput in = fuzz::FuzzInput::From(data, size);
  std::string bytes;
  if (in.mode & 1) {
    uint32_t version = kControlProtocolVersion;
    bytes.assign(reinterpret_cast<const char*>(&version), 4);
  }
  bytes.append(in.bytes);
  Result<ControlMessage> msg = DecodeControlMessage(bytes, "fuzz peer");
  if (!msg.ok()) {
    fuzz::CheckDecodeError(msg.status());
    return 0;
  }
  (void)ControlMessageName(*msg);
  std::string encoded = EncodeControlMessage(*msg);
  Result<ControlMessage> again = DecodeControlMessage(encoded, "fuzz peer");
  KF_CHECK(again.ok()) << "a re-encoded message does not decode: " << again.status().ToString();
  KF_CHECK_EQ(again->index(), msg->index());
  KF_CHECK(EncodeControlMessage(*again) == encoded) << "encoding is not stable";
  return 0;
}
