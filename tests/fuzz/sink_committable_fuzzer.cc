// Fuzz target: file sink committables (worker/sinks/file_sink.h, FileSinkCommittable::DecodeFrom),
// the pre-committed transactions a restoring sink re-commits from checkpoint metadata.
//
// Input: mode byte (unused), then a sequence of encoded committables, decoded one after the
// other until the bytes end or one fails.
// Properties: never crashes; errors are Corruption; a decoded committable names only plain file
// names (no '/', not "." or ".."), and round-trips to an equal committable.
#include <cstdint>
#include <string>

#include "tests/fuzz/fuzz_util.h"
#include "worker/sinks/file_sink.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace keyflow;
  fuzz::FuzzInput in = fuzz::FuzzInput::From(data, size);
  fuzz::CheckEachDecodedValueRoundTrips<FileSinkCommittable>(
      in.bytes, "committable", [](const FileSinkCommittable& c) {
        for (const std::string* name : {&c.pending_name, &c.final_name}) {
          KF_CHECK(!name->empty());
          KF_CHECK(name->find('/') == std::string::npos) << *name;
          KF_CHECK(*name != "." && *name != "..") << *name;
        }
      });
  return 0;
}
