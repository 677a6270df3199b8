// Fuzz target: job records (checkpoint/checkpoint_storage.h, JobRecord::Decode), the `_job` files
// a restarted coordinator reads to resume its jobs.
//
// Input: mode byte, then bytes.
//   mode bit 0 = 0: the bytes are the whole `_job` file.
//   mode bit 0 = 1: the bytes are the body, wrapped in a valid envelope (see
//                   checkpoint_metadata_fuzzer.cc).
// Properties: never crashes or over-allocates; errors are Corruption/FailedPrecondition; a
// decoded record round-trips to the same bytes.
#include <cstdint>
#include <string>

#include "checkpoint/checkpoint_storage.h"
#include "checkpoint/checksummed_envelope.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace keyflow;
  fuzz::FuzzInput in = fuzz::FuzzInput::From(data, size);
  std::string bytes = fuzz::FileOrSealedBody(in, kJobRecordMagic, kJobRecordVersion);
  Result<JobRecord> record = JobRecord::Decode(bytes, "fuzz/_job");
  if (!record.ok()) {
    fuzz::CheckDecodeError(record.status());
    return 0;
  }
  std::string encoded = record->Encode();
  Result<JobRecord> again = JobRecord::Decode(encoded, "fuzz/_job");
  KF_CHECK(again.ok()) << again.status().ToString();
  KF_CHECK(again->Encode() == encoded) << "encoding is not stable";
  return 0;
}
