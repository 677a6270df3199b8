// KeyGroupCopy: a snapshot participant's copy of one key group's data (keyed state or timers),
// taken on the task thread right before it changes a key group that an asynchronous snapshot
// has not written yet (KeyGroupWriteGuard, async_keyed_snapshot.h).
//
// Taking the copy is cheap: the key group's tables are cloned as they are in memory, with no
// sorting and no encoding. The snapshot's writer thread serialises the copy later; Write
// produces exactly the bytes the participant's SerializeKeyGroup would have produced at the time
// of the copy, and Count what its count (keys, timers) said then.
//
// Threading: created on the task thread, then owned and used by one writer thread.
#pragma once

#include <cstdint>

#include "common/binary_io.h"

namespace keyflow {

class KeyGroupCopy {
 public:
  virtual ~KeyGroupCopy() = default;
  virtual void Write(BinaryWriter& out) const = 0;
  virtual uint64_t Count() const = 0;
};

}  // namespace keyflow
