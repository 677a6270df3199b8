#include "worker/sources/generator_split_reader.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/file_io.h"
#include "common/record_fields.h"
#include "tests/testutil/status_matchers.h"
#include "tests/worker/sources/test_util.h"
#include "worker/sources/json_record_parser.h"

namespace keyflow {
namespace {

constexpr int32_t kMaxParallelism = 128;

GeneratorSpec Spec(std::string_view params) {
  Result<GeneratorSpec> spec = ParseGeneratorSpec(params);
  EXPECT_OK(spec);
  return *spec;
}

GeneratorSplitReader Reader(const GeneratorSpec& spec, int32_t split,
                            SplitPosition from = SplitPosition(), const Clock* clock = nullptr) {
  static const KeyGroupAssigner assigner(KeyType::kString, kMaxParallelism);
  Result<GeneratorSplitReader> r = GeneratorSplitReader::Create(spec, split, assigner, from, clock);
  EXPECT_OK(r);
  return std::move(r).value();
}

std::vector<Record> ReadAll(GeneratorSplitReader& reader) {
  std::vector<Record> out;
  Record r;
  while (reader.Next(&r) == SplitReadResult::kRecord) out.push_back(r);
  return out;
}

int64_t KeyNumber(const Record& r) {
  std::string_view text = r.key.bytes();
  EXPECT_EQ(text.substr(0, 4), "uid-");
  return std::stoll(std::string(text.substr(4)));
}

TEST(GeneratorSplitReader, SameSeedGivesTheSameEventsAndAnotherSeedOtherEvents) {
  GeneratorSpec a = Spec("events=1000,keys=50,splits=2,seed=7,payload=12");
  GeneratorSpec b = Spec("events=1000,keys=50,splits=2,seed=8,payload=12");
  for (int32_t s = 0; s < 2; ++s) {
    GeneratorSplitReader r1 = Reader(a, s);
    GeneratorSplitReader r2 = Reader(a, s);
    GeneratorSplitReader r3 = Reader(b, s);
    std::vector<Record> e1 = ReadAll(r1), e2 = ReadAll(r2), e3 = ReadAll(r3);
    EXPECT_EQ(e1.size(), 500u);
    EXPECT_EQ(e1, e2);
    EXPECT_NE(e1, e3);
  }
}

TEST(GeneratorSplitReader, EventAtAPositionEqualsThatEventOfAFullRunAndResumingNeedsNoReplay) {
  GeneratorSpec spec = Spec("events=3001,keys=100,splits=3,seed=42,payload=5");
  for (int32_t s = 0; s < 3; ++s) {
    GeneratorSplitReader full = Reader(spec, s);
    std::vector<Record> all = ReadAll(full);
    ASSERT_EQ(static_cast<int64_t>(all.size()), spec.EventsInSplit(s));
    EXPECT_EQ(full.position(), SplitPosition::InGenerator(spec.EventsInSplit(s)));
    for (int64_t o : {int64_t{0}, int64_t{1}, int64_t{500}, spec.EventsInSplit(s) - 1}) {
      Record at;
      full.EventAt(o, &at);
      EXPECT_EQ(at, all[static_cast<size_t>(o)]) << "split " << s << " event " << o;
      GeneratorSplitReader resumed = Reader(spec, s, SplitPosition::InGenerator(o));
      std::vector<Record> rest = ReadAll(resumed);
      EXPECT_EQ(rest, std::vector<Record>(all.begin() + o, all.end()));
    }
  }
}

TEST(GeneratorSplitReader, EventsAreSpreadOverSplitsAsEvenlyAsPossible) {
  GeneratorSpec spec = Spec("events=10,keys=3,splits=3");
  std::vector<int64_t> sizes;
  for (int32_t s = 0; s < 3; ++s) sizes.push_back(Reader(spec, s).size());
  EXPECT_EQ(sizes, (std::vector<int64_t>{4, 3, 3}));
  GeneratorSpec few = Spec("events=2,keys=5,splits=5");
  EXPECT_EQ(Reader(few, 0).size(), 1);
  EXPECT_EQ(Reader(few, 4).size(), 0);
  GeneratorSplitReader empty = Reader(few, 4);
  Record r;
  EXPECT_EQ(empty.Next(&r), SplitReadResult::kEndOfSplit);
}

TEST(GeneratorSplitReader, EachKeyBelongsToExactlyOneSplitAndEveryKeyIsUsed) {
  GeneratorSpec spec = Spec("events=20000,keys=40,splits=3,seed=1");
  std::map<int64_t, std::set<int32_t>> splits_of_key;
  for (int32_t s = 0; s < 3; ++s) {
    GeneratorSplitReader reader = Reader(spec, s);
    for (const Record& r : ReadAll(reader)) {
      int64_t k = KeyNumber(r);
      EXPECT_EQ(k % 3, s);
      splits_of_key[k].insert(s);
    }
  }
  EXPECT_EQ(splits_of_key.size(), 40u);  // keys 0..39, all used
  for (const auto& [k, splits] : splits_of_key) {
    EXPECT_GE(k, 0);
    EXPECT_LT(k, 40);
    EXPECT_EQ(splits.size(), 1u) << "key " << k;
  }
}

TEST(GeneratorSplitReader, KeysAreInlineStringsWithTheirFlinkKeyGroup) {
  GeneratorSpec spec = Spec("events=100,keys=1000000,splits=1,seed=3");
  GeneratorSplitReader reader = Reader(spec, 0);
  for (const Record& r : ReadAll(reader)) {
    EXPECT_LE(r.key.size(), Key::kInlineCapacity);
    EXPECT_EQ(r.key_group, *AssignToKeyGroup(r.key, KeyType::kString, kMaxParallelism));
    EXPECT_TRUE(r.payload.empty());
  }
}

TEST(GeneratorSplitReader, TimestampsFollowTheStreamPositionWithBoundedDisorder) {
  GeneratorSpec spec = Spec("events=30000,keys=10,splits=3,seed=9,disorder=50,step=2,start=1000");
  std::vector<std::vector<Record>> per_split;
  for (int32_t s = 0; s < 3; ++s) {
    GeneratorSplitReader reader = Reader(spec, s);
    per_split.push_back(ReadAll(reader));
  }
  int64_t min_jitter = INT64_MAX, max_jitter = INT64_MIN;
  int64_t global_max = INT64_MIN / 2;    // minus the bound must not overflow
  for (int64_t g = 0; g < 30000; ++g) {  // the whole stream in global order
    const Record& r = per_split[static_cast<size_t>(g % 3)][static_cast<size_t>(g / 3)];
    int64_t base = 1000 + g * 2;
    int64_t jitter = r.timestamp.millis() - base;
    min_jitter = std::min(min_jitter, jitter);
    max_jitter = std::max(max_jitter, jitter);
    // Bounded out-of-orderness: never more than `disorder` behind the maximum so far.
    EXPECT_GT(r.timestamp.millis(), global_max - 50);
    global_max = std::max(global_max, r.timestamp.millis());
  }
  EXPECT_EQ(min_jitter, 0);
  EXPECT_EQ(max_jitter, 49);
  for (int32_t s = 0; s < 3; ++s) {  // and per split, which is what a watermark generator sees
    int64_t split_max = INT64_MIN / 2;
    for (const Record& r : per_split[static_cast<size_t>(s)]) {
      EXPECT_GT(r.timestamp.millis(), split_max - 50);
      split_max = std::max(split_max, r.timestamp.millis());
    }
  }
}

TEST(GeneratorSplitReader, ZeroDisorderIsInOrder) {
  GeneratorSpec spec = Spec("events=100,keys=4,splits=2,disorder=0,step=10,start=0");
  GeneratorSplitReader reader = Reader(spec, 1);
  std::vector<Record> events = ReadAll(reader);
  ASSERT_EQ(events.size(), 50u);
  for (size_t o = 0; o < events.size(); ++o) {
    EXPECT_EQ(events[o].timestamp, Timestamp(static_cast<int64_t>(o * 2 + 1) * 10));
  }
}

TEST(GeneratorSplitReader, UniformKeysAreRoughlyEvenAndSkewMakesLowRanksHot) {
  auto counts = [](const GeneratorSpec& spec) {
    std::map<int64_t, int64_t> c;
    GeneratorSplitReader reader = Reader(spec, 0);
    for (const Record& r : ReadAll(reader)) ++c[KeyNumber(r)];
    return c;
  };
  std::map<int64_t, int64_t> uniform = counts(Spec("events=100000,keys=10,splits=1,seed=5"));
  ASSERT_EQ(uniform.size(), 10u);
  for (const auto& [k, n] : uniform) {
    EXPECT_GT(n, 9000) << k;
    EXPECT_LT(n, 11000) << k;
  }
  std::map<int64_t, int64_t> zipf = counts(Spec("events=100000,keys=100,splits=1,seed=5,skew=1"));
  // Continuous Zipf(1) over ranks 1..100: P(rank 1) = ln(2)/ln(101) = 0.150,
  // P(rank 2) = ln(3/2)/ln(101) = 0.088, P(rank 100) = ln(101/100)/ln(101) = 0.0022.
  EXPECT_NEAR(zipf[0] / 100000.0, 0.150, 0.01);
  EXPECT_NEAR(zipf[1] / 100000.0, 0.088, 0.01);
  EXPECT_NEAR(zipf[99] / 100000.0, 0.0022, 0.001);
  std::map<int64_t, int64_t> steep = counts(Spec("events=100000,keys=100,splits=1,seed=5,skew=2"));
  EXPECT_GT(steep[0], zipf[0]);
  for (const auto& [k, n] : steep) {
    EXPECT_GE(k, 0);
    EXPECT_LT(k, 100);
  }
}

TEST(GeneratorSplitReader, HotSetTouchesEveryKeyOnceThenOnlyTheHotKeys) {
  // 3 splits, 3000 keys (1000 per split), 1 %: 10 hot keys per split, ranks 0..9.
  GeneratorSpec spec = Spec("events=30000,keys=3000,splits=3,seed=9,hot=0.01");
  for (int32_t s = 0; s < 3; ++s) {
    GeneratorSplitReader reader = Reader(spec, s);
    std::vector<Record> events = ReadAll(reader);
    ASSERT_EQ(events.size(), 10000u);
    for (int64_t o = 0; o < 1000; ++o) EXPECT_EQ(KeyNumber(events[o]), o * 3 + s) << o;
    std::map<int64_t, int64_t> hot;
    for (size_t o = 1000; o < events.size(); ++o) ++hot[KeyNumber(events[o])];
    ASSERT_EQ(hot.size(), 10u);  // all ten hot keys, nothing else
    for (const auto& [k, n] : hot) {
      EXPECT_EQ(k % 3, s);
      EXPECT_LT(k / 3, 10);
      EXPECT_GT(n, 700) << k;  // 900 expected each
      EXPECT_LT(n, 1100) << k;
    }
  }
  // Deterministic: the same spec gives the same stream; EventAt equals the sequential read.
  GeneratorSplitReader a = Reader(spec, 1);
  GeneratorSplitReader b = Reader(spec, 1, SplitPosition::InGenerator(4321));
  std::vector<Record> all = ReadAll(a);
  Record r;
  ASSERT_EQ(b.Next(&r), SplitReadResult::kRecord);
  EXPECT_EQ(r.key, all[4321].key);
  EXPECT_EQ(r.timestamp, all[4321].timestamp);
}

TEST(GeneratorSplitReader, HotShareSendsTheRestUniformlyOverAllKeys) {
  GeneratorSpec spec = Spec("events=101000,keys=1000,splits=1,seed=3,hot=0.01,hot_share=0.8");
  GeneratorSplitReader reader = Reader(spec, 0);
  std::vector<Record> events = ReadAll(reader);
  int64_t to_hot = 0;
  std::set<int64_t> cold_keys;
  for (size_t o = 1000; o < events.size(); ++o) {
    int64_t k = KeyNumber(events[o]);
    if (k < 10) {
      ++to_hot;
    } else {
      cold_keys.insert(k);
    }
  }
  // 100000 records after the first pass: 80 % to the hot set plus 20 % * 1 % of the uniform
  // ones that hit a hot key = 80200 expected.
  EXPECT_NEAR(to_hot / 100000.0, 0.802, 0.01);
  EXPECT_EQ(cold_keys.size(), 990u);  // 20000 uniform records reach every cold key
}

TEST(GeneratorSplitReader, SkewedKeysStayInTheirSplit) {
  GeneratorSpec spec = Spec("events=9000,keys=30,splits=3,seed=5,skew=1.5");
  for (int32_t s = 0; s < 3; ++s) {
    GeneratorSplitReader reader = Reader(spec, s);
    std::vector<Record> events = ReadAll(reader);
    std::map<int64_t, int64_t> c;
    for (const Record& r : events) ++c[KeyNumber(r)];
    for (const auto& [k, n] : c) EXPECT_EQ(k % 3, s);
    EXPECT_EQ(
        std::max_element(c.begin(), c.end(), [](auto& a, auto& b) { return a.second < b.second; })
            ->first,
        s);  // rank 0 of split s is key s
  }
}

TEST(GeneratorSplitReader, PayloadIsDeterministicLowercaseFillerOfTheGivenSize) {
  GeneratorSpec spec = Spec("events=20,keys=2,splits=1,seed=5,payload=13");
  GeneratorSplitReader reader = Reader(spec, 0);
  std::vector<Record> events = ReadAll(reader);
  std::set<std::string> distinct;
  for (const Record& r : events) {
    ASSERT_EQ(r.payload.size(), 13u);
    for (char c : r.payload) EXPECT_TRUE(c >= 'a' && c <= 'z') << r.payload;
    distinct.insert(r.payload);
  }
  EXPECT_GT(distinct.size(), 15u);
  GeneratorSplitReader again = Reader(spec, 0);
  EXPECT_EQ(ReadAll(again), events);
}

TEST(GeneratorSplitReader, RateLimitPacesEachSplitOnTheInjectedClock) {
  // 20 events/s over 2 splits: 10 events/s = one per 100 ms per split.
  GeneratorSpec spec = Spec("events=1000,keys=2,splits=2,rate=20");
  ManualClock clock(Timestamp(1000));
  GeneratorSplitReader reader = Reader(spec, 0, SplitPosition(), &clock);
  Record r;
  EXPECT_EQ(reader.Next(&r), SplitReadResult::kRecord);  // the first one at once
  EXPECT_EQ(reader.Next(&r), SplitReadResult::kThrottled);
  EXPECT_EQ(reader.next_available_time(), Timestamp(1100));
  clock.Set(Timestamp(1099));
  EXPECT_EQ(reader.Next(&r), SplitReadResult::kThrottled);
  clock.Set(Timestamp(1100));
  EXPECT_EQ(reader.Next(&r), SplitReadResult::kRecord);
  EXPECT_EQ(reader.Next(&r), SplitReadResult::kThrottled);
  EXPECT_EQ(reader.next_available_time(), Timestamp(1200));

  // One second later exactly ten more are allowed.
  clock.Set(Timestamp(2100));
  int n = 0;
  while (reader.Next(&r) == SplitReadResult::kRecord) ++n;
  EXPECT_EQ(n, 10);
  EXPECT_EQ(reader.position(), SplitPosition::InGenerator(12));
  EXPECT_EQ(reader.next_available_time(), Timestamp(2200));

  // After an hour without reading only one second's worth comes out at once.
  clock.Set(Timestamp(2100 + 3600 * 1000));
  n = 0;
  while (reader.Next(&r) == SplitReadResult::kRecord) ++n;
  EXPECT_EQ(n, 10);
  EXPECT_EQ(reader.next_available_time(), Timestamp(2100 + 3600 * 1000 + 100));
}

TEST(GeneratorSplitReader, FractionalRatesWork) {
  GeneratorSpec spec = Spec("events=10,keys=1,splits=1,rate=0.5");  // one event per 2 s
  ManualClock clock(Timestamp(0));
  GeneratorSplitReader reader = Reader(spec, 0, SplitPosition(), &clock);
  Record r;
  EXPECT_EQ(reader.Next(&r), SplitReadResult::kRecord);
  EXPECT_EQ(reader.Next(&r), SplitReadResult::kThrottled);
  EXPECT_EQ(reader.next_available_time(), Timestamp(2000));
  clock.Set(Timestamp(1999));
  EXPECT_EQ(reader.Next(&r), SplitReadResult::kThrottled);
  clock.Set(Timestamp(2000));
  EXPECT_EQ(reader.Next(&r), SplitReadResult::kRecord);
}

TEST(GeneratorSplitReader, UnlimitedRateNeverThrottlesAndEndsAtTheSplitEnd) {
  GeneratorSpec spec = Spec("events=5,keys=1,splits=1");
  GeneratorSplitReader reader = Reader(spec, 0);
  Record r;
  for (int i = 0; i < 5; ++i) EXPECT_EQ(reader.Next(&r), SplitReadResult::kRecord);
  EXPECT_EQ(reader.Next(&r), SplitReadResult::kEndOfSplit);
  EXPECT_EQ(reader.position(), SplitPosition::InGenerator(5));
}

// hold=PATH: the split's events come as usual; at its end it waits (throttled, looking again
// every 50 ms) until the file exists, then ends. Restored at its end it waits again.
TEST(GeneratorSplitReader, AHeldSplitEndsOnlyOnceItsHoldFileExists) {
  TempDir dir("generator-hold");
  const std::string go = dir.path() + "/go";
  GeneratorSpec spec = Spec("events=2,keys=1,splits=1,hold=" + go);
  ManualClock clock(Timestamp(1000));
  GeneratorSplitReader reader = Reader(spec, 0, SplitPosition(), &clock);
  Record r;
  EXPECT_EQ(reader.Next(&r), SplitReadResult::kRecord);
  EXPECT_EQ(reader.Next(&r), SplitReadResult::kRecord);
  EXPECT_EQ(reader.Next(&r), SplitReadResult::kThrottled);
  EXPECT_EQ(reader.next_available_time(), Timestamp(1050));
  EXPECT_EQ(reader.position(), SplitPosition::InGenerator(2));
  clock.Set(Timestamp(1050));
  EXPECT_EQ(reader.Next(&r), SplitReadResult::kThrottled);
  EXPECT_EQ(reader.next_available_time(), Timestamp(1100));
  GeneratorSplitReader restored = Reader(spec, 0, SplitPosition::InGenerator(2), &clock);
  EXPECT_EQ(restored.Next(&r), SplitReadResult::kThrottled);
  ASSERT_OK(WriteFileAtomically(go, ""));
  EXPECT_EQ(reader.Next(&r), SplitReadResult::kEndOfSplit);
  EXPECT_EQ(reader.Next(&r), SplitReadResult::kEndOfSplit);
  EXPECT_EQ(restored.Next(&r), SplitReadResult::kEndOfSplit);
  EXPECT_EQ(reader.position(), SplitPosition::InGenerator(2));
}

TEST(GeneratorSplitReader, CreateRejectsNonStringKeysUnknownSplitsAndPositionsPastTheEnd) {
  GeneratorSpec spec = Spec("events=10,keys=2,splits=2");
  KeyGroupAssigner longs(KeyType::kLong, kMaxParallelism);
  EXPECT_EQ(GeneratorSplitReader::Create(spec, 0, longs).status(),
            InvalidArgument("the generator (--input gen:...) produces string keys, but the key "
                            "type is long; use --key-type string"));
  KeyGroupAssigner strings(KeyType::kString, kMaxParallelism);
  EXPECT_EQ(GeneratorSplitReader::Create(spec, 2, strings).status(),
            InvalidArgument("generator split 2 does not exist: " + spec.ToString() +
                            " has 2 splits; was --input changed since the checkpoint?"));
  EXPECT_EQ(GeneratorSplitReader::Create(spec, 1, strings, SplitPosition::InGenerator(6)).status(),
            InvalidArgument("cannot resume generator split 1 at event 6: it has only 5 events (" +
                            spec.ToString() + "); was --input changed since the checkpoint?"));
  EXPECT_OK(GeneratorSplitReader::Create(spec, 1, strings, SplitPosition::InGenerator(5)));
}

TEST(GeneratorSplitReader, RecordsWithFieldsAreJsonObjectsWithTheirTape) {
  const GeneratorSpec spec = Spec("events=200,keys=10,splits=2,seed=3,note=20");
  static const KeyGroupAssigner assigner(KeyType::kString, kMaxParallelism);
  GeneratorRecordFormat format;
  format.with_fields = true;
  format.key_field = "user";
  format.timestamp_field = "time";
  Result<GeneratorSplitReader> with =
      GeneratorSplitReader::Create(spec, 1, assigner, SplitPosition(), nullptr, format);
  ASSERT_OK(with);
  GeneratorSplitReader without = Reader(spec, 1);
  JsonRecordFormat json;
  json.key_field = "user";
  json.timestamp_field = "time";
  json.keep_fields = true;
  JsonRecordParser parser(json, kMaxParallelism);
  std::set<int64_t> amounts;
  for (int64_t i = 0; i < with->size(); ++i) {
    Record r, plain, parsed;
    with->EventAt(i, &r);
    without.EventAt(i, &plain);
    // Same key, key group and timestamp as without fields.
    ASSERT_EQ(r.key, plain.key);
    ASSERT_EQ(r.key_group, plain.key_group);
    ASSERT_EQ(r.timestamp, plain.timestamp);
    ASSERT_OK(ValidateFieldTape(r.fields));
    EXPECT_EQ(*r.GetString("user"), r.key.bytes());
    EXPECT_EQ(*r.GetInt64("time"), r.timestamp.millis());
    const int64_t amount = *r.GetInt64("amount");
    EXPECT_GE(amount, 0);
    EXPECT_LT(amount, 1000);
    amounts.insert(amount);
    EXPECT_EQ(r.GetString("note")->size(), 20u);
    // payload is the record's JSON line: parsing it gives the same tape.
    ASSERT_OK(parser.Parse(r.raw_json(), &parsed)) << r.raw_json();
    EXPECT_EQ(parsed.fields, r.fields) << r.raw_json();
    EXPECT_EQ(parsed.key, r.key);
  }
  EXPECT_GT(amounts.size(), 50u);  // amounts vary
  Record first;
  with->EventAt(0, &first);
  EXPECT_EQ(first.raw_json().substr(0, 13), R"({"user":"uid-)");
}

TEST(GeneratorSplitReader, DefaultNoteIsAHundredBytes) {
  const GeneratorSpec spec = Spec("events=4,keys=2,splits=1");
  static const KeyGroupAssigner assigner(KeyType::kString, kMaxParallelism);
  GeneratorRecordFormat format;
  format.with_fields = true;
  Result<GeneratorSplitReader> reader =
      GeneratorSplitReader::Create(spec, 0, assigner, SplitPosition(), nullptr, format);
  ASSERT_OK(reader);
  Record r;
  reader->EventAt(0, &r);
  EXPECT_EQ(r.GetString("note")->size(), 100u);
  EXPECT_EQ(r.object().size(), 4u);
}

// A projection (GeneratorRecordFormat::fields, the job's declared fields): the tape holds only
// the listed members, byte for byte what the JSON parser's projection makes of the full record's
// line; key, key group and timestamp do not change.
GeneratorSplitReader FieldReader(const GeneratorSpec& spec, std::vector<std::string> fields) {
  static const KeyGroupAssigner assigner(KeyType::kString, kMaxParallelism);
  GeneratorRecordFormat format;
  format.with_fields = true;
  format.fields = std::move(fields);
  Result<GeneratorSplitReader> r =
      GeneratorSplitReader::Create(spec, 0, assigner, SplitPosition(), nullptr, format);
  EXPECT_OK(r);
  return std::move(r).value();
}

TEST(GeneratorSplitReader, AProjectionWritesOnlyTheListedFieldsAsTheParserWouldProjectThem) {
  const GeneratorSpec spec = Spec("events=100,keys=10,splits=2,seed=3,note=20");
  GeneratorSplitReader full = FieldReader(spec, {});
  const std::vector<std::vector<std::string>> projections = {
      {"amount"}, {"note", "uid"}, {"ts"}, {"absent"}, {"amount", "ts", "uid", "note"}};
  for (const std::vector<std::string>& fields : projections) {
    GeneratorSplitReader projected = FieldReader(spec, fields);
    JsonRecordFormat json;
    json.keep_fields = true;
    json.fields = fields;
    JsonRecordParser parser(json, kMaxParallelism);
    for (int64_t i = 0; i < projected.size(); ++i) {
      Record f, p, parsed;
      full.EventAt(i, &f);
      projected.EventAt(i, &p);
      ASSERT_EQ(p.key, f.key);
      ASSERT_EQ(p.key_group, f.key_group);
      ASSERT_EQ(p.timestamp, f.timestamp);
      ASSERT_OK(ValidateFieldTape(p.fields));
      ASSERT_OK(parser.Parse(f.raw_json(), &parsed)) << f.raw_json();
      ASSERT_EQ(p.fields, parsed.fields) << f.raw_json() << " -> " << p.raw_json();
    }
  }
  // The benchmark's case: {"amount":N}, 26 bytes instead of 74 + the note.
  GeneratorSplitReader amount = FieldReader(spec, {"amount"});
  Record f, p;
  full.EventAt(3, &f);
  amount.EventAt(3, &p);
  EXPECT_EQ(p.raw_json(), "{\"amount\":" + std::to_string(*f.GetInt64("amount")) + "}");
  EXPECT_EQ(p.fields.size(), 26u);
  EXPECT_TRUE(p.field("note").is_missing());
}

}  // namespace
}  // namespace keyflow
