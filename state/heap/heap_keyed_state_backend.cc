#include "state/heap/heap_keyed_state_backend.h"

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/functional/function_ref.h"

namespace keyflow {

HeapKeyedStateBackend::HeapKeyedStateBackend(KeyContext& key_context) : key_context_(key_context) {}

HeapKeyedStateBackend::~HeapKeyedStateBackend() = default;

Result<HeapKeyedStateBackend::RegisteredState*> HeapKeyedStateBackend::FindRegistered(
    const std::string& name, const std::type_info& signature, std::string (*describe)()) const {
  if (name.empty()) {
    return InvalidArgument("a keyed state needs a non-empty name (" + describe() + ")");
  }
  auto it = states_.find(name);
  if (it == states_.end()) return static_cast<RegisteredState*>(nullptr);
  if (it->second.signature != std::type_index(signature)) {
    return AlreadyExists("keyed state '" + name + "' is already registered as " +
                         it->second.type_description + "; it cannot also be registered as " +
                         describe() + ". State names are unique per operator: use another name");
  }
  return const_cast<RegisteredState*>(&it->second);
}

Status HeapKeyedStateBackend::ApplyToAllKeys(std::string_view state_name, Namespace ns,
                                             absl::FunctionRef<Status(const Key&)> fn) {
  auto it = states_.find(state_name);
  if (it == states_.end()) {
    return NotFound("ApplyToAllKeys: no keyed state named '" + std::string(state_name) +
                    "' is registered; register it (GetState & co.) first");
  }
  const StateTableBase& table = *it->second.table;
  std::optional<std::pair<Key, KeyGroupId>> previous;
  if (key_context_.has_current_key()) {
    previous.emplace(key_context_.current_key(), key_context_.current_key_group());
  }
  auto restore_previous = [&] {
    if (!previous) return;
    Status s = key_context_.SetCurrentKey(previous->first, previous->second);
    CHECK(s.ok()) << s.ToString();
  };

  std::vector<Key> keys;
  for (KeyGroupId g : range().key_groups()) {
    keys.clear();
    // Collected before calling fn, which may change this key group.
    table.CollectKeys(range().IndexOf(g), ns, &keys);
    std::sort(keys.begin(), keys.end());
    for (const Key& key : keys) {
      Status s = key_context_.SetCurrentKey(key, g);
      CHECK(s.ok()) << s.ToString();  // stored keys are in range by construction
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

size_t HeapKeyedStateBackend::NumKeys(KeyGroupId g) const {
  CHECK(range().contains(g)) << "key group " << g << " is not in " << range();
  absl::flat_hash_set<Key> keys;
  for (const auto& [name, state] : states_) state.table->CollectKeys(range().IndexOf(g), &keys);
  return keys.size();
}

size_t HeapKeyedStateBackend::NumEntries() const {
  size_t n = 0;
  for (const auto& [name, state] : states_) {
    for (int32_t i = 0; i < range().size(); ++i) n += state.table->Size(i);
  }
  return n;
}

void HeapKeyedStateBackend::ClearAll() {
  for (auto& [name, state] : states_) {
    for (int32_t i = 0; i < range().size(); ++i) {
      if (state.table->Size(i) > 0) state.table->ClearKeyGroup(*this, i);
    }
  }
}

namespace {

// Format (state/README.md):
//   i32 key group | varint number of states | per state: bytes name, u8 kind, entries.
// write_state(i, out) writes the i-th state's name, kind and entries.
void WriteKeyGroupStates(KeyGroupId g, size_t num_states,
                         absl::FunctionRef<void(size_t, BinaryWriter&)> write_state,
                         BinaryWriter& out) {
  out.I32(g.value());
  out.VarU64(num_states);
  for (size_t i = 0; i < num_states; ++i) write_state(i, out);
}

// CopyKeyGroup's result: the non-empty states of one key group, by name ascending.
class StateKeyGroupCopy final : public KeyGroupCopy {
 public:
  struct State {
    std::string name;
    StateKind kind;
    std::unique_ptr<StateTableBase::EntriesCopy> entries;
  };
  StateKeyGroupCopy(KeyGroupId g, std::vector<State> states) : g_(g), states_(std::move(states)) {}

  void Write(BinaryWriter& out) const override {
    WriteKeyGroupStates(
        g_, states_.size(),
        [&](size_t i, BinaryWriter& w) {
          w.Bytes(states_[i].name);
          w.U8(static_cast<uint8_t>(states_[i].kind));
          states_[i].entries->Write(w);
        },
        out);
  }
  uint64_t Count() const override {
    absl::flat_hash_set<Key> keys;
    for (const State& s : states_) s.entries->CollectKeys(&keys);
    return keys.size();
  }

 private:
  KeyGroupId g_;
  std::vector<State> states_;
};

}  // namespace

void HeapKeyedStateBackend::SerializeKeyGroup(KeyGroupId g, BinaryWriter& out) const {
  CHECK(range().contains(g)) << "SerializeKeyGroup: key group " << g << " is not in " << range();
  const int32_t index = range().IndexOf(g);
  std::vector<const std::pair<const std::string, RegisteredState>*> present;
  for (const auto& entry : states_) {
    if (entry.second.table->Size(index) > 0) present.push_back(&entry);
  }
  WriteKeyGroupStates(
      g, present.size(),
      [&](size_t i, BinaryWriter& w) {
        const StateTableBase& table = *present[i]->second.table;
        w.Bytes(present[i]->first);
        w.U8(static_cast<uint8_t>(table.kind()));
        table.WriteKeyGroup(index, w);
      },
      out);
}

std::unique_ptr<KeyGroupCopy> HeapKeyedStateBackend::CopyKeyGroup(KeyGroupId g) const {
  CHECK(range().contains(g)) << "CopyKeyGroup: key group " << g << " is not in " << range();
  const int32_t index = range().IndexOf(g);
  std::vector<StateKeyGroupCopy::State> states;
  for (const auto& [name, state] : states_) {
    if (state.table->Size(index) == 0) continue;
    states.push_back({name, state.table->kind(), state.table->CopyKeyGroup(index)});
  }
  return std::make_unique<StateKeyGroupCopy>(g, std::move(states));
}

Status HeapKeyedStateBackend::RestoreKeyGroup(KeyGroupId g, BinaryReader& in) {
  if (!range().contains(g)) return key_context_.IllegalKeyGroup(g);
  const std::string context = "cannot restore key group " + std::to_string(g.value());
  const int32_t stored = in.I32();
  // A state takes at least: name length (1) + kind (1) + entry count (1).
  const uint64_t num_states = in.Count(3);
  if (!in.ok()) return MalformedSnapshot(context);
  if (stored != g.value()) {
    return Corruption(context +
                      ": Unexpected key-group in restore: the bytes are those of key "
                      "group " +
                      std::to_string(stored));
  }

  std::vector<std::pair<StateTableBase*, std::unique_ptr<StagedKeyGroup>>> staged;
  staged.reserve(num_states);
  std::string previous_name;
  for (uint64_t i = 0; i < num_states; ++i) {
    std::string_view name = in.Bytes();
    const uint8_t kind = in.U8();
    if (!in.ok()) return MalformedSnapshot(context);
    if (i > 0 && name <= previous_name) {
      return Corruption(context + ": states are not in ascending name order ('" +
                        std::string(name) + "' after '" + previous_name + "')");
    }
    if (kind > kMaxStateKind) {
      return Corruption(context + ": state '" + std::string(name) + "' has unknown kind " +
                        std::to_string(kind));
    }
    auto it = states_.find(name);
    if (it == states_.end()) {
      return FailedPrecondition(context + ": the snapshot holds keyed state '" + std::string(name) +
                                "', which is not registered; register every state of the "
                                "operator before restoring");
    }
    StateTableBase* table = it->second.table.get();
    if (table->kind() != static_cast<StateKind>(kind)) {
      return FailedPrecondition(context + ": keyed state '" + std::string(name) +
                                "' was written as " +
                                std::string(StateKindName(static_cast<StateKind>(kind))) +
                                " but is registered as " + it->second.type_description);
    }
    std::unique_ptr<StagedKeyGroup> entries;
    RETURN_IF_ERROR_CTX(table->ReadKeyGroup(in, g, key_context_.assigner(), &entries), context);
    staged.emplace_back(table, std::move(entries));
    previous_name.assign(name);
  }

  // Everything parsed: replace key group g of every state.
  const int32_t index = range().IndexOf(g);
  for (auto& [name, state] : states_) {
    StateTableBase* table = state.table.get();
    auto s = std::find_if(staged.begin(), staged.end(),
                          [table](const auto& p) { return p.first == table; });
    if (s != staged.end()) {
      table->InstallKeyGroup(*this, index, *s->second);
    } else if (table->Size(index) > 0) {
      table->ClearKeyGroup(*this, index);
    }
  }
  return Status::Ok();
}

}  // namespace keyflow
