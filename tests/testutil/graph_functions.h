// Stand-in user functions for tests that build job graphs (StreamGraphBuilder) and look at
// their shape, not at what the functions do.
#pragma once

#include <memory>

#include "common/record.h"
#include "worker/api/stream_graph.h"

namespace keyflow::test {

inline Record Same(const Record& r) {
  return r;
}
inline bool Keep(const Record&) {
  return true;
}
inline void Twice(const Record& r, Collector<Record>& out) {
  out.Collect(r);
  out.Collect(r);
}
inline std::unique_ptr<KeyedFunction> NoFunction() {
  return nullptr;
}
inline std::unique_ptr<KeyedCoFunction> NoCoFunction() {
  return nullptr;
}

}  // namespace keyflow::test
