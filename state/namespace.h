// Namespace: the second scope of keyed state and timers, after the key.
// kVoidNamespace for plain keyed functions; window operators use the window's start
// timestamp (the window size is fixed per operator, so the start identifies the window).
#pragma once

#include <cstdint>
#include <limits>

#include "common/types.h"

namespace keyflow {

struct NamespaceTag {};
using Namespace = StrongId<NamespaceTag, int64_t>;

inline constexpr Namespace kVoidNamespace{std::numeric_limits<int64_t>::min()};

}  // namespace keyflow
