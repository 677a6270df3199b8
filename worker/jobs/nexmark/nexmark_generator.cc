#include "worker/jobs/nexmark/nexmark_generator.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <system_error>

namespace keyflow {
namespace {

// These constants and the functions below define the generated events: changing any of them
// changes every stream (and what a source restored from an old checkpoint produces after its
// position). Do not change them.
constexpr uint64_t kGamma = 0x9E3779B97F4A7C15ull;  // SplitMix64's Weyl increment
constexpr uint64_t kSeedSalt = 0xD1B54A32D192ED03ull;
constexpr uint64_t kEventSalt = 0xC2B2AE3D27D4EB4Full;
constexpr uint64_t kHotChannelSalt = 0x165667B19E3779F9ull;
constexpr uint64_t kChannelSalt = 0x27D4EB2F165667C5ull;

constexpr int64_t kAuctionsPerEpoch = 3;  // event numbers 1..3 of every 50
constexpr int64_t kMinStringLength = 3;
constexpr int64_t kHotAuctionRatio = 2;  // P(hot auction of a bid) = 1 - 1/2
constexpr int64_t kHotSellerRatio = 4;   // P(hot seller of an auction) = 1 - 1/4
constexpr int64_t kHotBidderRatio = 4;   // P(hot bidder of a bid) = 1 - 1/4
constexpr int64_t kHotChannelRatio = 2;  // P(hot channel of a bid) = 1 - 1/2
constexpr int64_t kChannels = 10'000;    // the other channels: channel-0 .. channel-9999
// Events until the auction kNexmarkInFlightAuctions ahead: an auction lasts twice that long at
// most (on average as long).
constexpr int64_t kAuctionHorizonEvents =
    kNexmarkInFlightAuctions * kNexmarkProportionDenominator / kAuctionsPerEpoch;
constexpr double kSixLn10 = 13.815510557964274;  // 6 * ln(10): prices are 100 * 10^(6u) cents
constexpr int64_t kMaxSplits = 65'536;
constexpr int64_t kMaxEventBytes = 2048;  // an auction, the largest event, stays below 1,000

constexpr std::string_view kHotChannels[] = {"Google", "Facebook", "Baidu", "Apple"};
constexpr std::string_view kStates[] = {"AZ", "CA", "ID", "OR", "WA", "WY"};
constexpr std::string_view kCities[] = {"Phoenix",  "Los Angeles", "San Francisco", "Boise",
                                        "Portland", "Bend",        "Redmond",       "Seattle",
                                        "Kent",     "Cheyenne"};
constexpr std::string_view kFirstNames[] = {"Peter", "Paul",  "Luke",  "John",   "Saul",  "Vicky",
                                            "Kate",  "Julie", "Sarah", "Deiter", "Walter"};
constexpr std::string_view kLastNames[] = {"Shultz", "Abrams", "Spencer", "White", "Bartels",
                                           "Walton", "Smith",  "Jones",   "Noris"};
constexpr std::string_view kArgsUsage = "events=N[,splits=S][,seed=X][,rate=R][,start=T]";

// SplitMix64's output function: a bijective 64-bit mixer.
inline uint64_t Mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// A SplitMix64 stream: one per event (and per channel), seeded with a hash of its identity.
class Random {
 public:
  explicit Random(uint64_t h) : state_(h) {}
  uint64_t Next() { return Mix(state_ += kGamma); }
  // Uniform in [0, n); n >= 1.
  int64_t Below(int64_t n) {
    return static_cast<int64_t>((static_cast<__uint128_t>(Next()) * static_cast<uint64_t>(n)) >>
                                64);
  }
  // Uniform in [0, 1).
  double Unit() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }

 private:
  uint64_t state_;
};

uint64_t SeedBase(uint64_t seed) {
  return Mix(seed ^ kSeedSalt);
}

// Writes JSON text into a buffer the caller sized for the largest event.
class Writer {
 public:
  explicit Writer(char* p) : begin_(p), p_(p) {}
  void Raw(std::string_view s) {
    std::memcpy(p_, s.data(), s.size());
    p_ += s.size();
  }
  void Char(char c) { *p_++ = c; }
  void Int(int64_t v) { p_ = std::to_chars(p_, p_ + 20, v).ptr; }
  // Four digits, zero-padded.
  void Digits4(int64_t v) {
    for (int i = 3; i >= 0; --i, v /= 10) p_[i] = static_cast<char>('0' + v % 10);
    p_ += 4;
  }
  char* pos() { return p_; }
  void Advance(int64_t n) { p_ += n; }
  int64_t size() const { return p_ - begin_; }

 private:
  char* begin_;
  char* p_;
};

// Eight letters 'a'..'z' from the eight bytes of `w`: byte b -> 'a' + (b * 26 >> 8), computed in
// 16-bit lanes (no carries between lanes: 255 * 26 < 2^16).
inline void LettersFromWord(uint64_t w, char* out) {
  constexpr uint64_t kLanes = 0x00FF00FF00FF00FFull;
  const uint64_t even = (((w & kLanes) * 26) >> 8) & kLanes;
  const uint64_t odd = ((((w >> 8) & kLanes) * 26) >> 8) & kLanes;
  const uint64_t letters = (even | (odd << 8)) + 0x6161616161616161ull;  // + 'a' in every byte
  std::memcpy(out, &letters, 8);
}

// Exactly n letters [a-z] (Beam's nextExactString). The writer's buffer has 8 bytes of slack.
void ExactString(Random& r, int64_t n, Writer& w) {
  char* p = w.pos();
  for (int64_t i = 0; i < n; i += 8) LettersFromWord(r.Next(), p + i);
  w.Advance(n);
}

// Beam's nextString: 3 to max_length-1 characters, each `special` with probability ~1/13 (a
// byte below 20 of 256), else a letter; spaces trimmed at both ends. Returns the length.
int64_t RandomString(Random& r, int64_t max_length, char special, Writer& w) {
  const int64_t n = kMinStringLength + r.Below(max_length - kMinStringLength);
  char buf[128];
  for (int64_t i = 0; i < n; i += 8) {
    uint64_t word = r.Next();
    for (int64_t j = i; j < i + 8 && j < n; ++j, word >>= 8) {
      const uint32_t b = static_cast<uint32_t>(word & 0xFF);
      buf[j] = b < 20 ? special : static_cast<char>('a' + (b - 20) * 26 / 236);
    }
  }
  int64_t first = 0;
  int64_t last = n;
  if (special == ' ') {
    while (first < last && buf[first] == ' ') ++first;
    while (last > first && buf[last - 1] == ' ') --last;
  }
  w.Raw(std::string_view(buf + first, static_cast<size_t>(last - first)));
  return last - first;
}

// Beam's nextExtra: letters that bring a model size of `current` to `average` on average,
// uniformly within +-20 % of the gap.
void Extra(Random& r, int64_t current, int64_t average, Writer& w) {
  if (current > average) return;
  const int64_t gap = average - current;
  const int64_t delta = (2 * gap + 5) / 10;  // round(gap * 0.2), half up
  const int64_t size = gap - delta + (delta == 0 ? 0 : r.Below(2 * delta));
  ExactString(r, size, w);
}

int64_t Price(Random& r) {
  return std::llround(std::exp(r.Unit() * kSixLn10) * 100.0);
}

template <size_t N>
std::string_view Pick(Random& r, const std::string_view (&choices)[N]) {
  return choices[r.Below(static_cast<int64_t>(N))];
}

// Base-0 ids (Beam's lastBase0PersonId / lastBase0AuctionId / nextBase0...).
int64_t LastBase0PersonId(int64_t g) {
  return g / kNexmarkProportionDenominator;
}
int64_t LastBase0AuctionId(int64_t g) {
  const int64_t epoch = g / kNexmarkProportionDenominator;
  const int64_t offset = g % kNexmarkProportionDenominator;
  if (offset == 0) return epoch * kAuctionsPerEpoch - 1;  // a person: the previous epoch's last
  return epoch * kAuctionsPerEpoch + std::min(offset - 1, kAuctionsPerEpoch - 1);
}
// One of the last kNexmarkActivePeople people or of the kNexmarkIdLead people to come.
int64_t NextBase0PersonId(int64_t g, Random& r) {
  const int64_t people = LastBase0PersonId(g) + 1;
  const int64_t active = std::min(people, kNexmarkActivePeople);
  return people - active + r.Below(active + kNexmarkIdLead);
}
// One of the last kNexmarkInFlightAuctions auctions or of the kNexmarkIdLead auctions to come.
int64_t NextBase0AuctionId(int64_t g, Random& r) {
  const int64_t last = LastBase0AuctionId(g);
  const int64_t first = std::max<int64_t>(last - kNexmarkInFlightAuctions, 0);
  return first + r.Below(last - first + 1 + kNexmarkIdLead);
}

// "https://www.nexmark.com/xxx/xxx/xxx/item.htm?query=1" (Flink nexmark's bid urls).
void BaseUrl(Random& r, Writer& w) {
  w.Raw("https://www.nexmark.com/");
  for (int i = 0; i < 3; ++i) {
    RandomString(r, 5, '_', w);
    w.Char('/');
  }
  w.Raw("item.htm?query=1");
}

// A bid's channel and url: half the bids come from one of four hot channels, the others from
// channel-0 .. channel-9999; each channel has one url, a function of (seed, channel), which
// for 9 of 10 channel-N ends in &channel_id=N' (N' = |N with its 32 bits reversed|).
void ChannelAndUrl(uint64_t seed_base, Random& r, Writer& w) {
  if (r.Below(kHotChannelRatio) > 0) {
    const int64_t i = r.Below(static_cast<int64_t>(std::size(kHotChannels)));
    Random channel(Mix(seed_base ^ (kHotChannelSalt + static_cast<uint64_t>(i))));
    w.Raw(kHotChannels[i]);
    w.Raw("\",\"url\":\"");
    BaseUrl(channel, w);
    return;
  }
  const int64_t i = r.Below(kChannels);
  Random channel(Mix(seed_base ^ (kChannelSalt + static_cast<uint64_t>(i) * kGamma)));
  w.Raw("channel-");
  w.Int(i);
  w.Raw("\",\"url\":\"");
  BaseUrl(channel, w);
  if (channel.Below(10) > 0) {
    uint32_t v = static_cast<uint32_t>(i);
    uint32_t reversed = 0;
    for (int b = 0; b < 32; ++b, v >>= 1) reversed = (reversed << 1) | (v & 1);
    w.Raw("&channel_id=");
    w.Int(std::abs(static_cast<int64_t>(static_cast<int32_t>(reversed))));
  }
}

void Person(int64_t g, int64_t t, Random& r, Writer& w) {
  w.Raw("\"person\":{\"id\":");
  w.Int(LastBase0PersonId(g) + kNexmarkFirstPersonId);
  w.Raw(",\"name\":\"");
  const std::string_view first = Pick(r, kFirstNames);
  const std::string_view last = Pick(r, kLastNames);
  w.Raw(first);
  w.Char(' ');
  w.Raw(last);
  int64_t size = 8 + static_cast<int64_t>(first.size() + 1 + last.size());
  w.Raw("\",\"emailAddress\":\"");
  size += RandomString(r, 7, ' ', w) + 1;
  w.Char('@');
  size += RandomString(r, 5, ' ', w) + 4;
  w.Raw(".com\",\"creditCard\":\"");
  for (int i = 0; i < 4; ++i) {
    if (i > 0) w.Char(' ');
    w.Digits4(r.Below(10'000));
  }
  size += 19;
  w.Raw("\",\"city\":\"");
  const std::string_view city = Pick(r, kCities);
  w.Raw(city);
  w.Raw("\",\"state\":\"");
  const std::string_view state = Pick(r, kStates);
  w.Raw(state);
  size += static_cast<int64_t>(city.size() + state.size());
  w.Raw("\",\"dateTime\":");
  w.Int(t);
  w.Raw(",\"extra\":\"");
  Extra(r, size, kNexmarkAvgPersonBytes, w);
  w.Raw("\"}");
}

void Auction(const NexmarkConfig& config, int64_t g, int64_t t, Random& r, Writer& w) {
  w.Raw("\"auction\":{\"id\":");
  w.Int(LastBase0AuctionId(g) + kNexmarkFirstAuctionId);
  w.Raw(",\"itemName\":\"");
  int64_t size = 8 + 40 + RandomString(r, 20, ' ', w);
  w.Raw("\",\"description\":\"");
  size += RandomString(r, 100, ' ', w);
  const int64_t initial_bid = Price(r);
  w.Raw("\",\"initialBid\":");
  w.Int(initial_bid);
  w.Raw(",\"reserve\":");
  w.Int(initial_bid + Price(r));
  w.Raw(",\"dateTime\":");
  w.Int(t);
  // An auction lasts on average until the auction kNexmarkInFlightAuctions later is created.
  const int64_t horizon = NexmarkEventTime(config, g + kAuctionHorizonEvents) - t;
  w.Raw(",\"expires\":");
  w.Int(t + 1 + r.Below(std::max<int64_t>(2 * horizon, 1)));
  const int64_t seller = r.Below(kHotSellerRatio) > 0
                             ? LastBase0PersonId(g) / kNexmarkHotBatch * kNexmarkHotBatch
                             : NextBase0PersonId(g, r);
  w.Raw(",\"seller\":");
  w.Int(seller + kNexmarkFirstPersonId);
  w.Raw(",\"category\":");
  w.Int(kNexmarkFirstCategoryId + r.Below(kNexmarkCategories));
  w.Raw(",\"extra\":\"");
  Extra(r, size, kNexmarkAvgAuctionBytes, w);
  w.Raw("\"}");
}

void Bid(uint64_t seed_base, int64_t g, int64_t t, Random& r, Writer& w) {
  // Hot auctions are the first of each 100 auctions, hot bidders the second of each 100 people
  // (so that they are not the hot sellers).
  const int64_t auction = r.Below(kHotAuctionRatio) > 0
                              ? LastBase0AuctionId(g) / kNexmarkHotBatch * kNexmarkHotBatch
                              : NextBase0AuctionId(g, r);
  const int64_t bidder = r.Below(kHotBidderRatio) > 0
                             ? LastBase0PersonId(g) / kNexmarkHotBatch * kNexmarkHotBatch + 1
                             : NextBase0PersonId(g, r);
  w.Raw("\"bid\":{\"auction\":");
  w.Int(auction + kNexmarkFirstAuctionId);
  w.Raw(",\"bidder\":");
  w.Int(bidder + kNexmarkFirstPersonId);
  w.Raw(",\"price\":");
  w.Int(Price(r));
  w.Raw(",\"channel\":\"");
  ChannelAndUrl(seed_base, r, w);
  w.Raw("\",\"dateTime\":");
  w.Int(t);
  w.Raw(",\"extra\":\"");
  Extra(r, 32, kNexmarkAvgBidBytes, w);  // the model counts a bid's four numbers, 8 bytes each
  w.Raw("\"}");
}

// Parses a decimal whole number of type T (the whole of `text`).
template <typename T>
bool ParseWhole(std::string_view text, T* out) {
  const char* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), end, *out);
  return ec == std::errc() && p == end && !text.empty();
}

}  // namespace

bool ParseNexmarkConfig(std::string_view args, NexmarkConfig* config, std::string* error) {
  error->clear();
  NexmarkConfig c;
  bool seen[5] = {};
  constexpr std::string_view kKeys[] = {"events", "splits", "seed", "rate", "start"};
  int64_t splits = 1;
  for (bool more = !args.empty(); more;) {  // "a=1," has an empty second item
    const size_t comma = args.find(',');
    const std::string_view item = args.substr(0, comma);
    more = comma != std::string_view::npos;
    args = more ? args.substr(comma + 1) : std::string_view();
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      *error = "nexmark argument '" + std::string(item) + "' is not KEY=VALUE; the arguments are " +
               std::string(kArgsUsage);
      return false;
    }
    const std::string_view key = item.substr(0, eq);
    const std::string_view value = item.substr(eq + 1);
    const size_t k =
        static_cast<size_t>(std::find(std::begin(kKeys), std::end(kKeys), key) - std::begin(kKeys));
    if (k == std::size(kKeys)) {
      *error = "unknown nexmark argument '" + std::string(key) + "'; the arguments are " +
               std::string(kArgsUsage);
      return false;
    }
    if (seen[k]) {
      *error = "nexmark argument '" + std::string(key) + "' is given twice; give it once";
      return false;
    }
    seen[k] = true;
    const bool ok = key == "seed"     ? ParseWhole(value, &c.seed)
                    : key == "events" ? ParseWhole(value, &c.events)
                    : key == "splits" ? ParseWhole(value, &splits)
                    : key == "rate"   ? ParseWhole(value, &c.rate)
                                      : ParseWhole(value, &c.start_ms);
    if (!ok) {
      *error =
          "nexmark argument " + std::string(item) + " is not a " +
          (key == "seed" ? "whole number from 0 to 18446744073709551615" : "64-bit whole number");
      return false;
    }
  }
  const std::string events = "events=" + std::to_string(c.events);
  if (!seen[0]) {
    *error =
        "nexmark needs events=N, the number of events to generate (e.g. "
        "connector:nexmark:events=1000000,splits=2)";
  } else if (c.events < 1) {
    *error = "nexmark " + events + " is too small: generate at least 1 event";
  } else if (splits < 1 || splits > kMaxSplits) {
    *error = "nexmark splits=" + std::to_string(splits) + " is out of range: give 1 to " +
             std::to_string(kMaxSplits) + " splits";
  } else if (splits > c.events) {
    *error = "nexmark splits=" + std::to_string(splits) + " exceeds " + events +
             ": each split needs at least one event";
  } else if (c.rate < 1) {
    *error = "nexmark rate=" + std::to_string(c.rate) +
             " is too small: the rate is events per second of event time, at least 1";
  } else if (c.start_ms < 0) {
    *error = "nexmark start=" + std::to_string(c.start_ms) +
             " is negative: give the first event's time in epoch milliseconds, 0 or more";
  } else {
    // The latest time written: an auction's expiry near the last event is below
    // start + 3 * (the time span of events + the auction horizon) + 1.
    const __int128 span = static_cast<__int128>(c.events + kAuctionHorizonEvents) * 1000 / c.rate;
    if (c.start_ms + 3 * span + 1 > std::numeric_limits<int64_t>::max()) {
      *error = "nexmark " + events + " at rate=" + std::to_string(c.rate) +
               " from start=" + std::to_string(c.start_ms) +
               " runs past the largest 64-bit timestamp; lower events or start, or raise rate";
    }
  }
  if (!error->empty()) return false;
  c.splits = static_cast<int32_t>(splits);
  *config = c;
  return true;
}

std::string NexmarkConfigString(const NexmarkConfig& config) {
  return "events=" + std::to_string(config.events) + ",splits=" + std::to_string(config.splits) +
         ",seed=" + std::to_string(config.seed) + ",rate=" + std::to_string(config.rate) +
         ",start=" + std::to_string(config.start_ms);
}

NexmarkEventType NexmarkEventTypeOf(int64_t g) {
  const int64_t offset = g % kNexmarkProportionDenominator;
  return offset == 0                   ? NexmarkEventType::kPerson
         : offset <= kAuctionsPerEpoch ? NexmarkEventType::kAuction
                                       : NexmarkEventType::kBid;
}

int64_t NexmarkEventTime(const NexmarkConfig& config, int64_t g) {
  if (g <= std::numeric_limits<int64_t>::max() / 1000) {
    return config.start_ms + g * 1000 / config.rate;
  }
  return config.start_ms + static_cast<int64_t>(static_cast<__int128>(g) * 1000 / config.rate);
}

int64_t NexmarkLastPersonId(int64_t g) {
  return LastBase0PersonId(g) + kNexmarkFirstPersonId;
}

int64_t NexmarkLastAuctionId(int64_t g) {
  return LastBase0AuctionId(g) + kNexmarkFirstAuctionId;
}

int64_t NexmarkSplitEvents(const NexmarkConfig& config, int32_t split) {
  if (split >= config.events) return 0;
  return (config.events - split + config.splits - 1) / config.splits;
}

void NexmarkEventJson(const NexmarkConfig& config, int64_t g, std::string* out) {
  const uint64_t seed_base = SeedBase(config.seed);
  Random r(Mix(seed_base + static_cast<uint64_t>(g) * kEventSalt));
  const int64_t t = NexmarkEventTime(config, g);
  const NexmarkEventType type = NexmarkEventTypeOf(g);
  char buf[kMaxEventBytes + 8];  // + 8: ExactString writes whole words
  Writer w(buf);
  w.Raw("{\"event_type\":");
  w.Char(static_cast<char>('0' + static_cast<int32_t>(type)));
  w.Raw(",\"dateTime\":");
  w.Int(t);
  w.Char(',');
  switch (type) {
    case NexmarkEventType::kPerson:
      Person(g, t, r, w);
      break;
    case NexmarkEventType::kAuction:
      Auction(config, g, t, r, w);
      break;
    case NexmarkEventType::kBid:
      Bid(seed_base, g, t, r, w);
      break;
  }
  w.Char('}');
  if (w.size() > kMaxEventBytes) std::abort();  // cannot happen: the sizes above are bounded
  out->assign(buf, static_cast<size_t>(w.size()));
}

}  // namespace keyflow
