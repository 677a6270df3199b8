// The Nexmark generator (worker/jobs/nexmark/nexmark_generator.h) and, through the built
// libnexmark.so, its source connector and the queries q0, q1, q2.
#include "worker/jobs/nexmark/nexmark_generator.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "common/job_library/job_library.h"
#include "common/record.h"
#include "worker/api/stream_graph.h"
#include "worker/sources/json_record_parser.h"

namespace keyflow {
namespace {

using ::testing::HasSubstr;
using Json = nlohmann::json;

NexmarkConfig Config(const std::string& args) {
  NexmarkConfig config;
  std::string error;
  EXPECT_TRUE(ParseNexmarkConfig(args, &config, &error)) << error;
  return config;
}

std::string Event(const NexmarkConfig& config, int64_t g) {
  std::string out;
  NexmarkEventJson(config, g, &out);
  return out;
}

Json ParsedEvent(const NexmarkConfig& config, int64_t g) {
  return Json::parse(Event(config, g));
}

std::set<std::string> Keys(const Json& object) {
  std::set<std::string> keys;
  for (const auto& [key, value] : object.items()) keys.insert(key);
  return keys;
}

// ---- the generator ----------------------------------------------------------------------------

TEST(NexmarkGeneratorTest, EveryFiftyEventsAreOnePersonThreeAuctionsAndFortySixBids) {
  const NexmarkConfig config = Config("events=50000");
  std::map<int64_t, int64_t> counts;
  for (int64_t g = 0; g < 50'000; ++g) {
    const Json event = ParsedEvent(config, g);
    const int64_t type = event.at("event_type").get<int64_t>();
    ASSERT_EQ(type, static_cast<int64_t>(NexmarkEventTypeOf(g))) << g;
    const int64_t offset = g % 50;
    ASSERT_EQ(type, offset == 0 ? 0 : offset <= 3 ? 1 : 2) << g;
    ++counts[type];
  }
  EXPECT_EQ(counts, (std::map<int64_t, int64_t>{{0, 1'000}, {1, 3'000}, {2, 46'000}}));
}

TEST(NexmarkGeneratorTest, AnEventIsAPureFunctionOfSeedAndEventNumber) {
  const NexmarkConfig config = Config("events=1000,seed=7");
  std::vector<std::string> forward;
  for (int64_t g = 0; g < 1'000; ++g) forward.push_back(Event(config, g));
  std::string reused;  // one string reused backwards: same bytes, whatever came before
  for (int64_t g = 999; g >= 0; --g) {
    NexmarkEventJson(config, g, &reused);
    ASSERT_EQ(reused, forward[g]) << g;
  }
  // Neither the number of events nor the splits change an event; the seed changes every one.
  const NexmarkConfig more = Config("events=5000,splits=4,seed=7");
  const NexmarkConfig other_seed = Config("events=1000,seed=8");
  for (int64_t g = 0; g < 1'000; ++g) {
    ASSERT_EQ(Event(more, g), forward[g]) << g;
    ASSERT_NE(Event(other_seed, g), forward[g]) << g;
  }
}

TEST(NexmarkGeneratorTest, PeopleAndAuctionsAreNumberedFromOneThousandInEventOrder) {
  const NexmarkConfig config = Config("events=100000");
  EXPECT_EQ(ParsedEvent(config, 0)["person"]["id"], 1000);
  EXPECT_EQ(ParsedEvent(config, 1)["auction"]["id"], 1000);
  EXPECT_EQ(ParsedEvent(config, 2)["auction"]["id"], 1001);
  EXPECT_EQ(ParsedEvent(config, 3)["auction"]["id"], 1002);
  EXPECT_EQ(ParsedEvent(config, 50)["person"]["id"], 1001);
  EXPECT_EQ(ParsedEvent(config, 51)["auction"]["id"], 1003);
  int64_t next_person = 1000;
  int64_t next_auction = 1000;
  for (int64_t g = 0; g < 100'000; ++g) {
    const Json event = ParsedEvent(config, g);
    if (event.contains("person")) {
      ASSERT_EQ(event["person"]["id"], next_person++) << g;
      ASSERT_EQ(NexmarkLastPersonId(g), next_person - 1) << g;
    } else if (event.contains("auction")) {
      ASSERT_EQ(event["auction"]["id"], next_auction++) << g;
      ASSERT_EQ(NexmarkLastAuctionId(g), next_auction - 1) << g;
    } else {
      ASSERT_EQ(NexmarkLastPersonId(g), next_person - 1) << g;
      ASSERT_EQ(NexmarkLastAuctionId(g), next_auction - 1) << g;
    }
  }
  EXPECT_EQ(next_person, 1000 + 2'000);
  EXPECT_EQ(next_auction, 1000 + 6'000);
}

// A bid's auction is one of the last 100 auctions or of the 10 to come (half of the bids go to
// a hot auction, the first of its hundred); its bidder, like an auction's seller, one of the
// last 1,000 people or of the 10 to come (3/4 a hot one). So most refer to ids already
// generated, a few (the leads) to ids generated a little later.
TEST(NexmarkGeneratorTest, BidsAndSellersReferToRecentOrSoonToComeIds) {
  const NexmarkConfig config = Config("events=200000");
  int64_t bids = 0;
  int64_t hot_auction = 0;
  int64_t hot_bidder = 0;
  int64_t generated = 0;
  for (int64_t g = 0; g < 200'000; ++g) {
    const Json event = ParsedEvent(config, g);
    const int64_t last_person = NexmarkLastPersonId(g);
    const int64_t oldest_active = std::max<int64_t>(1000, last_person + 1 - 1000);
    if (event.contains("auction")) {
      const int64_t seller = event["auction"]["seller"];
      ASSERT_GE(seller, oldest_active) << g;
      ASSERT_LE(seller, last_person + kNexmarkIdLead) << g;
      const int64_t category = event["auction"]["category"];
      ASSERT_GE(category, 10) << g;
      ASSERT_LE(category, 14) << g;
      continue;
    }
    if (!event.contains("bid")) continue;
    const int64_t last_auction = NexmarkLastAuctionId(g);
    const int64_t auction = event["bid"]["auction"];
    const int64_t bidder = event["bid"]["bidder"];
    ASSERT_GE(auction, std::max<int64_t>(1000, last_auction - 100)) << g;
    ASSERT_LE(auction, last_auction + kNexmarkIdLead) << g;
    ASSERT_GE(bidder, oldest_active) << g;
    ASSERT_LE(bidder, last_person + kNexmarkIdLead) << g;
    if (g < 50'000) continue;  // the steady state: 1,000 people are active
    ++bids;
    hot_auction += auction == (last_auction - 1000) / 100 * 100 + 1000;
    hot_bidder += bidder == (last_person - 1000) / 100 * 100 + 1001;
    generated += auction <= last_auction && bidder <= last_person;
  }
  ASSERT_EQ(bids, 138'000);
  // Expected: 1/2 + 1/2 * 1/111; 3/4 + 1/4 * 1/1010; and 1 - (1/2 * 10/111 + 1/4 * 10/1010 +
  // 3/4 * 1/100), the last term the hot bidder of a hundred whose second person is to come.
  EXPECT_NEAR(static_cast<double>(hot_auction) / bids, 0.5045, 0.005);
  EXPECT_NEAR(static_cast<double>(hot_bidder) / bids, 0.7502, 0.005);
  EXPECT_NEAR(static_cast<double>(generated) / bids, 0.9450, 0.005);
}

TEST(NexmarkGeneratorTest, EventTimeIsStartPlusEventNumberTimesThousandOverRate) {
  for (const std::string args :
       {"events=100000", "events=100000,rate=3,start=5", "events=100000,rate=7000000,start=0"}) {
    const NexmarkConfig config = Config(args);
    int64_t previous = 0;
    for (int64_t g = 0; g < 100'000; ++g) {
      const Json event = ParsedEvent(config, g);
      const int64_t t = event.at("dateTime");
      ASSERT_EQ(t, config.start_ms + g * 1000 / config.rate) << args << " " << g;
      ASSERT_EQ(NexmarkEventTime(config, g), t);
      ASSERT_GE(t, previous) << args << " " << g;
      previous = t;
      const Json& inner = event.contains("person")    ? event["person"]
                          : event.contains("auction") ? event["auction"]
                                                      : event["bid"];
      ASSERT_EQ(inner.at("dateTime"), t) << args << " " << g;
      if (!event.contains("auction")) continue;
      // An auction runs 1 ms to twice the time until the auction 100 auctions later (1,666
      // events later).
      const int64_t expires = inner.at("expires");
      const int64_t horizon = NexmarkEventTime(config, g + 1666) - t;
      ASSERT_GE(expires, t + 1) << args << " " << g;
      ASSERT_LE(expires, t + std::max<int64_t>(2 * horizon, 1)) << args << " " << g;
    }
  }
  EXPECT_EQ(NexmarkEventTime(Config("events=1"), 0), 1'767'225'600'000);  // 2026-01-01T00:00Z
  EXPECT_EQ(NexmarkEventTime(Config("events=1"), 2'500'000), 1'767'225'602'500);
}

TEST(NexmarkGeneratorTest, EveryEventIsOneJsonObjectWithTheModelsFields) {
  const std::set<std::string> person = {"id",   "name",  "emailAddress", "creditCard",
                                        "city", "state", "dateTime",     "extra"};
  const std::set<std::string> auction = {"id",       "itemName", "description", "initialBid",
                                         "reserve",  "dateTime", "expires",     "seller",
                                         "category", "extra"};
  const std::set<std::string> bid = {"auction", "bidder",   "price", "channel",
                                     "url",     "dateTime", "extra"};
  const std::map<std::string, std::set<std::string>> kinds = {
      {"person", person}, {"auction", auction}, {"bid", bid}};
  const std::set<std::string> strings = {"name",  "emailAddress", "creditCard",  "city",    "state",
                                         "extra", "itemName",     "description", "channel", "url"};
  const NexmarkConfig config = Config("events=1000000000000,seed=3");
  std::vector<int64_t> events;
  for (int64_t g = 0; g < 20'000; ++g) events.push_back(g);
  for (int64_t g = 999'999'990'000; g < 1'000'000'000'000; ++g) events.push_back(g);
  for (int64_t g : events) {
    const std::string text = Event(config, g);
    ASSERT_EQ(text.find('\n'), std::string::npos);
    ASSERT_EQ(text.find('\\'), std::string::npos) << text;  // nothing escaped
    const Json event = Json::parse(text);
    ASSERT_EQ(nlohmann::ordered_json::parse(text).dump(), text) << "compact, in this order";
    const std::string kind = g % 50 == 0 ? "person" : g % 50 <= 3 ? "auction" : "bid";
    ASSERT_EQ(Keys(event), (std::set<std::string>{"event_type", "dateTime", kind})) << text;
    ASSERT_EQ(Keys(event[kind]), kinds.at(kind)) << text;
    for (const auto& [name, value] : event[kind].items()) {
      ASSERT_EQ(value.is_string(), strings.count(name) == 1) << name << " in " << text;
      ASSERT_TRUE(value.is_string() || value.is_number_integer()) << name << " in " << text;
    }
  }
  // The members in Flink nexmark's order, e.g. the first bid:
  EXPECT_THAT(Event(config, 4),
              ::testing::MatchesRegex(
                  R"(\{"event_type":2,"dateTime":1767225600000,"bid":\{"auction":[0-9]+,)"
                  R"("bidder":[0-9]+,"price":[0-9]+,"channel":"[-a-zA-Z0-9]+",)"
                  R"("url":"https://www\.nexmark\.com/[_a-z]+/[_a-z]+/[_a-z]+/item\.htm\?query=1)"
                  R"((&channel_id=[0-9]+)?","dateTime":1767225600000,"extra":"[a-z]+"\}\})"));
}

// The model's size of an event (Beam's: 8 bytes per number, the strings' lengths) plus `extra`
// averages 200 (person), 500 (auction), 100 (bid) bytes: `extra` is uniform within +-20 % of the
// gap to the average.
TEST(NexmarkGeneratorTest, ExtraPadsEventsToTheModelsAverageSizes) {
  const NexmarkConfig config = Config("events=500000");
  std::map<std::string, std::pair<int64_t, int64_t>> sum_count;
  std::map<std::string, int64_t> json_bytes;
  for (int64_t g = 0; g < 500'000; ++g) {
    const std::string text = Event(config, g);
    const Json event = Json::parse(text);
    int64_t size = 0;
    std::string kind;
    if (event.contains("person")) {
      kind = "person";
      const Json& p = event["person"];
      size = 8;
      for (const char* f : {"name", "emailAddress", "creditCard", "city", "state", "extra"}) {
        size += static_cast<int64_t>(p[f].get<std::string>().size());
      }
    } else if (event.contains("auction")) {
      kind = "auction";
      const Json& a = event["auction"];
      size = 8 + 40;
      for (const char* f : {"itemName", "description", "extra"}) {
        size += static_cast<int64_t>(a[f].get<std::string>().size());
      }
    } else {
      kind = "bid";
      const int64_t extra = static_cast<int64_t>(event["bid"]["extra"].get<std::string>().size());
      ASSERT_GE(extra, 54) << g;  // 68 +- 14
      ASSERT_LE(extra, 81) << g;
      size = 32 + extra;
    }
    sum_count[kind].first += size;
    sum_count[kind].second += 1;
    json_bytes[kind] += static_cast<int64_t>(text.size());
  }
  const std::map<std::string, double> expected = {{"person", 200}, {"auction", 500}, {"bid", 100}};
  for (const auto& [kind, sc] : sum_count) {
    const double average = static_cast<double>(sc.first) / static_cast<double>(sc.second);
    EXPECT_NEAR(average, expected.at(kind), expected.at(kind) * 0.01) << kind;
    const double json = static_cast<double>(json_bytes[kind]) / static_cast<double>(sc.second);
    EXPECT_GT(json, expected.at(kind)) << kind << ": the JSON text carries names and quotes";
  }
}

TEST(NexmarkGeneratorTest, PricesAreCentsFromOneDollarToAMillionLogUniformly) {
  const NexmarkConfig config = Config("events=100000");
  std::vector<int64_t> per_decade(6, 0);
  int64_t bids = 0;
  for (int64_t g = 0; g < 100'000; ++g) {
    const Json event = ParsedEvent(config, g);
    if (event.contains("auction")) {
      const int64_t initial = event["auction"]["initialBid"];
      ASSERT_GE(event["auction"]["reserve"].get<int64_t>(), initial + 100);
      continue;
    }
    if (!event.contains("bid")) continue;
    const int64_t price = event["bid"]["price"];
    ASSERT_GE(price, 100);
    ASSERT_LE(price, 100'000'000);
    int decade = 0;
    for (int64_t p = price; p >= 1000 && decade < 5; p /= 10) ++decade;
    ++per_decade[decade];
    ++bids;
  }
  for (int d = 0; d < 6; ++d) {
    EXPECT_NEAR(static_cast<double>(per_decade[d]) / bids, 1.0 / 6, 0.01) << "decade " << d;
  }
}

TEST(NexmarkGeneratorTest, HalfTheBidsComeFromFourHotChannelsAndEachChannelHasOneUrl) {
  const NexmarkConfig config = Config("events=200000");
  std::map<std::string, std::string> url_of;
  int64_t bids = 0;
  int64_t hot = 0;
  int64_t with_channel_id = 0;
  for (int64_t g = 0; g < 200'000; ++g) {
    const Json event = ParsedEvent(config, g);
    if (!event.contains("bid")) continue;
    ++bids;
    const std::string channel = event["bid"]["channel"];
    const std::string url = event["bid"]["url"];
    auto [it, inserted] = url_of.emplace(channel, url);
    ASSERT_EQ(it->second, url) << channel;
    if (channel.rfind("channel-", 0) == 0) {
      with_channel_id += url.find("&channel_id=") != std::string::npos;
    } else {
      ++hot;
      ASSERT_TRUE(channel == "Google" || channel == "Facebook" || channel == "Baidu" ||
                  channel == "Apple")
          << channel;
      ASSERT_EQ(url.find("&channel_id="), std::string::npos) << url;
    }
  }
  EXPECT_NEAR(static_cast<double>(hot) / bids, 0.5, 0.01);
  EXPECT_NEAR(static_cast<double>(with_channel_id) / (bids - hot), 0.9, 0.02);
  EXPECT_GT(url_of.size(), 9'000u);  // most of the 10,000 other channels
  // channel-6 ends in &channel_id=1610612736 (6 with its 32 bits reversed) if it has one.
  const auto six = url_of.find("channel-6");
  ASSERT_NE(six, url_of.end());
  if (six->second.find("&channel_id=") != std::string::npos) {
    EXPECT_THAT(six->second, ::testing::EndsWith("&channel_id=1610612736"));
  }
  // Another seed, other urls.
  const NexmarkConfig other = Config("events=200000,seed=1");
  int64_t same = 0;
  int64_t compared = 0;
  for (int64_t g = 4; g < 2'000; ++g) {
    const Json event = ParsedEvent(other, g);
    if (!event.contains("bid")) continue;
    const auto it = url_of.find(event["bid"]["channel"].get<std::string>());
    if (it == url_of.end()) continue;
    ++compared;
    same += it->second == event["bid"]["url"];
  }
  EXPECT_GT(compared, 100);
  EXPECT_EQ(same, 0);
}

// ---- the arguments ----------------------------------------------------------------------------

TEST(NexmarkConfigTest, ParsesEveryArgumentAndDefaultsTheRest) {
  const NexmarkConfig defaults = Config("events=10");
  EXPECT_EQ(defaults.events, 10);
  EXPECT_EQ(defaults.splits, 1);
  EXPECT_EQ(defaults.seed, 0u);
  EXPECT_EQ(defaults.rate, 1'000'000);
  EXPECT_EQ(defaults.start_ms, 1'767'225'600'000);
  const NexmarkConfig all =
      Config("start=42,rate=5,seed=18446744073709551615,splits=3,events=1000000000");
  EXPECT_EQ(all.events, 1'000'000'000);
  EXPECT_EQ(all.splits, 3);
  EXPECT_EQ(all.seed, 18'446'744'073'709'551'615u);
  EXPECT_EQ(all.rate, 5);
  EXPECT_EQ(all.start_ms, 42);
  EXPECT_EQ(NexmarkConfigString(all),
            "events=1000000000,splits=3,seed=18446744073709551615,rate=5,start=42");
  EXPECT_EQ(NexmarkConfigString(Config(NexmarkConfigString(all))), NexmarkConfigString(all));
}

TEST(NexmarkConfigTest, RefusesBadArgumentsWithOneSentenceEach) {
  const std::string usage = "; the arguments are events=N[,splits=S][,seed=X][,rate=R][,start=T]";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"",
       "nexmark needs events=N, the number of events to generate (e.g. "
       "connector:nexmark:events=1000000,splits=2)"},
      {"splits=2",
       "nexmark needs events=N, the number of events to generate (e.g. "
       "connector:nexmark:events=1000000,splits=2)"},
      {"events", "nexmark argument 'events' is not KEY=VALUE" + usage},
      {"events=5,", "nexmark argument '' is not KEY=VALUE" + usage},
      {"events=5,size=3", "unknown nexmark argument 'size'" + usage},
      {"events=5,events=6", "nexmark argument 'events' is given twice; give it once"},
      {"events=1e6", "nexmark argument events=1e6 is not a 64-bit whole number"},
      {"events=", "nexmark argument events= is not a 64-bit whole number"},
      {"events=+5", "nexmark argument events=+5 is not a 64-bit whole number"},
      {"events=99999999999999999999",
       "nexmark argument events=99999999999999999999 is not a 64-bit whole number"},
      {"events=5,seed=-1",
       "nexmark argument seed=-1 is not a whole number from 0 to 18446744073709551615"},
      {"events=0", "nexmark events=0 is too small: generate at least 1 event"},
      {"events=-3", "nexmark events=-3 is too small: generate at least 1 event"},
      {"events=5,splits=0", "nexmark splits=0 is out of range: give 1 to 65536 splits"},
      {"events=100000,splits=65537",
       "nexmark splits=65537 is out of range: give 1 to 65536 splits"},
      {"events=5,splits=6",
       "nexmark splits=6 exceeds events=5: each split needs at least one event"},
      {"events=5,rate=0",
       "nexmark rate=0 is too small: the rate is events per second of event time, at least 1"},
      {"events=5,start=-1",
       "nexmark start=-1 is negative: give the first event's time in epoch milliseconds, 0 or "
       "more"},
      {"events=9000000000000000000,rate=1",
       "nexmark events=9000000000000000000 at rate=1 from start=1767225600000 runs past the "
       "largest 64-bit timestamp; lower events or start, or raise rate"},
  };
  for (const auto& [args, sentence] : cases) {
    NexmarkConfig config;
    config.events = 77;
    std::string error;
    EXPECT_FALSE(ParseNexmarkConfig(args, &config, &error)) << args;
    EXPECT_EQ(error, sentence) << args;
    EXPECT_EQ(config.events, 77) << args << ": untouched on an error";
  }
}

// ---- the job library: the source `nexmark` and the queries -------------------------------------

std::shared_ptr<const JobLibrary> NexmarkLibrary() {
  static const std::shared_ptr<const JobLibrary> library = [] {
    auto loaded =
        JobLibrary::Load(std::string(KEYFLOW_BINARY_DIR) + "/lib/keyflow/examples/libnexmark.so");
    EXPECT_TRUE(loaded.ok()) << loaded.status().ToString();
    return loaded.ok() ? *loaded : nullptr;
  }();
  return library;
}

const SourceConnector& NexmarkSource() {
  auto source = NexmarkLibrary()->FindSource("nexmark");
  EXPECT_TRUE(source.ok()) << source.status().ToString();
  return **source;
}

// The records of `split` from `position` to the end, and the position there.
std::vector<std::string> ReadSplit(const std::string& args, const std::string& split,
                                   const std::string& position, std::string* end = nullptr) {
  auto reader = NexmarkSource().open(args, split, position);
  EXPECT_TRUE(reader.ok()) << reader.status().ToString();
  if (!reader.ok()) return {};
  std::vector<std::string> records;
  std::string record;
  for (;;) {
    auto read = (*reader)->Next(&record);
    EXPECT_TRUE(read.ok()) << read.status().ToString();
    if (!read.ok() || *read == ConnectorRead::kEndOfSplit) break;
    EXPECT_EQ(*read, ConnectorRead::kRecord);
    records.push_back(record);
  }
  auto again = (*reader)->Next(&record);
  EXPECT_TRUE(again.ok() && *again == ConnectorRead::kEndOfSplit) << "a finished split stays so";
  if (end != nullptr) *end = (*reader)->Position();
  return records;
}

TEST(NexmarkSourceTest, ListsOneSplitPerSplitOfItsArguments) {
  auto splits = NexmarkSource().splits("events=10,splits=3");
  ASSERT_TRUE(splits.ok()) << splits.status().ToString();
  EXPECT_EQ(*splits, (std::vector<std::string>{"0", "1", "2"}));
  auto bad = NexmarkSource().splits("events=0");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status(),
            InvalidArgument("nexmark events=0 is too small: generate at least 1 event"));
}

TEST(NexmarkSourceTest, SplitSHoldsTheEventsSPlusAMultipleOfTheSplitCount) {
  const std::string args = "events=10,splits=3,seed=5";
  const NexmarkConfig config = Config(args);
  const std::vector<std::vector<int64_t>> expected = {{0, 3, 6, 9}, {1, 4, 7}, {2, 5, 8}};
  for (int32_t s = 0; s < 3; ++s) {
    std::string end;
    const std::vector<std::string> records = ReadSplit(args, std::to_string(s), "", &end);
    ASSERT_EQ(records.size(), expected[s].size()) << s;
    for (size_t o = 0; o < records.size(); ++o) {
      EXPECT_EQ(records[o], Event(config, expected[s][o])) << "split " << s << " event " << o;
    }
    EXPECT_EQ(end, std::to_string(expected[s].size()));
    EXPECT_EQ(NexmarkSplitEvents(config, s), static_cast<int64_t>(expected[s].size()));
  }
}

TEST(NexmarkSourceTest, ReopenedAtItsPositionASplitGoesOnWithTheSameEvents) {
  const std::string args = "events=1001,splits=2";
  const std::vector<std::string> all = ReadSplit(args, "1", "");
  ASSERT_EQ(all.size(), 500u);
  auto reader = NexmarkSource().open(args, "1", "");
  ASSERT_TRUE(reader.ok());
  std::string record;
  for (int i = 0; i < 123; ++i) ASSERT_TRUE((*reader)->Next(&record).ok());
  EXPECT_EQ(record, all[122]);
  const std::string position = (*reader)->Position();
  EXPECT_EQ(position, "123");
  EXPECT_EQ(ReadSplit(args, "1", position), std::vector<std::string>(all.begin() + 123, all.end()));
  EXPECT_EQ(ReadSplit(args, "1", "500"), std::vector<std::string>{});
  EXPECT_EQ(ReadSplit(args, "0", "").size(), 501u);
}

TEST(NexmarkSourceTest, RefusesAnUnknownSplitOrAPositionOutsideIt) {
  const std::string args = "events=1001,splits=2";
  const std::string config = "events=1001,splits=2,seed=0,rate=1000000,start=1767225600000";
  for (const std::string split : {"2", "-1", "x", "", "01x"}) {
    auto reader = NexmarkSource().open(args, split, "");
    ASSERT_FALSE(reader.ok()) << split;
    EXPECT_EQ(
        reader.status(),
        InvalidArgument("nexmark has no split '" + split + "' with " + config +
                        ": its splits are 0 to 1; was --input changed since the checkpoint?"));
  }
  for (const std::string position : {"502", "-1", "abc", "1e2"}) {
    auto reader = NexmarkSource().open(args, "0", position);
    ASSERT_FALSE(reader.ok()) << position;
    EXPECT_EQ(reader.status(),
              InvalidArgument("nexmark split 0 cannot resume at position '" + position +
                              "': a position is the index of the split's next event, 0 to 501 "
                              "with " +
                              config + "; was --input changed since the checkpoint?"));
  }
  auto bad_args = NexmarkSource().open("events=1,splits=2", "0", "");
  ASSERT_FALSE(bad_args.ok());
  EXPECT_EQ(bad_args.status().message(),
            "nexmark splits=2 exceeds events=1: each split needs at least one event");
}

// Runs job `name`'s chain (source -> filters and maps -> sink) over the events g of [0, n), each
// parsed as the runtime's sources parse it for the job (its time field, its declared fields
// only); returns what reaches the sink as JSON, with the input event's number.
std::vector<std::pair<int64_t, std::string>> RunQuery(const std::string& name, int64_t n,
                                                      std::string* description) {
  const JobLibrary& library = *NexmarkLibrary();
  auto job = library.FindJob(name);
  EXPECT_TRUE(job.ok()) << job.status().ToString();
  auto params = ResolveJobParams(**job, {});
  EXPECT_TRUE(params.ok());
  auto built = library.BuildGraph(**job, *params);
  EXPECT_TRUE(built.ok()) << built.status().ToString();
  *description = built->graph.Describe();
  JsonRecordFormat format;
  format.timestamp_field = (*job)->timestamp_field;
  format.extract_key = false;
  format.keep_fields = true;
  format.fields = (*job)->fields(*params);
  const NexmarkConfig config = Config("events=" + std::to_string(n));
  std::vector<std::pair<int64_t, std::string>> out;
  for (int64_t g = 0; g < n; ++g) {
    auto parsed = ParseRecordWithFields(Event(config, g), format);
    EXPECT_TRUE(parsed.ok()) << parsed.status().ToString();
    Record record = std::move(*parsed);
    EXPECT_EQ(record.timestamp.millis(), NexmarkEventTime(config, g));
    bool kept = true;
    for (const OperatorNode& op : built->graph.operators) {
      const OperatorFunctions& f = built->builder->functions_of(op.id);
      if (op.kind == OperatorKind::kFilter) kept = f.filter(record);
      if (op.kind == OperatorKind::kMap) record = f.map(record);
      if (op.kind == OperatorKind::kSink) out.emplace_back(g, record.object().ToJson());
      if (!kept) break;
    }
  }
  return out;
}

TEST(NexmarkQueriesTest, DeclareTheirTimeFieldAndTheFieldsTheyRead) {
  for (const std::string name : {"q0", "q1", "q2"}) {
    auto job = NexmarkLibrary()->FindJob(name);
    ASSERT_TRUE(job.ok()) << name;
    EXPECT_EQ((*job)->timestamp_field, "dateTime");
    EXPECT_TRUE((*job)->reads_fields);
    EXPECT_EQ((*job)->fields(JobParams()), (std::vector<std::string>{"event_type", "bid"}));
    EXPECT_THAT((*job)->description, HasSubstr("Nexmark " + name));
  }
}

TEST(NexmarkQueriesTest, Q0PassesEveryBidThrough) {
  std::string graph;
  const auto out = RunQuery("q0", 5'000, &graph);
  EXPECT_EQ(graph,
            "task 0 [source source-in -> filter bids -> map project -> sink sink-out] "
            "parallelism of the job\n");
  ASSERT_EQ(out.size(), 100u * 46);
  const NexmarkConfig config = Config("events=5000");
  for (const auto& [g, json] : out) {
    const Json bid = ParsedEvent(config, g)["bid"];
    nlohmann::ordered_json expected;
    for (const char* f : {"auction", "bidder", "price", "dateTime", "extra"}) expected[f] = bid[f];
    ASSERT_EQ(json, expected.dump()) << g;
  }
}

TEST(NexmarkQueriesTest, Q1ConvertsEachBidsPriceToEuro) {
  std::string graph;
  const auto out = RunQuery("q1", 5'000, &graph);
  EXPECT_EQ(graph,
            "task 0 [source source-in -> filter bids -> map to-euro -> sink sink-out] "
            "parallelism of the job\n");
  ASSERT_EQ(out.size(), 100u * 46);
  const NexmarkConfig config = Config("events=5000");
  for (const auto& [g, json] : out) {
    const Json bid = ParsedEvent(config, g)["bid"];
    const nlohmann::ordered_json result = nlohmann::ordered_json::parse(json);
    ASSERT_EQ(Keys(result),
              (std::set<std::string>{"auction", "bidder", "price", "dateTime", "extra"}));
    EXPECT_EQ(result.begin().key(), "auction");
    ASSERT_TRUE(result["price"].is_number_float()) << json;
    const int64_t price = bid["price"];
    EXPECT_EQ(result["price"].get<double>(), static_cast<double>(price * 908) / 1000) << json;
    // The text is the exact product with at most 3 decimals (price <= 10^8 cents).
    const std::string text = json.substr(json.find("\"price\":") + 8);
    EXPECT_LE(text.find(','), text.find('.') + 4) << json;
    for (const char* f : {"auction", "bidder", "dateTime", "extra"}) {
      EXPECT_EQ(result[f], bid[f]) << f << " of " << json;
    }
  }
}

TEST(NexmarkQueriesTest, Q2SelectsTheBidsOfAuctionsThatAreMultiplesOf123) {
  std::string graph;
  const auto out = RunQuery("q2", 200'000, &graph);
  EXPECT_EQ(graph,
            "task 0 [source source-in -> filter bids -> filter auction-mod-123 -> map project -> "
            "sink sink-out] parallelism of the job\n");
  const NexmarkConfig config = Config("events=200000");
  std::vector<std::pair<int64_t, std::string>> expected;
  for (int64_t g = 0; g < 200'000; ++g) {
    if (NexmarkEventTypeOf(g) != NexmarkEventType::kBid) continue;
    const Json bid = ParsedEvent(config, g)["bid"];
    if (bid["auction"].get<int64_t>() % 123 != 0) continue;
    expected.emplace_back(
        g, R"({"auction":)" + bid["auction"].dump() + R"(,"price":)" + bid["price"].dump() + "}");
  }
  EXPECT_GT(expected.size(), 100u);
  EXPECT_EQ(out, expected);
}

}  // namespace
}  // namespace keyflow
