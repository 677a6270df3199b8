#include "state/heap/heap_keyed_state_backend.h"

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/functional/function_ref.h"
#include "state/apply_to_keys.h"

namespace keyflow {

void FailNoCurrentKey(const std::string& state_name) {
  KF_CHECK(false) << "keyed state '" << state_name
                  << "' was used without a current key: keyed state is only accessible while the "
                     "runtime has set a key (in processElement, onTimer or ApplyToAllKeys)";
  std::abort();  // not reached: KF_CHECK(false) aborts
}

HeapKeyedStateBackend::HeapKeyedStateBackend(KeyContext& key_context)
    : KeyedStateBackend(key_context) {}

HeapKeyedStateBackend::~HeapKeyedStateBackend() = default;

template <typename V>
HeapKeyedStateBackend::RegisteredState HeapKeyedStateBackend::MakeState(
    const StateRegistration& r) {
  auto table = std::make_unique<StateTable<V>>(r.name, r.kind, r.type_description, range().size(),
                                               *r.value_ops);
  auto state = std::make_unique<HeapKeyedState<V>>(this, &key_context(), table.get());
  return RegisteredState{std::type_index(*r.signature), std::move(table), std::move(state),
                         nullptr};
}

Result<KeyedStateHandle*> HeapKeyedStateBackend::GetOrRegisterState(const StateRegistration& r,
                                                                    HandleFactory make) {
  if (r.name.empty()) {
    return InvalidArgument("a keyed state needs a non-empty name (" + r.type_description + ")");
  }
  if (auto it = states_.find(r.name); it != states_.end()) {
    if (it->second.signature != std::type_index(*r.signature)) {
      return AlreadyExists("keyed state '" + r.name + "' is already registered as " +
                           it->second.table->type_description() +
                           "; it cannot also be registered as " + r.type_description +
                           ". State names are unique per operator: use another name");
    }
    return it->second.handle.get();
  }
  if (!r.invalid_reason.empty()) return InvalidArgument(r.invalid_reason);

  const TypeOps& ops = *r.value_ops;
  RegisteredState registered = InlineValue<8>::Fits(ops)     ? MakeState<InlineValue<8>>(r)
                               : InlineValue<16>::Fits(ops)  ? MakeState<InlineValue<16>>(r)
                               : InlineValue<24>::Fits(ops)  ? MakeState<InlineValue<24>>(r)
                               : InlineValue<32>::Fits(ops)  ? MakeState<InlineValue<32>>(r)
                               : InlineObject<24>::Fits(ops) ? MakeState<InlineObject<24>>(r)
                               : InlineObject<32>::Fits(ops) ? MakeState<InlineObject<32>>(r)
                                                             : MakeState<BoxedValue>(r);
  registered.handle = make(registered.state.get());
  KeyedStateHandle* handle = registered.handle.get();
  tables_.push_back(registered.table.get());
  states_.emplace(r.name, std::move(registered));
  return handle;
}

Status HeapKeyedStateBackend::ApplyToAllKeys(std::string_view state_name, Namespace ns,
                                             absl::FunctionRef<Status(const Key&)> fn) {
  auto it = states_.find(state_name);
  if (it == states_.end()) return ApplyToUnknownStateError(state_name);
  const StateTableBase& table = *it->second.table;
  return ApplyToCollectedKeys(
      key_context(),
      [&](KeyGroupId g, std::vector<Key>* keys) {
        table.CollectKeys(range().IndexOf(g), ns, keys);
        return Status::Ok();
      },
      fn);
}

size_t HeapKeyedStateBackend::NumKeys(KeyGroupId g) const {
  KF_CHECK(range().contains(g)) << "key group " << g << " is not in " << range();
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

// Format version 2 (state/README.md):
//   i32 -2 | i32 key group | varint number of states |
//   per state: bytes name, u8 kind, bytes declared type, entries.
// write_state(i, out) writes the i-th state's name, kind, type and entries.
void WriteKeyGroupStates(KeyGroupId g, size_t num_states,
                         absl::FunctionRef<void(size_t, BinaryWriter&)> write_state,
                         BinaryWriter& out) {
  out.I32(-kKeyGroupStateFormatVersion);
  out.I32(g.value());
  out.VarU64(num_states);
  for (size_t i = 0; i < num_states; ++i) write_state(i, out);
}

void WriteStateHeader(const StateTableBase& table, BinaryWriter& out) {
  out.Bytes(table.name());
  out.U8(static_cast<uint8_t>(table.kind()));
  out.Bytes(table.type_description());
}

// CopyKeyGroup's result: the non-empty states of one key group, by name ascending.
class StateKeyGroupCopy final : public KeyGroupCopy {
 public:
  struct State {
    const StateTableBase* table;  // name, kind and type only: registrations never change
    std::unique_ptr<StateTableBase::EntriesCopy> entries;
  };
  StateKeyGroupCopy(KeyGroupId g, std::vector<State> states) : g_(g), states_(std::move(states)) {}

  void Write(BinaryWriter& out) const override {
    WriteKeyGroupStates(
        g_, states_.size(),
        [&](size_t i, BinaryWriter& w) {
          WriteStateHeader(*states_[i].table, w);
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
  KF_CHECK(range().contains(g)) << "SerializeKeyGroup: key group " << g << " is not in " << range();
  const int32_t index = range().IndexOf(g);
  std::vector<const StateTableBase*> present;
  for (const auto& [name, state] : states_) {
    if (state.table->Size(index) > 0) present.push_back(state.table.get());
  }
  WriteKeyGroupStates(
      g, present.size(),
      [&](size_t i, BinaryWriter& w) {
        WriteStateHeader(*present[i], w);
        present[i]->WriteKeyGroup(index, w);
      },
      out);
}

std::unique_ptr<KeyGroupCopy> HeapKeyedStateBackend::CopyKeyGroup(KeyGroupId g) const {
  KF_CHECK(range().contains(g)) << "CopyKeyGroup: key group " << g << " is not in " << range();
  const int32_t index = range().IndexOf(g);
  std::vector<StateKeyGroupCopy::State> states;
  for (const auto& [name, state] : states_) {
    if (state.table->Size(index) == 0) continue;
    states.push_back({state.table.get(), state.table->CopyKeyGroup(index)});
  }
  return std::make_unique<StateKeyGroupCopy>(g, std::move(states));
}

Status HeapKeyedStateBackend::RestoreKeyGroup(KeyGroupId g, BinaryReader& in) {
  if (!range().contains(g)) return key_context().IllegalKeyGroup(g);
  const std::string context = "cannot restore key group " + std::to_string(g.value());
  // Version 1 starts with the key group (>= 0); later versions with -version, then the group.
  int32_t stored = in.I32();
  int32_t version = 1;
  if (in.ok() && stored < 0) {
    // -stored in 64 bits: INT32_MIN (hostile bytes) has no 32-bit negation.
    const int64_t written = -static_cast<int64_t>(stored);
    if (written != kKeyGroupStateFormatVersion) {
      return FailedPrecondition(context + ": its keyed state was written in format version " +
                                std::to_string(written) +
                                ", which this keyflow cannot read (it "
                                "reads versions 1 and " +
                                std::to_string(kKeyGroupStateFormatVersion) +
                                "); restore it with the keyflow version that wrote it");
    }
    version = kKeyGroupStateFormatVersion;
    stored = in.I32();
  }
  // A state takes at least: name length (1) + kind (1) [+ type length (1)] + entry count (1).
  const uint64_t num_states = in.Count(version == 1 ? 3 : 4);
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
    std::string_view type;
    if (version >= 2) type = in.Bytes();
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
                                " but is registered as " + table->type_description());
    }
    if (version >= 2 && type != table->type_description()) {
      return FailedPrecondition(
          context + ": state '" + std::string(name) + "' was checkpointed as " + std::string(type) +
          " but the job now declares " + table->type_description() +
          ": a job upgrade must keep the type of every state; declare it as " + std::string(type) +
          " again, or give the new type a new state name");
    }
    std::unique_ptr<StagedKeyGroup> entries;
    KF_RETURN_IF_ERROR_CTX(table->ReadKeyGroup(in, g, key_context().assigner(), &entries), context);
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
