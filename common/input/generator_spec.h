// GeneratorSpec: the parameters of the built-in deterministic event generator, as written after
// `gen:` in --input (see InputSpec). GeneratorSplitReader produces the events.
//
//   gen:events=N,keys=K,splits=S[,seed=X][,rate=R][,disorder=D][,start=T][,step=P]
//       [,skew=Z][,payload=B][,note=C][,hot=F[,hot_share=H]][,hold=PATH]
//
//   events   N > 0   total number of events of the job (over all splits)       required
//   keys     K > 0   key space: keys "uid-0" .. "uid-<K-1>"; K >= S             required
//   splits   S > 0   number of splits (at most 65536)                           required
//   seed     X       any unsigned 64-bit integer                                default 0
//   rate     R >= 0  max events per second for the whole job, 0 = unlimited    default 0
//   disorder D >= 0  max out-of-orderness of timestamps in ms                   default 200
//   start    T       timestamp (epoch ms) of the first event           default 1700000000000
//   step     P >= 0  event-time ms between consecutive events of the stream     default 1
//   skew     Z >= 0  key skew exponent: 0 uniform, 1 Zipf-like (see below)      default 0
//   payload  B >= 0  bytes of filler payload per record (at most 1 MiB); only   default 0
//                    for jobs that read no fields
//   note     C >= 0  for jobs that read fields: bytes of the record's "note"    default 100
//                    string field (at most 1 MiB); records are then JSON objects
//                    {"uid":"uid-7","ts":...,"amount":<int 0..999>,"note":"<C letters>"}
//   hot      0 < F <= 1  hot set: a first pass touches every key once, then     default off
//                    records go to the hot keys, the fraction F of each split's keys
//                    (at least one); not with skew
//   hot_share 0 <= H <= 1  with hot: the fraction of records after the first    default 1
//                    pass that go to a hot key; the others are uniform over all keys
//   hold     PATH    an absolute path (no commas): a split that has emitted all     default none
//                    its events does not end until the file PATH exists (it waits,
//                    throttled, with its position at its end): a test or drill keeps
//                    the job running for as long as it needs and then lets it finish,
//                    instead of racing a rate-limited input against the wall clock.
//                    Under the coordinator's --allowed-path like file inputs.

// Numbers are decimal; rate and skew may have a fraction. Parameters may come in any order; each
// at most once. The exact event stream (and the skew model) is documented in
// generator_split_reader.h.
//
// Value type; no threading concerns.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace keyflow {

struct GeneratorSpec {
  static constexpr int32_t kMaxSplits = 65536;
  static constexpr int64_t kMaxPayloadBytes = 1 << 20;

  int64_t events = 0;
  int64_t keys = 0;
  int32_t splits = 0;
  uint64_t seed = 0;
  double rate = 0;  // events/s of the whole job; 0 = unlimited
  int64_t disorder_ms = 200;
  int64_t start_ms = 1700000000000;
  int64_t step_ms = 1;
  double skew = 0;
  int32_t payload_bytes = 0;
  int32_t note_bytes = 100;
  double hot = 0;  // 0 = no hot set
  double hot_share = 1.0;
  std::string hold;  // empty: none

  // Hot keys of split s (its ranks 0 .. HotKeysInSplit(s)-1): ceil(hot * KeysInSplit(s)), at
  // least 1. Precondition: hot > 0, 0 <= s < splits.
  int64_t HotKeysInSplit(int32_t s) const;

  // Events of split s: events are spread as evenly as possible, the first events % splits
  // splits get one more. Precondition: 0 <= s < splits.
  int64_t EventsInSplit(int32_t s) const { return events / splits + (s < events % splits ? 1 : 0); }
  // Keys owned by split s (key k belongs to split k % splits). Precondition: 0 <= s < splits.
  int64_t KeysInSplit(int32_t s) const { return keys / splits + (s < keys % splits ? 1 : 0); }

  // The canonical `gen:...` text with every parameter; parses back to an equal spec.
  std::string ToString() const;

  friend bool operator==(const GeneratorSpec&, const GeneratorSpec&) = default;
};

// Parses the parameter list after `gen:` ("events=10,keys=3,splits=2,seed=7"), validates every
// value and the combination (keys >= splits; timestamps must not overflow int64).
// InvalidArgument naming the parameter on any error.
Result<GeneratorSpec> ParseGeneratorSpec(std::string_view params);

}  // namespace keyflow
