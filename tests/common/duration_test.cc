#include "common/duration.h"

#include <gtest/gtest.h>

namespace keyflow {
namespace {

TEST(ParseDuration, AcceptsUnitsAndBareMilliseconds) {
  EXPECT_EQ(ParseDuration("250")->millis(), 250);
  EXPECT_EQ(ParseDuration("250ms")->millis(), 250);
  EXPECT_EQ(ParseDuration("3s")->millis(), 3000);
  EXPECT_EQ(ParseDuration("5min")->millis(), 300000);
  EXPECT_EQ(ParseDuration("5m")->millis(), 300000);
  EXPECT_EQ(ParseDuration("12h")->millis(), 43200000);
  EXPECT_EQ(ParseDuration("2 days")->millis(), 172800000);
}

TEST(ParseDuration, RejectsGarbageWithExamples) {
  EXPECT_EQ(ParseDuration("-1s").status().message(),
            "invalid duration '-1s': it must start with a non-negative whole number (examples: "
            "500ms, 10s, 5min, 12h, 1d)");
  EXPECT_EQ(ParseDuration("10 fortnights").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseDuration("99999999999999999d").status().code(), StatusCode::kInvalidArgument);
}

TEST(FormatDuration, PicksTheLargestExactUnit) {
  EXPECT_EQ(FormatDuration(Duration::Millis(43200000)), "12h");
  EXPECT_EQ(FormatDuration(Duration::Millis(1500)), "1500ms");
  EXPECT_EQ(FormatDuration(Duration::Millis(0)), "0ms");
  EXPECT_EQ(FormatDuration(Duration::Millis(120000)), "2min");
}

TEST(Timestamp, ArithmeticSaturatesAtWatermarkBounds) {
  EXPECT_EQ(kMaxWatermark + Duration::Millis(1), kMaxWatermark);
  EXPECT_EQ(kMinWatermark - Duration::Millis(1), kMinWatermark);
  EXPECT_EQ((Timestamp(10) + Duration::Millis(5)).millis(), 15);
}

}  // namespace
}  // namespace keyflow
