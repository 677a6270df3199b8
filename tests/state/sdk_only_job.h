// A job library's view of keyed state, for keyed_state_test.cc: code that sees only the SDK
// headers (worker/api/keyed_process_function.h, state/keyed_state.h) and uses every handle kind
// through RuntimeContext. sdk_only_job.cc fails to compile if any heap backend header reaches it.
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"
#include "common/types.h"
#include "state/keyed_state.h"
#include "worker/api/keyed_process_function.h"

namespace keyflow::sdk_test {

// A user struct that is not trivially copyable (the heap backend boxes it).
struct Visit {
  std::string page;
  int64_t time = 0;
  void Write(BinaryWriter& out) const;
  bool Read(BinaryReader& in);
};

// A 24-byte trivially copyable struct, like count-window's window (kept inline by the heap).
struct Window {
  int64_t count = 0;
  int64_t start = 0;
  int64_t deadline = 0;
  void Write(BinaryWriter& out) const;
  bool Read(BinaryReader& in);
};

// Registered in Open; the names are the state names.
struct SessionStates {
  ValueState<int64_t>* count = nullptr;     // default 0
  ValueState<Visit>* last = nullptr;        // no default
  ValueState<Window>* window = nullptr;     // in namespace 7
  ListState<std::string>* pages = nullptr;  // every page, in order
  MapState<std::string, int64_t>* per_page = nullptr;
  ReducingState<int64_t>* max_time = nullptr;  // max
  AggregatingState<int64_t, double>* avg_time = nullptr;
};

Status RegisterStates(RuntimeContext& runtime, SessionStates* states);
// One visit of the current key: updates every state.
void OnVisit(SessionStates& s, const std::string& page, int64_t time);
// "un-visits" `page`: removes it from per_page (the map disappears with its last entry), clears
// the list when `clear_pages`.
void Forget(SessionStates& s, const std::string& page, bool clear_pages);
// Everything the current key holds, as text.
std::string Describe(const SessionStates& s);

}  // namespace keyflow::sdk_test
