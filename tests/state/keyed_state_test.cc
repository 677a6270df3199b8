// The backend-neutral state API (state/keyed_state.h, state/keyed_state_backend.h) driven by code
// compiled with only the SDK headers (sdk_only_job.cc), against the heap backend seen through
// the KeyedStateBackend interface: every handle kind, namespaces, the value representations of
// the heap (inline and boxed), snapshots and copy-on-write copies through the interface.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>

#include "state/heap/heap_keyed_state_backend.h"
#include "state/keyed_state_backend.h"
#include "tests/state/sdk_only_job.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow {
namespace {

using sdk_test::SessionStates;

constexpr int32_t kMaxP = 128;
const KeyGroupRange kAll = KeyGroupRange::Of(0, kMaxP - 1);

struct Subtask {
  Subtask()
      : context(KeyType::kString, kMaxP, kAll),
        heap(std::make_unique<HeapKeyedStateBackend>(context)),
        backend(*heap),
        runtime(SubtaskIndex(0), 1, KeyType::kString, {}, heap.get()) {
    Status s = sdk_test::RegisterStates(runtime, &states);
    EXPECT_EQ(s, Status::Ok());
  }
  void SetKey(const std::string& k) {
    ASSERT_EQ(backend.SetCurrentKey(Key::FromBytes(k)), Status::Ok());
  }
  std::map<int32_t, std::string> SerializeAll() const {
    std::map<int32_t, std::string> all;
    for (KeyGroupId g : kAll.key_groups()) {
      BinaryWriter w(&all[g.value()]);
      backend.SerializeKeyGroup(g, w);
    }
    return all;
  }

  KeyContext context;
  std::unique_ptr<HeapKeyedStateBackend> heap;
  KeyedStateBackend& backend;
  RuntimeContext runtime;
  SessionStates states;
};

TEST(KeyedState, EveryHandleKindThroughTheInterface) {
  Subtask t;
  t.SetKey("alice");
  EXPECT_EQ(sdk_test::Describe(t.states), "count=0 pages= per-page=(empty)");
  sdk_test::OnVisit(t.states, "home", 10);
  sdk_test::OnVisit(t.states, "cart", 30);
  sdk_test::OnVisit(t.states, "home", 20);
  EXPECT_EQ(sdk_test::Describe(t.states),
            "count=3 last=home@20 window=3/10-110 pages=home,cart,home, per-page=cart:1,home:2, "
            "max=30 avg=20.000000");
  t.SetKey("bob");
  EXPECT_EQ(sdk_test::Describe(t.states), "count=0 pages= per-page=(empty)");
  sdk_test::OnVisit(t.states, "cart", 5);
  t.SetKey("alice");
  sdk_test::Forget(t.states, "cart", /*clear_pages=*/false);
  sdk_test::Forget(t.states, "home", /*clear_pages=*/true);
  EXPECT_EQ(sdk_test::Describe(t.states),
            "count=3 last=home@20 window=3/10-110 pages= per-page=(empty) max=30 avg=20.000000");
  // alice: count, last, window, max, avg (the emptied list and map are removed); bob: 7.
  EXPECT_EQ(t.backend.NumEntries(), 12u);
}

TEST(KeyedState, NamespacesSeparateValues) {
  Subtask t;
  t.SetKey("alice");
  sdk_test::OnVisit(t.states, "home", 10);
  t.states.window->SetCurrentNamespace(kVoidNamespace);
  EXPECT_FALSE(t.states.window->Value().has_value());
  t.states.window->Update(sdk_test::Window{9, 9, 9});
  t.states.window->SetCurrentNamespace(Namespace(7));
  EXPECT_EQ(t.states.window->Value()->count, 1);
  EXPECT_EQ(t.states.window->current_namespace(), Namespace(7));
  EXPECT_EQ(t.states.window->name(), "window");
}

TEST(KeyedState, RegisteringAgainReturnsTheSameHandleAndAnotherTypeIsRefused) {
  Subtask t;
  auto again = t.runtime.GetState(ValueStateDescriptor<int64_t>("count", 0));
  ASSERT_OK(again);
  EXPECT_EQ(*again, t.states.count);
  auto other = t.runtime.GetListState(ListStateDescriptor<int64_t>("count"));
  EXPECT_EQ(other.status(),
            AlreadyExists("keyed state 'count' is already registered as ValueState<long>; it "
                          "cannot also be registered as ListState<long>. State names are unique "
                          "per operator: use another name"));
  auto unnamed = t.runtime.GetState(ValueStateDescriptor<int64_t>(""));
  EXPECT_EQ(unnamed.status().code(), StatusCode::kInvalidArgument);
  auto no_function = t.runtime.GetReducingState(ReducingStateDescriptor<int64_t>("sum", nullptr));
  EXPECT_EQ(no_function.status(), InvalidArgument("ReducingState 'sum' needs a reduce function"));
}

// Snapshot through the interface, restore into a fresh backend registered by the SDK code: the
// same bytes again, and the same state; a copy-on-write copy writes the same bytes.
TEST(KeyedState, SnapshotsRoundTripThroughTheInterface) {
  Subtask writer;
  for (int i = 0; i < 200; ++i) {
    writer.SetKey("user-" + std::to_string(i % 37));
    sdk_test::OnVisit(writer.states, "page-" + std::to_string(i % 5), i);
  }
  std::map<int32_t, std::string> bytes = writer.SerializeAll();
  for (KeyGroupId g : kAll.key_groups()) {
    std::string copied;
    BinaryWriter w(&copied);
    writer.backend.CopyKeyGroup(g)->Write(w);
    ASSERT_EQ(copied, bytes[g.value()]) << g;
  }

  Subtask reader;
  for (KeyGroupId g : kAll.key_groups()) {
    BinaryReader r(bytes[g.value()]);
    ASSERT_EQ(reader.backend.RestoreKeyGroup(g, r), Status::Ok());
  }
  EXPECT_EQ(reader.SerializeAll(), bytes);
  EXPECT_EQ(reader.backend.NumEntries(), writer.backend.NumEntries());
  for (int u = 0; u < 37; ++u) {
    writer.SetKey("user-" + std::to_string(u));
    reader.SetKey("user-" + std::to_string(u));
    EXPECT_EQ(sdk_test::Describe(reader.states), sdk_test::Describe(writer.states)) << u;
  }
}

TEST(KeyedState, ApplyToAllKeysVisitsKeysWithState) {
  Subtask t;
  for (const char* k : {"c", "a", "b"}) {
    t.SetKey(k);
    sdk_test::OnVisit(t.states, "home", 1);
  }
  std::string seen;
  ASSERT_EQ(t.backend.ApplyToAllKeys("count", kVoidNamespace,
                                     [&](const Key& k) {
                                       seen += std::string(k.bytes()) + "=" +
                                               std::to_string(*t.states.count->Value()) + " ";
                                       return Status::Ok();
                                     }),
            Status::Ok());
  EXPECT_EQ(seen.size(), 12u);  // three keys, in key-group order
  EXPECT_NE(seen.find("a=1 "), std::string::npos);
  t.backend.ClearAll();
  EXPECT_EQ(t.backend.NumEntries(), 0u);
}

// A type that fixes the name it is recorded under, so it may be renamed in C++.
struct RenamedSession {
  static constexpr std::string_view kStateTypeName = "Session";
  int64_t start = 0;
  void Write(BinaryWriter& out) const { out.I64(start); }
  bool Read(BinaryReader& in) {
    start = in.I64();
    return in.ok();
  }
};

TEST(KeyedState, DeclaredTypesAreStableNames) {
  EXPECT_EQ(ValueStateDescriptor<int64_t>::TypeDescription(), "ValueState<long>");
  EXPECT_EQ(ValueStateDescriptor<RenamedSession>::TypeDescription(), "ValueState<Session>");
  // keyflow:: and (anonymous namespace):: are not part of the name.
  EXPECT_EQ((MapStateDescriptor<std::string, sdk_test::Window>::TypeDescription()),
            "MapState<std::string, sdk_test::Window>");
  EXPECT_EQ(TypeOpsOf<RenamedSession>().type_name(), "Session");
  EXPECT_TRUE(TypeOpsOf<RenamedSession>().trivially_copyable);
  EXPECT_FALSE(TypeOpsOf<std::string>().trivially_copyable);
}

}  // namespace
}  // namespace keyflow
