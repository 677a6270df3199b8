// nexmark: the Nexmark benchmark as a job library — the source `nexmark` (a deterministic event
// generator, nexmark_generator.h) and the queries q0, q1 and q2 of Flink's nexmark benchmark as
// job graphs without a KeyBy (README.md in this folder):
//
//   q0  pass-through:        source -> Filter "bids" -> Map "project" -> sink
//         SELECT auction, bidder, price, dateTime, extra FROM bid
//   q1  currency conversion: source -> Filter "bids" -> Map "to-euro" -> sink
//         SELECT auction, bidder, 0.908 * price AS price, dateTime, extra FROM bid
//   q2  selection:           source -> Filter "bids" -> Filter "auction-mod-123" -> Map
//                            "project" -> sink
//         SELECT auction, price FROM bid WHERE MOD(auction, 123) = 0
//
// The jobs read only the fields event_type and bid (projection push-down) and take the event
// time from dateTime; they run on any input of the nexmark JSON shape, the source's or files.
//
//   keyflow run --job-library build/lib/keyflow/examples/libnexmark.so --job q1
//       --input connector:nexmark:events=1000000,splits=2 --output out/ --wait
#include <keyflow/keyflow.h>

#include <charconv>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "worker/jobs/nexmark/nexmark_generator.h"

namespace {

using keyflow::ConnectorRead;
using keyflow::ConnectorSplitReader;
using keyflow::FieldTapeWriter;
using keyflow::FieldValue;
using keyflow::NexmarkConfig;
using keyflow::Record;
using keyflow::Result;

// ---- the source -------------------------------------------------------------------------------

// The events of one split, g = o * splits + split for o = next_, next_ + 1, ...; the position
// is o of the next event, in decimal.
class NexmarkSplitReader final : public ConnectorSplitReader {
 public:
  NexmarkSplitReader(const NexmarkConfig& config, int32_t split, int64_t next)
      : config_(config),
        split_(split),
        next_(next),
        end_(keyflow::NexmarkSplitEvents(config, split)) {}

  Result<ConnectorRead> Next(std::string* record) override {
    if (next_ >= end_) return ConnectorRead::kEndOfSplit;
    keyflow::NexmarkEventJson(config_, next_ * config_.splits + split_, record);
    ++next_;
    return ConnectorRead::kRecord;
  }

  std::string Position() const override { return std::to_string(next_); }

 private:
  const NexmarkConfig config_;
  const int32_t split_;
  int64_t next_;
  const int64_t end_;
};

Result<NexmarkConfig> ParseArgs(const std::string& args) {
  NexmarkConfig config;
  std::string error;
  if (!keyflow::ParseNexmarkConfig(args, &config, &error)) return keyflow::InvalidArgument(error);
  return config;
}

// Parses a decimal in [0, max]; false otherwise.
bool ParseIndex(const std::string& text, int64_t max, int64_t* out) {
  const char* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), end, *out);
  return !text.empty() && ec == std::errc() && p == end && *out >= 0 && *out <= max;
}

Result<std::vector<std::string>> Splits(const std::string& args) {
  KF_ASSIGN_OR_RETURN(const NexmarkConfig config, ParseArgs(args));
  std::vector<std::string> splits;
  splits.reserve(static_cast<size_t>(config.splits));
  for (int32_t s = 0; s < config.splits; ++s) splits.push_back(std::to_string(s));
  return splits;
}

Result<std::unique_ptr<ConnectorSplitReader>> Open(const std::string& args,
                                                   const std::string& split,
                                                   const std::string& position) {
  KF_ASSIGN_OR_RETURN(const NexmarkConfig config, ParseArgs(args));
  int64_t s = 0;
  if (!ParseIndex(split, config.splits - 1, &s)) {
    return keyflow::InvalidArgument("nexmark has no split '" + split + "' with " +
                                    keyflow::NexmarkConfigString(config) +
                                    ": its splits are 0 to " + std::to_string(config.splits - 1) +
                                    "; was --input changed since the checkpoint?");
  }
  const int64_t events = keyflow::NexmarkSplitEvents(config, static_cast<int32_t>(s));
  int64_t next = 0;
  if (!position.empty() && !ParseIndex(position, events, &next)) {
    return keyflow::InvalidArgument(
        "nexmark split " + split + " cannot resume at position '" + position +
        "': a position is the index of the split's next event, 0 to " + std::to_string(events) +
        " with " + keyflow::NexmarkConfigString(config) +
        "; was --input changed since the checkpoint?");
  }
  return std::unique_ptr<ConnectorSplitReader>(
      new NexmarkSplitReader(config, static_cast<int32_t>(s), next));
}

// ---- the queries ------------------------------------------------------------------------------

constexpr int64_t kBid = static_cast<int64_t>(keyflow::NexmarkEventType::kBid);
// 0.908 euro per dollar as an exact integer product over 1000: the double nearest the exact
// decimal (Flink's DECIMAL(23, 3)), e.g. 4110.516 rather than 4110.5160000000005.
constexpr int64_t kEuroMillisPerDollar = 908;

double ToEuro(int64_t price) {
  if (price > INT64_MAX / kEuroMillisPerDollar || price < INT64_MIN / kEuroMillisPerDollar) {
    return static_cast<double>(price) * 0.908;  // not a generated price: no exact product
  }
  return static_cast<double>(price * kEuroMillisPerDollar) / 1000.0;
}

bool IsBid(const Record& r) {
  return r.field("event_type").AsInt64() == kBid;
}

// The integer `v`, or null when the input lacks it (an input that is not the source's).
void IntOrNull(FieldTapeWriter& w, FieldValue v) {
  if (std::optional<int64_t> x = v.AsInt64()) {
    w.Int(*x);
  } else {
    w.Null();
  }
}

// q0 and q1: {"auction":A,"bidder":B,"price":P,"dateTime":T,"extra":"..."}, the price in euro
// (a double) with `to_euro`.
Record BidColumns(const Record& in, bool to_euro) {
  const FieldValue bid = in.field("bid");
  Record out;
  FieldTapeWriter w(&out.fields);
  w.BeginObject();
  w.Name("auction");
  IntOrNull(w, bid["auction"]);
  w.Name("bidder");
  IntOrNull(w, bid["bidder"]);
  w.Name("price");
  const std::optional<int64_t> price = bid["price"].AsInt64();
  if (to_euro && price) {
    w.Double(ToEuro(*price));
  } else {
    IntOrNull(w, bid["price"]);
  }
  w.Name("dateTime");
  IntOrNull(w, bid["dateTime"]);
  w.Name("extra");
  if (std::optional<std::string_view> extra = bid["extra"].AsString()) {
    w.String(*extra);
  } else {
    w.Null();
  }
  w.EndObject();
  return out;  // the runtime keeps the input's timestamp
}

Record Project(const Record& in) {
  return BidColumns(in, false);
}

Record InEuro(const Record& in) {
  return BidColumns(in, true);
}

bool AuctionMod123(const Record& r) {
  const std::optional<int64_t> auction = r.field("bid")["auction"].AsInt64();
  return auction && *auction % 123 == 0;
}

// q2: {"auction":A,"price":P}.
Record AuctionAndPrice(const Record& in) {
  const FieldValue bid = in.field("bid");
  Record out;
  FieldTapeWriter w(&out.fields);
  w.BeginObject();
  w.Name("auction");
  IntOrNull(w, bid["auction"]);
  w.Name("price");
  IntOrNull(w, bid["price"]);
  w.EndObject();
  return out;
}

keyflow::JobDefinition Query(std::string name, std::string description,
                             std::function<void(keyflow::StreamGraphBuilder&)> graph) {
  keyflow::JobDefinition job;
  job.name = std::move(name);
  job.description = std::move(description);
  job.timestamp_field = "dateTime";
  job.reads_fields = true;
  job.fields = [](const keyflow::JobParams&) {
    return std::vector<std::string>{"event_type", "bid"};
  };
  job.graph = [graph = std::move(graph)](keyflow::StreamGraphBuilder& g,
                                         const keyflow::JobParams&) { graph(g); };
  return job;
}

std::vector<keyflow::JobDefinition> Jobs() {
  return {
      Query("q0",
            "Nexmark q0, pass-through: per bid (event_type 2) its auction, bidder, price, "
            "dateTime and extra (SELECT auction, bidder, price, dateTime, extra FROM bid); "
            "input: --input connector:nexmark:events=N",
            [](keyflow::StreamGraphBuilder& g) {
              g.Source().Filter("bids", IsBid).Map("project", Project).Sink();
            }),
      Query("q1",
            "Nexmark q1, currency conversion: per bid its auction, bidder, price in euro "
            "(0.908 * the dollar price, a double), dateTime and extra; input: --input "
            "connector:nexmark:events=N",
            [](keyflow::StreamGraphBuilder& g) {
              g.Source().Filter("bids", IsBid).Map("to-euro", InEuro).Sink();
            }),
      Query("q2",
            "Nexmark q2, selection: the auction and price of the bids whose auction id is a "
            "multiple of 123 (SELECT auction, price FROM bid WHERE MOD(auction, 123) = 0); input: "
            "--input connector:nexmark:events=N",
            [](keyflow::StreamGraphBuilder& g) {
              g.Source()
                  .Filter("bids", IsBid)
                  .Filter("auction-mod-123", AuctionMod123)
                  .Map("project", AuctionAndPrice)
                  .Sink();
            }),
  };
}

keyflow::Connectors Connectors() {
  keyflow::SourceConnector nexmark;
  nexmark.name = "nexmark";
  nexmark.description =
      "Nexmark events (people, auctions, bids; Beam's model), generated deterministically; "
      "connector:nexmark:events=N[,splits=S][,seed=X][,rate=R][,start=T] gives N events, S splits "
      "(default 1), seed X (default 0), R events per second of event time (default 1000000), "
      "first event at T epoch ms (default 1767225600000, 2026-01-01T00:00:00Z)";
  nexmark.splits = Splits;
  nexmark.open = Open;
  return {{nexmark}, {}};
}

}  // namespace

KEYFLOW_JOB_LIBRARY_WITH_CONNECTORS(Jobs, Connectors)
