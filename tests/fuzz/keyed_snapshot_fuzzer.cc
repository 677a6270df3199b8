// Fuzz target: keyed-state snapshot files (state/snapshot/keyed_snapshot_format.h) restored into
// the real state + timer sections of a count-window operator, as a worker restores a checkpoint.
//
// Input: mode byte, then the file.
//   mode bit 0:    1 = recompute every checksum that can be located (fuzz_util.h
//                  ResealKeyedSnapshot), so the fuzzer reaches header, index and section
//                  parsing; 0 = the file as is.
//   mode bits 1-2: key type of the restoring job (string, int, long; 3 = string).
//   mode bit 3:    event time (1) or processing time (0).
//   mode bits 4-5: parallelism - 1 of the restoring job (so only part of the file's range is
//                  read); the restoring subtask is bits 6-7 modulo the parallelism.
// Properties: Open/Restore never crash or over-allocate; a failed restore is Corruption,
// FailedPrecondition or OutOfRange; after a successful restore every restored timer fires
// without breaking an invariant, and the operator snapshots again; that snapshot restores into
// a fresh operator, and snapshotting that one gives the same bytes.
#include <cstdint>
#include <string>

#include "common/file_io.h"
#include "tests/fuzz/fuzz_util.h"

namespace keyflow {
namespace {

struct Setup {
  KeyType key_type;
  bool event_time;
  int32_t parallelism;
  int32_t subtask;
};

void CheckRestored(const Setup& setup, KeyedOperatorTestHarness& harness) {
  Result<std::string> snapshot = harness.Snapshot();
  KF_CHECK(snapshot.ok()) << snapshot.status().ToString();
  auto fresh = fuzz::MakeCountWindowHarness(setup.key_type, setup.event_time, setup.parallelism,
                                            setup.subtask);
  Status restored = fresh->Restore({*snapshot});
  KF_CHECK(restored.ok()) << "a snapshot of restored state does not restore: "
                          << restored.ToString();
  Result<std::string> again = fresh->Snapshot();
  KF_CHECK(again.ok()) << again.status().ToString();
  KF_CHECK(*again == *snapshot) << "snapshot -> restore -> snapshot changed the bytes";
  // Fire everything that was restored: event-time timers by the final watermark, processing-time
  // ones by moving the clock to the end of time.
  harness.SetProcessingTime(kMaxWatermark.millis());
  harness.EndInput();
  (void)harness.ExtractOutput();
}

}  // namespace
}  // namespace keyflow

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace keyflow;
  fuzz::FuzzInput in = fuzz::FuzzInput::From(data, size);
  std::string file(in.bytes);
  if (in.mode & 1) fuzz::ResealKeyedSnapshot(&file);
  Setup setup;
  setup.key_type = fuzz::KeyTypeOf((in.mode >> 1) & 3);
  setup.event_time = (in.mode >> 3) & 1;
  setup.parallelism = 1 + ((in.mode >> 4) & 3);
  setup.subtask = (in.mode >> 6) % setup.parallelism;
  auto harness = fuzz::MakeCountWindowHarness(setup.key_type, setup.event_time, setup.parallelism,
                                              setup.subtask);
  Status s = harness->Restore({file});
  if (!s.ok()) {
    fuzz::CheckRestoreError(s);
    return 0;
  }
  CheckRestored(setup, *harness);
  return 0;
}
