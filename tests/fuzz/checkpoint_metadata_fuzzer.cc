// Fuzz target: checkpoint metadata files (checkpoint/checkpoint_metadata.h,
// CheckpointMetadata::Decode), read by the coordinator on restart, restore and
// `keyflow checkpoint inspect`.
//
// Input: mode byte, then bytes.
//   mode bit 0 = 0: the bytes are the whole `_metadata` file.
//   mode bit 0 = 1: the bytes are the body; they are wrapped in a valid envelope (magic,
//                   version, length, checksum) so the fuzzer reaches the field decoding,
//                   including the embedded cereal JobSpec blob.
// Properties: never crashes or over-allocates; errors are Corruption/FailedPrecondition; what
// decodes is valid (Encode's precondition) and round-trips to the same bytes.
#include <cstdint>
#include <string>

#include "checkpoint/checkpoint_metadata.h"
#include "checkpoint/checksummed_envelope.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace keyflow;
  fuzz::FuzzInput in = fuzz::FuzzInput::From(data, size);
  std::string bytes =
      fuzz::FileOrSealedBody(in, kCheckpointMetadataMagic, kCheckpointMetadataVersion);
  Result<CheckpointMetadata> m = CheckpointMetadata::Decode(bytes, "fuzz/_metadata");
  if (!m.ok()) {
    fuzz::CheckDecodeError(m.status());
    return 0;
  }
  Status valid = m->Validate();
  KF_CHECK(valid.ok()) << "Decode returned invalid metadata: " << valid.ToString();
  (void)m->TotalStateBytes();
  (void)m->TypeName();
  std::string encoded = m->Encode();
  Result<CheckpointMetadata> again = CheckpointMetadata::Decode(encoded, "fuzz/_metadata");
  KF_CHECK(again.ok()) << again.status().ToString();
  KF_CHECK(again->Encode() == encoded) << "encoding is not stable";
  return 0;
}
