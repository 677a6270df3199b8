// The operators a source task runs before the KeyBy (worker/operators/record_chain.h): order,
// timestamps, keying by the KeyBy's field, bad keys, and user code that throws.
#include "worker/operators/record_chain.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "common/field_tape_writer.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow {
namespace {

using ::testing::HasSubstr;

constexpr int32_t kMaxParallelism = 128;

// A record with one string member `name` = `value` (or an int member with `as_int`).
Record With(std::string_view name, std::string_view value, Timestamp ts = Timestamp(0)) {
  Record r;
  r.timestamp = ts;
  FieldTapeWriter w(&r.fields);
  w.BeginObject();
  w.Name(name);
  w.String(value);
  w.EndObject();
  return r;
}
Record WithInt(std::string_view name, int64_t value) {
  Record r;
  FieldTapeWriter w(&r.fields);
  w.BeginObject();
  w.Name(name);
  w.Int(value);
  w.EndObject();
  return r;
}

struct Fixture {
  std::vector<Status> bad_keys;
  std::vector<Record> out;

  RecordChain Make(std::vector<RecordChain::Operator> ops, std::string key_field = "word",
                   KeyType type = KeyType::kString) {
    RecordChain::Options options;
    options.job_name = "words";
    options.library = "libwords.so";
    options.key_field = std::move(key_field);
    options.key_type = type;
    options.max_parallelism = kMaxParallelism;
    options.on_bad_key = [this](const Status& why) {
      bad_keys.push_back(why);
      return Status::Ok();
    };
    return RecordChain(std::move(ops), std::move(options), nullptr);
  }
  Status Push(RecordChain& chain, const Record& r) {
    return chain.Process(r, [this](const Record& keyed) {
      out.push_back(keyed);
      return Status::Ok();
    });
  }
};

RecordChain::Operator Map(std::string uid, MapFunction fn) {
  RecordChain::Operator op{OperatorKind::kMap, std::move(uid), {}};
  op.functions.map = std::move(fn);
  return op;
}
RecordChain::Operator Filter(std::string uid, FilterFunction fn) {
  RecordChain::Operator op{OperatorKind::kFilter, std::move(uid), {}};
  op.functions.filter = std::move(fn);
  return op;
}
RecordChain::Operator FlatMap(std::string uid, FlatMapFunction fn) {
  RecordChain::Operator op{OperatorKind::kFlatMap, std::move(uid), {}};
  op.functions.flat_map = std::move(fn);
  return op;
}

std::string Word(const Record& r) {
  return std::string(r.field("word").AsString().value_or("?"));
}

TEST(RecordChainTest, RunsTheOperatorsInOrderAndKeysWhatComesOut) {
  Fixture f;
  RecordChain chain = f.Make({
      FlatMap("split",
              [](const Record& in, Collector<Record>& out) {
                std::string_view text = in.field("text").AsString().value_or("");
                for (char c : text) out.Collect(With("word", std::string(1, c)));
              }),
      Filter("not-b", [](const Record& r) { return Word(r) != "b"; }),
      Map("upper", [](const Record& r) { return With("word", Word(r) + Word(r)); }),
  });
  ASSERT_OK(f.Push(chain, With("text", "abc", Timestamp(42))));
  ASSERT_EQ(f.out.size(), 2u);
  EXPECT_EQ(Word(f.out[0]), "aa");
  EXPECT_EQ(Word(f.out[1]), "cc");
  KeyGroupAssigner assigner(KeyType::kString, kMaxParallelism);
  for (const Record& r : f.out) {
    EXPECT_EQ(r.key, Key::FromBytes(Word(r)));
    EXPECT_EQ(r.key_group, assigner.Assign(r.key));
    EXPECT_EQ(r.timestamp, Timestamp(42)) << "an output keeps the timestamp of its input";
  }
  EXPECT_TRUE(f.bad_keys.empty());
}

TEST(RecordChainTest, AMapCannotMoveARecordInEventTimeAndItsStaleLineIsDropped) {
  Fixture f;
  RecordChain chain = f.Make({Map("later", [](const Record& r) {
    Record out = r;
    out.timestamp = Timestamp(999);
    FieldTapeWriter w(&out.fields);
    w.BeginObject();
    w.Name("word");
    w.String("changed");
    w.EndObject();
    return out;
  })});
  Record in = With("word", "orig", Timestamp(5));
  in.payload = R"({"word":"orig"})";
  ASSERT_OK(f.Push(chain, in));
  ASSERT_EQ(f.out.size(), 1u);
  EXPECT_EQ(f.out[0].timestamp, Timestamp(5));
  EXPECT_EQ(f.out[0].raw_json(), R"({"word":"changed"})");
}

TEST(RecordChainTest, WithoutAKeyByWhatComesOutIsForwardedIntoOneKeyGroup) {
  Fixture f;
  RecordChain::Options options;
  options.job_name = "q2";
  options.max_parallelism = kMaxParallelism;
  options.forward_key_group = KeyGroupId(64);
  RecordChain chain({Filter("not-b", [](const Record& r) { return Word(r) != "b"; })},
                    std::move(options), nullptr);
  for (std::string_view w : {"a", "b", "c"}) {
    Record in = With("word", w, Timestamp(7));
    in.key = Key::FromBytes("stale");
    in.key_group = KeyGroupId(3);
    ASSERT_OK(f.Push(chain, in));
  }
  ASSERT_EQ(f.out.size(), 2u);
  for (const Record& r : f.out) {
    EXPECT_EQ(r.key_group, KeyGroupId(64));
    EXPECT_EQ(r.key, Key()) << "nothing is keyed";
    EXPECT_EQ(r.timestamp, Timestamp(7));
  }
  EXPECT_EQ(Word(f.out[0]), "a");
  EXPECT_EQ(Word(f.out[1]), "c");

  RecordChain::Options bare;
  bare.max_parallelism = kMaxParallelism;
  bare.forward_key_group = KeyGroupId(5);
  RecordChain empty({}, std::move(bare), nullptr);
  f.out.clear();
  ASSERT_OK(f.Push(empty, With("word", "z", Timestamp(9))));
  ASSERT_EQ(f.out.size(), 1u);
  EXPECT_EQ(f.out[0].key_group, KeyGroupId(5));
  EXPECT_EQ(f.out[0].raw_json(), R"({"word":"z"})");
}

TEST(RecordChainTest, IntegerKeysFollowTheParsersRules) {
  Fixture f;
  RecordChain chain =
      f.Make({Filter("all", [](const Record&) { return true; })}, "k", KeyType::kInt);
  ASSERT_OK(f.Push(chain, WithInt("k", -7)));
  ASSERT_OK(f.Push(chain, With("k", "42")));
  ASSERT_EQ(f.out.size(), 2u);
  EXPECT_EQ(f.out[0].key, Key::FromInt64(-7));
  EXPECT_EQ(f.out[1].key, Key::FromInt64(42));
  for (const Record& bad : {With("k", "+1"), With("k", "1 "), With("k", ""),
                            WithInt("k", int64_t{1} << 40), With("other", "1")}) {
    ASSERT_OK(f.Push(chain, bad));
  }
  EXPECT_EQ(f.out.size(), 2u);
  ASSERT_EQ(f.bad_keys.size(), 5u);
  EXPECT_EQ(f.bad_keys[0].message(), "the key field 'k' is not an integer (key type int)");
  EXPECT_EQ(f.bad_keys[3].message(), "the key field 'k' is out of range for key type int (32-bit)");
  EXPECT_EQ(f.bad_keys[4].message(), "the key field 'k' is missing");
}

TEST(RecordChainTest, AStringKeyMustBeAString) {
  Fixture f;
  RecordChain chain = f.Make({Map("id", [](const Record& r) { return r; })});
  ASSERT_OK(f.Push(chain, WithInt("word", 3)));
  EXPECT_TRUE(f.out.empty());
  ASSERT_EQ(f.bad_keys.size(), 1u);
  EXPECT_EQ(f.bad_keys[0].message(),
            "the key field 'word' is an integer, not a string (key type string)");
}

TEST(RecordChainTest, ABadKeyFailsWhenThePolicySaysSo) {
  RecordChain::Options options;
  options.key_field = "word";
  options.max_parallelism = kMaxParallelism;
  options.on_bad_key = [](const Status& why) { return InvalidArgument(why.message() + "!"); };
  RecordChain chain({Map("id", [](const Record& r) { return r; })}, options, nullptr);
  Status s = chain.Process(With("other", "x"), [](const Record&) { return Status::Ok(); });
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "the key field 'word' is missing!");
}

TEST(RecordChainTest, AThrowingFunctionFailsNamingTheOperatorAndTheCall) {
  Fixture f;
  RecordChain chain = f.Make({
      Filter("keep", [](const Record&) { return true; }),
      Map("explode", [](const Record&) -> Record { throw std::runtime_error("boom"); }),
  });
  Status s = f.Push(chain, With("word", "x"));
  EXPECT_EQ(s.code(), StatusCode::kInternal);
  EXPECT_THAT(s.message(), HasSubstr("operator 'explode' of job 'words' (libwords.so)"));
  EXPECT_THAT(s.message(), HasSubstr("std::runtime_error in Map: boom"));
  EXPECT_TRUE(f.out.empty());
}

TEST(RecordChainTest, AnErrorOfTheDownstreamStopsAFlatMapsOutputs) {
  Fixture f;
  RecordChain chain = f.Make({FlatMap("three", [](const Record& in, Collector<Record>& out) {
    for (int i = 0; i < 3; ++i) out.Collect(in);
  })});
  int emitted = 0;
  Status s = chain.Process(With("word", "x"), [&](const Record&) {
    return ++emitted == 2 ? Aborted("stop") : Status::Ok();
  });
  EXPECT_EQ(s.code(), StatusCode::kAborted);
  EXPECT_EQ(emitted, 2);
  // The chain is reusable after an error.
  ASSERT_OK(f.Push(chain, With("word", "y")));
  EXPECT_EQ(f.out.size(), 3u);
}

}  // namespace
}  // namespace keyflow
