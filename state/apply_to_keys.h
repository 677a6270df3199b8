// ApplyToCollectedKeys: the part of KeyedStateBackend::ApplyToAllKeys that every backend shares —
// key groups ascending, each key group's keys collected before fn runs (fn may change the key
// group) and visited in ascending byte order with the key context set to them, the first error
// of fn returned, and the context put back on its previous key afterwards.
//
// Threading: task thread (it sets the key context).
#pragma once

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/functional/function_ref.h"
#include "common/key.h"
#include "common/status.h"
#include "state/key_context.h"

namespace keyflow {

// ApplyToAllKeys's NotFound for a `state_name` no state is registered under.
inline Status ApplyToUnknownStateError(std::string_view state_name) {
  return NotFound("ApplyToAllKeys: no keyed state named '" + std::string(state_name) +
                  "' is registered; register it (GetState & co.) first");
}

// collect(g, &keys) appends the keys of key group g that fn is to visit, in any order, without
// repeats.
inline Status ApplyToCollectedKeys(KeyContext& context,
                                   absl::FunctionRef<Status(KeyGroupId, std::vector<Key>*)> collect,
                                   absl::FunctionRef<Status(const Key&)> fn) {
  std::optional<std::pair<Key, KeyGroupId>> previous;
  if (context.has_current_key()) {
    previous.emplace(context.current_key(), context.current_key_group());
  }
  auto restore_previous = [&] {
    if (!previous) return;
    Status s = context.SetCurrentKey(previous->first, previous->second);
    KF_CHECK(s.ok()) << s.ToString();
  };
  std::vector<Key> keys;
  for (KeyGroupId g : context.range().key_groups()) {
    keys.clear();
    Status s = collect(g, &keys);
    if (!s.ok()) {
      restore_previous();
      return s;
    }
    std::sort(keys.begin(), keys.end());
    for (const Key& key : keys) {
      s = context.SetCurrentKey(key, g);
      KF_CHECK(s.ok()) << s.ToString();  // stored keys are in range by construction
      s = fn(key);
      if (!s.ok()) {
        restore_previous();
        return s;
      }
    }
  }
  restore_previous();
  return Status::Ok();
}

}  // namespace keyflow
