// Record: one input element of a keyed job, as it travels from a source subtask through the
// shuffle to the keyed operator (Flink's StreamRecord with the key already extracted).
//
// The source extracts the key and the event timestamp (JSON Lines: `uid`/`ts` by default) and
// computes the key group once; the router, the receiver's key context and the state backend
// reuse it. `payload` is the original line when the job asks for it, otherwise empty.
#pragma once

#include <string>

#include "common/key.h"
#include "common/types.h"

namespace keyflow {

struct Record {
  Key key;
  KeyGroupId key_group{0};
  Timestamp timestamp;
  std::string payload;

  friend bool operator==(const Record& a, const Record& b) {
    return a.key == b.key && a.key_group == b.key_group && a.timestamp == b.timestamp &&
           a.payload == b.payload;
  }
};

}  // namespace keyflow
