#include "common/logging/logging.h"

#include <gtest/gtest.h>

namespace keyflow {
namespace {

TEST(LogSafeTest, PrintableTextPassesUnchanged) {
  EXPECT_EQ(LogSafe("worker 3 (slot 1, host h-1.example, pid 42)"),
            "worker 3 (slot 1, host h-1.example, pid 42)");
  EXPECT_EQ(LogSafe("/data/été/日本.jsonl"), "/data/été/日本.jsonl");
  EXPECT_EQ(LogSafe("a\\nb"), "a\\nb");  // an existing backslash is not doubled
  EXPECT_EQ(LogSafe(""), "");
}

TEST(LogSafeTest, LineBreaksCannotForgeLogLines) {
  EXPECT_EQ(LogSafe("h\n2026-12-01T00:00:00.000Z info coordinator job ended"),
            "h\\n2026-12-01T00:00:00.000Z info coordinator job ended");
  EXPECT_EQ(LogSafe("a\r\nb\tc"), "a\\r\\nb\\tc");
}

TEST(LogSafeTest, TerminalEscapesAreNeutralised) {
  EXPECT_EQ(LogSafe("\x1b[31mred\x1b[0m"), "\\x1b[31mred\\x1b[0m");
  EXPECT_EQ(LogSafe(std::string("nul\0bell\a del\x7f", 14)), "nul\\x00bell\\x07 del\\x7f");
  EXPECT_EQ(LogSafe("csi\xc2\x9b"
                    "31m"),
            "csi\\xc2\\x9b31m");                       // U+009B, the one-byte CSI
  EXPECT_EQ(LogSafe("\xc2\xa0nbsp"), "\xc2\xa0nbsp");  // U+00A0 is printable
  EXPECT_EQ(LogSafe("cut\xc2"), "cut\xc2");            // a truncated sequence
}

}  // namespace
}  // namespace keyflow
