// The envelope of every keyflow file written by checkpoint/ (`_metadata`, `_job`):
//
//   magic (8 bytes) | u32 format version | u64 body length | body | u64 XXH3-64
//
// all little-endian, where the XXH3-64 (seed 0) covers every byte before it — magic, version,
// length and body — so that any flipped or missing byte is detected before the body (or even
// the version) is interpreted. Also holds the JobSpec blob codec shared by both files.
//
// Used by checkpoint_metadata.cc and checkpoint_storage.cc only. Threading: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/protocol/job_spec.h"
#include "common/status.h"

namespace keyflow {

inline constexpr size_t kEnvelopeHeaderSize = 8 + 4 + 8;
inline constexpr size_t kEnvelopeOverhead = kEnvelopeHeaderSize + 8;

// Precondition: magic.size() == 8.
std::string EncodeChecksummedEnvelope(std::string_view magic, uint32_t version,
                                      std::string_view body);

struct DecodedEnvelope {
  uint32_t version = 0;   // in [oldest, newest]
  std::string_view body;  // a view into the decoded bytes
};
// `what` names the file in messages ("checkpoint metadata /x/chk-3/_metadata"). Corruption for a
// wrong magic, a truncated file, a body length that does not match the file size, or a checksum
// mismatch (also when the flipped byte is in the version field: the checksum comes first);
// then, for an intact file of a version outside [oldest, newest], the FailedPrecondition of
// common/format_version.h (a version skew).
Result<DecodedEnvelope> DecodeChecksummedEnvelope(std::string_view bytes, std::string_view magic,
                                                  uint32_t oldest, uint32_t newest,
                                                  std::string_view what);

// JobSpec as a cereal binary blob (the same serialisation as the control protocol).
std::string EncodeJobSpecBlob(const JobSpec& spec);
// Corruption naming `what` when the blob does not decode (cereal's exceptions end here).
Result<JobSpec> DecodeJobSpecBlob(std::string_view blob, std::string_view what);

}  // namespace keyflow
