// The Nexmark benchmark's events (people, auctions and bids of an online auction house) as a
// pure function of (seed, event number): the generator behind the `nexmark` source of the
// nexmark job library (nexmark_jobs.cc) and its tests. Standard C++ only.
//
// The event model follows Beam's Nexmark generator (the one Flink's nexmark benchmark uses):
// per 50 events 1 person, 3 auctions and 46 bids, chosen by the event number modulo 50 (0: a
// person, 1-3: an auction, 4-49: a bid); ids derived from the event number (the first person
// and the first auction are 1000); sellers and bidders drawn from the last 1,000 people, bid
// auctions from the last 100 auctions (plus a lead of 10 ids not generated yet), with hot
// sellers, bidders and auctions; log-uniform prices in cents; `extra` padding to average model
// sizes of 200 (person), 500 (auction) and 100 (bid) bytes. Instead of one sequential random
// generator, each event draws from a SplitMix64 stream seeded with a hash of (seed, event
// number): any event can be generated on its own, in any order, on any thread. The values
// follow the model but are not bit-identical to Beam's or Flink's generator.
//
// Event time: event g happens at start_ms + floor(g * 1000 / rate) (non-decreasing in g).
// Splits interleave: split s of S holds the events g = o * S + s for o = 0, 1, ...
//
// Each event is one compact JSON object, nested as Flink nexmark's table schema (times are
// integer epoch milliseconds; strings hold no character JSON escapes):
//   {"event_type":0,"dateTime":T,"person":{"id":I,"name":"..","emailAddress":"..",
//    "creditCard":"..","city":"..","state":"..","dateTime":T,"extra":".."}}
//   {"event_type":1,"dateTime":T,"auction":{"id":I,"itemName":"..","description":"..",
//    "initialBid":P,"reserve":P,"dateTime":T,"expires":T,"seller":I,"category":C,"extra":".."}}
//   {"event_type":2,"dateTime":T,"bid":{"auction":I,"bidder":I,"price":P,"channel":"..",
//    "url":"..","dateTime":T,"extra":".."}}
//
// Threading: every function is pure (no shared state); call it from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace keyflow {

// The model's constants (the defaults of Beam's NexmarkConfiguration).
inline constexpr int64_t kNexmarkFirstPersonId = 1000;
inline constexpr int64_t kNexmarkFirstAuctionId = 1000;
inline constexpr int64_t kNexmarkFirstCategoryId = 10;
inline constexpr int64_t kNexmarkCategories = 5;
inline constexpr int64_t kNexmarkProportionDenominator = 50;  // 1 person, 3 auctions, 46 bids
inline constexpr int64_t kNexmarkActivePeople = 1000;         // sellers and bidders are drawn here
inline constexpr int64_t kNexmarkInFlightAuctions = 100;      // bid auctions are drawn here
inline constexpr int64_t kNexmarkIdLead = 10;                 // ids ahead of the last generated
inline constexpr int64_t kNexmarkHotBatch = 100;              // hot ids: the first of each 100
inline constexpr int64_t kNexmarkAvgPersonBytes = 200;
inline constexpr int64_t kNexmarkAvgAuctionBytes = 500;
inline constexpr int64_t kNexmarkAvgBidBytes = 100;

inline constexpr int64_t kNexmarkDefaultRate = 1'000'000;             // events per second
inline constexpr int64_t kNexmarkDefaultStartMs = 1'767'225'600'000;  // 2026-01-01T00:00:00Z

struct NexmarkConfig {
  int64_t events = 0;  // the number of events, g = 0 .. events-1
  int32_t splits = 1;
  uint64_t seed = 0;
  int64_t rate = kNexmarkDefaultRate;  // events per second of event time
  int64_t start_ms = kNexmarkDefaultStartMs;
};

// Parses a connector's arguments, `events=N[,splits=S][,seed=X][,rate=R][,start=T]` (decimal
// whole numbers; start in epoch ms). Returns false with a sentence in *error (and *config
// untouched) for a missing events, an unknown or repeated key, a value that is not a whole
// number, events < 1, splits < 1 or > min(events, 65536), rate < 1, a negative start, or
// times beyond the 64-bit range.
[[nodiscard]] bool ParseNexmarkConfig(std::string_view args, NexmarkConfig* config,
                                      std::string* error);
// The canonical argument string of `config`: "events=N,splits=S,seed=X,rate=R,start=T".
std::string NexmarkConfigString(const NexmarkConfig& config);

// The `event_type` of event g: 0 person, 1 auction, 2 bid.
enum class NexmarkEventType : int32_t { kPerson = 0, kAuction = 1, kBid = 2 };
NexmarkEventType NexmarkEventTypeOf(int64_t g);

// dateTime of event g: start_ms + floor(g * 1000 / rate). Precondition: g >= 0.
int64_t NexmarkEventTime(const NexmarkConfig& config, int64_t g);

// The id of the last person (auction) generated at or before event g, the event's own id when
// g is a person (an auction). Precondition: g >= 0 (g >= 1 for the auction).
int64_t NexmarkLastPersonId(int64_t g);
int64_t NexmarkLastAuctionId(int64_t g);

// How many events split `split` (0 <= split < config.splits) holds.
int64_t NexmarkSplitEvents(const NexmarkConfig& config, int32_t split);

// Writes event g (>= 0) as one compact JSON object into *out (replacing its contents). Depends
// on config.seed, rate and start_ms only. No allocation but *out's growth.
void NexmarkEventJson(const NexmarkConfig& config, int64_t g, std::string* out);

}  // namespace keyflow
