// --log-format json: every line parses as one JSON object with the exact message; key=value
// tokens at its end become "fields"; a peer's newline or terminal escape stays inert.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "common/file_io.h"
#include "common/logging/logging.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow {
namespace {

std::vector<std::string> Lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

class LoggingJsonTest : public ::testing::Test {
 protected:
  // Logs `messages` through a JSON logger into a file and returns its lines.
  std::vector<std::string> Log(const std::vector<std::string>& messages) {
    LoggingOptions o;
    o.process = "worker-2";
    o.file = dir_.File("worker-2.log");
    o.format = LogFormat::kJson;
    o.level = "debug";
    auto logger = MakeLogger(o);
    EXPECT_OK(logger);
    if (!logger.ok()) return {};
    for (const std::string& m : messages) (*logger)->debug("{}", m);
    (*logger)->flush();
    return Lines(o.file);
  }
  TempDir dir_{"logging-json"};
};

TEST_F(LoggingJsonTest, EveryLineIsAJsonObjectWithTheExactMessage) {
  const std::vector<std::string> messages = {
      "worker registered worker=1 slot=0 host=h-1 pid=42",
      "refused StatusRequest from operator:bob at 10.0.0.1: a worker key cannot read the status",
      "host \"quoted\" back\\slash tab\there", "", "été 日本"};
  std::vector<std::string> lines = Log(messages);
  ASSERT_EQ(lines.size(), messages.size());
  for (size_t i = 0; i < lines.size(); ++i) {
    nlohmann::json j = nlohmann::json::parse(lines[i], nullptr, false);
    ASSERT_TRUE(j.is_object()) << lines[i];
    EXPECT_EQ(j["msg"], messages[i]);
    EXPECT_EQ(j["level"], "debug");
    EXPECT_EQ(j["process"], "worker-2");
    ASSERT_TRUE(j["ts"].is_string());
    EXPECT_THAT(j["ts"].get<std::string>(),
                ::testing::MatchesRegex("[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\."
                                        "[0-9]{3}Z"));
  }
  nlohmann::json first = nlohmann::json::parse(lines[0]);
  EXPECT_EQ(first["fields"],
            (nlohmann::json{{"worker", "1"}, {"slot", "0"}, {"host", "h-1"}, {"pid", "42"}}));
  EXPECT_FALSE(nlohmann::json::parse(lines[1]).contains("fields"));
  // Member order: ts, level, process, msg, fields.
  EXPECT_EQ(lines[0].rfind("{\"ts\":\"", 0), 0u) << lines[0];
  EXPECT_NE(lines[0].find("\",\"level\":\"debug\",\"process\":\"worker-2\",\"msg\":\"worker "
                          "registered worker=1 slot=0 host=h-1 pid=42\",\"fields\":{"),
            std::string::npos)
      << lines[0];
}

TEST_F(LoggingJsonTest, APeersNewlineAndTerminalEscapesStayOnOneInertLine) {
  const std::string forged =
      "host=h\n{\"ts\":\"2026-12-01T00:00:00.000Z\",\"level\":\"info\",\"msg\":\"forged\"}";
  const std::string ansi =
      "job \x1b[31mred\x1b[0m csi\xc2\x9b"
      "31m del\x7f";
  std::vector<std::string> lines = Log({forged, ansi});
  ASSERT_EQ(lines.size(), 2u);  // the newline did not make a third line
  EXPECT_EQ(nlohmann::json::parse(lines[0])["msg"], forged);
  EXPECT_EQ(nlohmann::json::parse(lines[1])["msg"], ansi);
  for (const std::string& line : lines) {
    for (size_t i = 0; i < line.size(); ++i) {
      const auto c = static_cast<unsigned char>(line[i]);
      EXPECT_FALSE(c < 0x20 || c == 0x7f) << "raw control byte at " << i << ": " << line;
      if (c == 0xc2 && i + 1 < line.size()) {
        EXPECT_FALSE(static_cast<unsigned char>(line[i + 1]) <= 0x9f) << "raw C1 in " << line;
      }
    }
  }
  EXPECT_NE(lines[1].find("\\u001b[31mred\\u001b[0m csi\\u009b31m del\\u007f"), std::string::npos)
      << lines[1];
}

TEST_F(LoggingJsonTest, InvalidUtf8IsReplacedNotFatal) {
  std::vector<std::string> lines = Log({"cut \xc3 here", "bad=\xff"});
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(nlohmann::json::parse(lines[0])["msg"], "cut \xef\xbf\xbd here");
  EXPECT_EQ(nlohmann::json::parse(lines[1])["fields"]["bad"], "\xef\xbf\xbd");
}

TEST(JsonLogLineTest, FieldsAreTheTrailingKeyValueTokensOnly) {
  auto fields = [](std::string_view msg) {
    nlohmann::json j = nlohmann::json::parse(JsonLogLine("t", "info", "p", msg));
    EXPECT_EQ(j["msg"], msg);
    return j.contains("fields") ? j["fields"] : nlohmann::json();
  };
  EXPECT_EQ(fields("control message type=DeployTask"), (nlohmann::json{{"type", "DeployTask"}}));
  // A value with a space ends the run: only what follows it would count, here nothing.
  EXPECT_EQ(fields("cancelling subtask attempt=3 reason=the coordinator is stopping"),
            nlohmann::json());
  EXPECT_EQ(fields("start failed attempt=1 reason=x=y"),
            (nlohmann::json{{"attempt", "1"}, {"reason", "x=y"}}));
  EXPECT_EQ(fields("a=1 a=2 b="), (nlohmann::json{{"a", "1"}, {"b", ""}}));  // first wins
  EXPECT_EQ(fields("1x=2 =3"), nlohmann::json());                            // not keys
  EXPECT_EQ(fields("dir=/tmp/x data_host=127.0.0.1 k.v-w_9=z"),
            (nlohmann::json{{"dir", "/tmp/x"}, {"data_host", "127.0.0.1"}, {"k.v-w_9", "z"}}));
}

}  // namespace
}  // namespace keyflow
