#include "checkpoint/checksummed_envelope.h"

#include <cereal/archives/binary.hpp>
#include <cereal/types/map.hpp>
#include <cereal/types/string.hpp>
#include <cstring>
#include <sstream>

#include "common/binary_io.h"
#include "common/format_version.h"
#include "common/hashing.h"
#include "common/protocol/bounded_binary_input_archive.h"

namespace keyflow {

std::string EncodeChecksummedEnvelope(std::string_view magic, uint32_t version,
                                      std::string_view body) {
  KF_CHECK_EQ(magic.size(), 8u);
  std::string out;
  out.reserve(kEnvelopeOverhead + body.size());
  BinaryWriter w(&out);
  w.Raw(magic.data(), magic.size());
  w.U32(version);
  w.U64(body.size());
  w.Raw(body.data(), body.size());
  w.U64(Checksum64(out));
  return out;
}

Result<DecodedEnvelope> DecodeChecksummedEnvelope(std::string_view bytes, std::string_view magic,
                                                  uint32_t oldest, uint32_t newest,
                                                  std::string_view what) {
  const std::string name(what);
  if (bytes.substr(0, magic.size()) != magic.substr(0, std::min(bytes.size(), magic.size()))) {
    return Corruption(name + " is not a keyflow file of this kind: bad magic (expected \"" +
                      std::string(magic) + "\")");
  }
  if (bytes.size() < kEnvelopeOverhead) {
    return Corruption(name + " is truncated: " + std::to_string(bytes.size()) +
                      " bytes, a valid file has at least " + std::to_string(kEnvelopeOverhead));
  }
  BinaryReader r(bytes.substr(magic.size()));
  uint32_t file_version = r.U32();
  uint64_t body_length = r.U64();
  if (body_length != bytes.size() - kEnvelopeOverhead) {
    return Corruption(name +
                      " is truncated or has trailing bytes: the header announces a body of " +
                      std::to_string(body_length) + " bytes, the file holds " +
                      std::to_string(bytes.size() - kEnvelopeOverhead));
  }
  uint64_t stored;
  std::memcpy(&stored, bytes.data() + bytes.size() - 8, 8);
  uint64_t actual = Checksum64(bytes.substr(0, bytes.size() - 8));
  if (stored != actual) {
    return Corruption(name + " is corrupted: checksum mismatch (stored " + std::to_string(stored) +
                      ", computed " + std::to_string(actual) + ")");
  }
  if (file_version < oldest || file_version > newest) {
    return UnreadableFormatVersion(name, file_version, oldest, newest);
  }
  return DecodedEnvelope{file_version, bytes.substr(kEnvelopeHeaderSize, body_length)};
}

std::string EncodeJobSpecBlob(const JobSpec& spec) {
  std::ostringstream os(std::ios::binary);
  {
    cereal::BinaryOutputArchive ar(os);
    ar(spec);
  }
  return std::move(os).str();
}

Result<JobSpec> DecodeJobSpecBlob(std::string_view blob, std::string_view what) {
  // cereal reports malformed input by throwing; this is the module edge that catches it. The
  // blob has passed the envelope checksum, but a checksum is no bound: the bounded archive
  // checks every length field against the bytes left before allocating.
  try {
    BoundedBinaryInputArchive ar(blob);
    JobSpec spec;
    ar(spec);
    if (ar.remaining() != 0) {
      return Corruption(std::string(what) + ": the job spec has " + std::to_string(ar.remaining()) +
                        " trailing bytes (written by another keyflow version?)");
    }
    return spec;
  } catch (const std::exception& e) {
    return Corruption(std::string(what) + ": the job spec does not decode (" + e.what() +
                      "); was it written by another keyflow version?");
  }
}

}  // namespace keyflow
