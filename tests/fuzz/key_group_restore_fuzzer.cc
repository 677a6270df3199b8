// Fuzz target: per-key-group state and timer restore (HeapKeyedStateBackend::RestoreKeyGroup,
// InternalTimerService::RestoreKeyGroup) through the snapshot sections of a count-window
// operator: the section bytes of one key group, behind the block checksum of a snapshot file.
//
// Input: mode byte, key-group byte, then the section bytes.
//   mode bit 0:    section: 0 = keyed state, 1 = timers.
//   mode bits 1-2: key type (string, int, long; 3 = string).
//   mode bit 3:    event time (1) or processing time (0).
//   key-group byte: the key group restored (modulo max parallelism 128).
// Properties: never crashes or over-allocates; a failed restore is Corruption,
// FailedPrecondition or OutOfRange; a successful one writes back (SerializeKeyGroup) bytes that
// restore into a fresh operator and write back identically; restored timers fire without
// breaking an invariant.
#include <cstdint>
#include <string>

#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace keyflow;
  if (size < 2) return 0;
  const uint8_t mode = data[0];
  const KeyGroupId g(data[1] % fuzz::kMaxParallelism);
  const std::string_view bytes(reinterpret_cast<const char*>(data) + 2, size - 2);
  const size_t section = mode & 1;
  const KeyType key_type = fuzz::KeyTypeOf((mode >> 1) & 3);
  const bool event_time = (mode >> 3) & 1;

  auto harness = fuzz::MakeCountWindowHarness(key_type, event_time);
  const SnapshotSection& s = *harness->op().snapshot_sections()[section];
  BinaryReader reader(bytes);
  Status restored = s.restore(g, reader);
  if (!restored.ok()) {
    fuzz::CheckRestoreError(restored);
    return 0;
  }
  std::string written;
  BinaryWriter writer(&written);
  s.write(g, writer);
  auto fresh = fuzz::MakeCountWindowHarness(key_type, event_time);
  const SnapshotSection& fresh_section = *fresh->op().snapshot_sections()[section];
  BinaryReader again(written);
  Status restored_again = fresh_section.restore(g, again);
  KF_CHECK(restored_again.ok()) << "written-back key group does not restore: "
                                << restored_again.ToString();
  KF_CHECK(again.at_end()) << "restore left " << again.remaining() << " written bytes unread";
  std::string rewritten;
  BinaryWriter rewriter(&rewritten);
  fresh_section.write(g, rewriter);
  KF_CHECK(rewritten == written) << "write -> restore -> write changed the bytes";
  KF_CHECK_EQ(fresh_section.count(g), s.count(g));
  harness->SetProcessingTime(kMaxWatermark.millis());
  harness->EndInput();
  (void)harness->ExtractOutput();
  return 0;
}
