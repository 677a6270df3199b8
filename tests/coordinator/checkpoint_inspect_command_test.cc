#include "coordinator/cli/checkpoint_inspect_command.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "checkpoint/checkpoint_storage.h"
#include "common/file_io.h"
#include "common/key_group_assignment.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow::cli {
namespace {

// Checkpoint 3 of job "count-window-1": M = 4, P = 2, state files of the recorded sizes.
class CheckpointInspectTest : public ::testing::Test {
 protected:
  CheckpointInspectTest() {
    m_.job_id = "count-window-1";
    m_.id = CheckpointId(3);
    m_.timestamp_ms = 1'714'564'800'123;  // 2024-05-01T12:00:00.123Z
    m_.completed_ms = 1'714'564'801'373;
    m_.attempt = AttemptNumber(2);
    m_.spec.job_name = "count-window";
    m_.spec.max_parallelism = 4;
    m_.spec.parallelism = 2;
    auto ranges = CreateKeyGroupPartitions(4, 2);
    for (int32_t i = 0; i < 2; ++i) {
      KeyGroupsStateHandle h;
      h.path = CheckpointStorage::SubtaskStateFileName(SubtaskIndex(i));
      h.range = ranges[static_cast<size_t>(i)];
      h.offsets = {16, 16 + 100u * (i + 1)};
      h.lengths = {100u * (i + 1), 50};
      h.keys = {static_cast<uint64_t>(3 + i), 4};
      h.timers = {1, static_cast<uint64_t>(2 * i)};
      h.size = 16 + 100u * (i + 1) + 50 + 32;
      h.checksum = 0xabcdef00u + static_cast<uint64_t>(i);
      m_.subtasks.push_back(SubtaskCheckpointState{SubtaskIndex(i), h});
    }
    m_.split_positions = {{"gen-0", "10"}, {"gen-1", "20"}};
    m_.sink_committables = {"a"};
    dir_ = tmp_.File("job/chk-3");
    EXPECT_OK(CreateDirectories(dir_));
    for (const auto& s : m_.subtasks) {
      EXPECT_TRUE(
          WriteFileAtomically(dir_ + "/" + s.keyed_state.path, std::string(s.keyed_state.size, 'x'))
              .ok());
    }
    EXPECT_OK(CheckpointStorage(tmp_.path()).WriteMetadata(dir_, m_));
  }

  int Run(std::vector<std::string> args) {
    out_.str("");
    ::testing::internal::CaptureStderr();
    int code = RunCheckpointInspect(args, out_);
    err_ = ::testing::internal::GetCapturedStderr();
    return code;
  }

  TempDir tmp_{"ckpt-inspect"};
  CheckpointMetadata m_;
  std::string dir_;
  std::ostringstream out_;
  std::string err_;
};

TEST_F(CheckpointInspectTest, PrintsJobIdTypeTimesSubtasksKeyGroupsAndTotals) {
  ASSERT_EQ(Run({dir_}), 0) << err_;
  EXPECT_EQ(err_, "");
  EXPECT_EQ(out_.str(),
            "job:               count-window-1\n"
            "job name:          count-window\n"
            "id:                3\n"
            "type:              checkpoint\n"
            "directory:         " +
                dir_ +
                "\n"
                "triggered:         2024-05-01T12:00:00.123Z\n"
                "completed:         2024-05-01T12:00:01.373Z (1250 ms after the trigger)\n"
                "attempt:           2\n"
                "max parallelism:   4\n"
                "parallelism:       2\n"
                "split positions:   2\n"
                "sink committables: 1\n"
                "state files:       ok\n"
                "\n"
                "subtask 0: subtask-0.kgs, key groups 0-1, 198 bytes (0 written by this "
                "checkpoint), checksum 00000000abcdef00\n"
                "  key group        offset         bytes        keys      timers\n"
                "          0            16           100           3           1\n"
                "          1           116            50           4           0\n"
                "  total                             150           7           1\n"
                "\n"
                "subtask 1: subtask-1.kgs, key groups 2-3, 298 bytes (0 written by this "
                "checkpoint), checksum 00000000abcdef01\n"
                "  key group        offset         bytes        keys      timers\n"
                "          2            16           200           4           1\n"
                "          3           216            50           4           2\n"
                "  total                             250           8           3\n"
                "\n"
                "total: 2 files, 496 bytes (0 written), 4 key groups, 15 keys, 4 timers\n");
}

TEST_F(CheckpointInspectTest, AcceptsTheMetadataFileAndADirectoryWithTrailingSlash) {
  ASSERT_EQ(Run({dir_ + "/_metadata"}), 0) << err_;
  EXPECT_NE(out_.str().find("directory:         " + dir_ + "\n"), std::string::npos);

  m_.savepoint = true;
  const std::string sp = tmp_.File("job/savepoint-3");
  ASSERT_OK(CreateDirectories(sp));
  for (const auto& s : m_.subtasks) {
    ASSERT_TRUE(
        WriteFileAtomically(sp + "/" + s.keyed_state.path, std::string(s.keyed_state.size, 'x'))
            .ok());
  }
  ASSERT_OK(CheckpointStorage(tmp_.path()).WriteMetadata(sp, m_));
  ASSERT_EQ(Run({sp + "/"}), 0) << err_;
  EXPECT_NE(out_.str().find("type:              savepoint\n"), std::string::npos) << out_.str();
}

TEST_F(CheckpointInspectTest, JsonHasEveryFieldAndPerKeyGroupDetails) {
  ASSERT_EQ(Run({dir_, "--json"}), 0) << err_;
  nlohmann::json j = nlohmann::json::parse(out_.str());
  EXPECT_EQ(j["job_id"], "count-window-1");
  EXPECT_EQ(j["job_name"], "count-window");
  EXPECT_EQ(j["id"], 3);
  EXPECT_EQ(j["type"], "checkpoint");
  EXPECT_EQ(j["directory"], dir_);
  EXPECT_EQ(j["triggered_ms"], 1'714'564'800'123);
  EXPECT_EQ(j["completed_ms"], 1'714'564'801'373);
  EXPECT_EQ(j["attempt"], 2);
  EXPECT_EQ(j["max_parallelism"], 4);
  EXPECT_EQ(j["parallelism"], 2);
  EXPECT_EQ(j["splits"], nlohmann::json::array({"gen-0", "gen-1"}));
  EXPECT_EQ(j["sink_committables"], 1);
  EXPECT_EQ(j["state_files_ok"], true);
  ASSERT_EQ(j["subtasks"].size(), 2u);
  const auto& s1 = j["subtasks"][1];
  EXPECT_EQ(s1["subtask"], 1);
  EXPECT_EQ(s1["file"], "subtask-1.kgs");
  EXPECT_EQ(s1["path"], dir_ + "/subtask-1.kgs");
  EXPECT_EQ(s1["first_key_group"], 2);
  EXPECT_EQ(s1["last_key_group"], 3);
  EXPECT_EQ(s1["size"], 298);
  EXPECT_EQ(s1["checksum"], "00000000abcdef01");
  EXPECT_EQ(s1["keys"], 8);
  EXPECT_EQ(s1["timers"], 3);
  ASSERT_EQ(s1["key_groups"].size(), 2u);
  EXPECT_EQ(s1["key_groups"][1],
            (nlohmann::json{
                {"key_group", 3}, {"offset", 216}, {"bytes", 50}, {"keys", 4}, {"timers", 2}}));
  EXPECT_EQ(j["totals"], (nlohmann::json{{"files", 2},
                                         {"bytes", 496},
                                         {"written_bytes", 0},
                                         {"key_groups", 4},
                                         {"keys", 15},
                                         {"timers", 4}}));
}

TEST_F(CheckpointInspectTest, MissingCheckpointExitsWith1AndSaysWhy) {
  EXPECT_EQ(Run({tmp_.File("job/chk-99")}), 1);
  EXPECT_EQ(out_.str(), "");
  EXPECT_NE(err_.find("no checkpoint at " + tmp_.File("job/chk-99")), std::string::npos) << err_;

  const std::string incomplete = tmp_.File("job/chk-4");
  ASSERT_OK(CreateDirectories(incomplete));
  EXPECT_EQ(Run({incomplete}), 1);
  EXPECT_NE(err_.find("_metadata is missing (the checkpoint was never completed)"),
            std::string::npos)
      << err_;
}

TEST_F(CheckpointInspectTest, CorruptedMetadataExitsWith1) {
  auto bytes = ReadFileToString(dir_ + "/_metadata");
  ASSERT_OK(bytes);
  std::string bad = *bytes;
  bad[bad.size() / 2] = static_cast<char>(bad[bad.size() / 2] ^ 0x20);
  ASSERT_OK(WriteFileAtomically(dir_ + "/_metadata", bad));
  EXPECT_EQ(Run({dir_}), 1);
  EXPECT_EQ(out_.str(), "");
  EXPECT_NE(err_.find("checksum mismatch"), std::string::npos) << err_;
  EXPECT_NE(err_.find(dir_ + "/_metadata"), std::string::npos) << err_;
}

TEST_F(CheckpointInspectTest, TruncatedStateFileExitsWith1ButStillPrintsTheMetadata) {
  ASSERT_OK(WriteFileAtomically(dir_ + "/subtask-1.kgs", std::string(100, 'x')));
  EXPECT_EQ(Run({dir_}), 1);
  EXPECT_NE(out_.str().find("state files:       BROKEN: state file " + dir_ +
                            "/subtask-1.kgs of subtask 1 of checkpoint 3 is truncated: "
                            "expected 298 bytes, found 100"),
            std::string::npos)
      << out_.str();
  EXPECT_NE(err_.find("cannot be restored"), std::string::npos) << err_;
  EXPECT_EQ(Run({dir_, "--json"}), 1);
  nlohmann::json j = nlohmann::json::parse(out_.str());
  EXPECT_EQ(j["state_files_ok"], false);
  EXPECT_NE(j["state_files_error"].get<std::string>().find("truncated"), std::string::npos);
}

TEST_F(CheckpointInspectTest, BadUsageExitsWith2) {
  EXPECT_EQ(Run({}), 2);
  EXPECT_EQ(Run({dir_, "--bogus"}), 2);
  EXPECT_EQ(Run({dir_, dir_}), 2);
}

}  // namespace
}  // namespace keyflow::cli
