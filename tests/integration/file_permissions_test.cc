// What a cluster writes is its user's alone (README "Security", "Files a cluster writes"): a
// cluster started by scripts/start-cluster.sh runs a job with the print sink and the RocksDB
// backend, then one with a file sink output, and every file and directory under its run dir —
// logs, the .out files with the printed results, pid files, the RocksDB working state (checked
// while the job runs: it is deleted when its subtask ends), the output, the checkpoints, the job
// library cache — has exactly its documented mode: 0600 / 0700, never a group or other bit. With
// `--group GROUP` the run dir is GROUP's and setgid, what the cluster shares is 0640 / 02750 and
// GROUP's; checkpoints, the cache and the key set keep their private modes.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "tests/integration/cluster.h"
#include "tests/integration/test_dir.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string Script(const std::string& name) {
  return std::string(KEYFLOW_SOURCE_DIR) + "/scripts/" + name;
}

// A group for --group: one this process belongs to other than its own, so that the files'
// group shows the setgid inheritance (for root any existing system group; nothing is created).
// Its own group when there is no other.
std::string ChooseGroup() {
  std::vector<gid_t> groups(static_cast<size_t>(std::max(0, ::getgroups(0, nullptr))));
  if (!groups.empty()) {
    const int n = ::getgroups(static_cast<int>(groups.size()), groups.data());
    groups.resize(static_cast<size_t>(std::max(0, n)));
  }
  for (gid_t g : groups) {
    if (g == ::getegid()) continue;
    if (const group* gr = ::getgrgid(g)) return gr->gr_name;
  }
  if (::geteuid() == 0) {
    for (const char* name : {"daemon", "nogroup", "users", "adm", "bin"}) {
      if (const group* gr = ::getgrnam(name); gr != nullptr && gr->gr_gid != ::getegid()) {
        return name;
      }
    }
  }
  const group* own = ::getgrgid(::getegid());
  return own != nullptr ? own->gr_name : "";
}

// The mode every entry under a run dir must have (relative path `rel`, its first component
// `top`). `group`: started with --group (umask 027, setgid run dir).
uint32_t ExpectedMode(const std::string& rel, bool is_dir, bool group) {
  const std::string top = rel.substr(0, rel.find('/'));
  const std::string name = fs::path(rel).filename().string();
  auto ends_with = [&name](const std::string& suffix) {
    return name.size() >= suffix.size() && name.substr(name.size() - suffix.size()) == suffix;
  };
  if (top == "keys") {  // `keyflow keys`: exact modes, whatever the umask (common/README.md)
    if (is_dir) return 0700;
    return ends_with(".pub") || ends_with(".token-sha256") || name == "tls.crt" ? 0644 : 0600;
  }
  // Made by the processes with explicit private modes (FileSystem: files 0600, directories 0700,
  // keeping the setgid bit they inherit).
  const bool explicit_private =
      (top == "checkpoints" && rel != "checkpoints") || top == ".keyflow" || rel == "rest.port";
  if (explicit_private) return is_dir ? (group ? 02700 : 0700) : 0600;
  // The RocksDB working state's directories are private (worker/task/state_directory.h); its
  // files follow the umask (RocksDB creates them), unreachable through those directories.
  if (top == "keyflow-state") {
    if (is_dir) return group ? 02700 : 0700;
    return ends_with(".lock") ? 0600 : (group ? 0640 : 0600);  // the owner's lock: explicit
  }
  // The rest follows the umask, or the file sink's FileAccess: logs, .out, pid files, the
  // output, the checkpoint root the script made.
  if (is_dir) return group ? 02750 : 0700;
  return group ? 0640 : 0600;
}

struct TreeCheck {
  std::vector<std::string> wrong;        // "rel: mode M, expected E" (or group)
  std::map<std::string, uint32_t> seen;  // rel -> mode
};

// Stats everything under `run_dir` (entries that vanish meanwhile are skipped).
TreeCheck CheckTree(const std::string& run_dir, bool group, gid_t gid) {
  TreeCheck check;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(run_dir, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const std::string path = it->path().string();
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) continue;  // deleted meanwhile (RocksDB, a commit)
    const std::string rel = path.substr(run_dir.size() + 1);
    const uint32_t mode = st.st_mode & 07777;
    check.seen[rel] = mode;
    if (S_ISLNK(st.st_mode)) {
      check.wrong.push_back(rel + ": a symbolic link");
      continue;
    }
    const uint32_t expected = ExpectedMode(rel, S_ISDIR(st.st_mode), group);
    if (mode != expected) {
      check.wrong.push_back(rel + ": mode " + fmt::format("{:04o}", mode) + ", expected " +
                            fmt::format("{:04o}", expected));
    }
    // The key set's public halves (.pub, .token-sha256, tls.crt) keep their documented 0644:
    // they are no secrets, and nobody else can reach them through the 0700 keys directories.
    const bool in_keys = rel.rfind("keys/", 0) == 0;
    if ((mode & 07) != 0 && !(in_keys && expected == 0644)) {
      check.wrong.push_back(rel + ": others have access");
    }
    if (group && !in_keys && st.st_gid != gid) {
      check.wrong.push_back(rel + ": group " + std::to_string(st.st_gid) + ", expected " +
                            std::to_string(gid));
    }
  }
  return check;
}

std::string Describe(const TreeCheck& c) {
  std::string s;
  for (const auto& [rel, mode] : c.seen) s += fmt::format("  {:04o} {}\n", mode, rel);
  return s;
}

// True if something below `prefix` (a path ending in '/') was seen.
bool SeenUnder(const TreeCheck& c, const std::string& prefix) {
  for (const auto& [rel, mode] : c.seen) {
    if (rel.rfind(prefix, 0) == 0) return true;
  }
  return false;
}

class FilePermissionsTest : public ::testing::Test {
 protected:
  void TearDown() override {
    RunCommand({Script("stop-cluster.sh"), "--run-dir", run_dir_, "--timeout", "5"},
               Duration::Seconds(30))
        .status()
        .IgnoreError();
  }

  // Starts a 2-worker cluster with `extra` flags; the caller's umask is the usual 022.
  void Start(const std::vector<std::string>& extra) {
    const mode_t old = ::umask(022);
    std::vector<std::string> argv = {Script("start-cluster.sh"),
                                     "--run-dir",
                                     run_dir_,
                                     "--build-dir",
                                     KEYFLOW_BINARY_DIR,
                                     "--workers",
                                     "2",
                                     "--port",
                                     "0",
                                     "--timeout",
                                     "30"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    auto started = RunCommand(argv, Duration::Seconds(90));
    ::umask(old);
    ASSERT_OK(started);
    ASSERT_EQ(started->exit_code, 0) << started->err;
    endpoint_ = started->out.substr(0, started->out.find('\n'));
  }
  Result<CommandResult> Cli(std::vector<std::string> args, Duration timeout) const {
    std::vector<std::string> argv = {"env", "KEYFLOW_KEYS=" + run_dir_ + "/keys",
                                     KeyflowBinary("keyflow")};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.insert(argv.end(), {"--coordinator", endpoint_});
    return RunCommand(argv, timeout);
  }
  json StatusJson() const {
    auto r = Cli({"status", "--json"}, Duration::Seconds(15));
    if (!r.ok() || r->exit_code != 0) return json();
    return json::parse(r->out, nullptr, false);
  }

  // Job A: count-window with the print sink and RocksDB, rate-limited (~4 s); its state is
  // checked while it runs, its printed results and everything else once it finished. Job B:
  // a file sink output with checkpoints. Then the whole run dir.
  void RunJobsAndCheckEveryMode(bool group, gid_t gid) {
    auto a = Cli({"run", "--job", "count-window", "--param", "time=event", "--param", "count=2",
                  "--param", "timeout=1s", "--state-backend", "rocksdb", "--parallelism", "2",
                  "--input", "gen:events=6000,keys=300,splits=2,seed=5,rate=1500"},
                 Duration::Seconds(30));
    ASSERT_TRUE(a.ok() && a->exit_code == 0) << (a.ok() ? a->err : a.status().ToString());
    TreeCheck running;
    Status state = WaitUntil(
        [&] {
          running = CheckTree(run_dir_, group, gid);
          return SeenUnder(running, "keyflow-state/") && running.seen.count("keyflow-state") &&
                 std::any_of(running.seen.begin(), running.seen.end(), [](const auto& e) {
                   return e.first.rfind("keyflow-state/", 0) == 0 &&
                          e.first.find("CURRENT") != std::string::npos;
                 });
        },
        Duration::Seconds(30), "RocksDB's working state in RUN_DIR/keyflow-state");
    ASSERT_OK(state) << state.ToString() << "\n" << Describe(running);
    EXPECT_THAT(running.wrong, ::testing::IsEmpty()) << Describe(running);
    Status finished = WaitUntil(
        [&] {
          json s = StatusJson();
          return s.is_object() && s["job"].is_object() && s["job"]["state"] == "FINISHED";
        },
        Duration::Seconds(60), "job A to finish");
    ASSERT_OK(finished) << finished.ToString() << "\n"
                        << ReadFileOrEmpty(run_dir_ + "/coordinator.log");

    auto b = Cli(
        {"run", "--job", "count-window", "--param", "time=event", "--param", "count=2", "--param",
         "timeout=1s", "--parallelism", "2", "--checkpoint-interval", "100ms", "--input",
         "gen:events=400,keys=20,splits=2,seed=6", "--output", run_dir_ + "/out", "--wait"},
        Duration::Seconds(60));
    ASSERT_TRUE(b.ok() && b->exit_code == 0) << (b.ok() ? b->err : b.status().ToString());

    TreeCheck all = CheckTree(run_dir_, group, gid);
    EXPECT_THAT(all.wrong, ::testing::IsEmpty()) << Describe(all);
    for (const char* f : {"coordinator.log", "coordinator.out", "worker-0.log", "worker-1.out",
                          "worker-0.pid", "cluster.env", "rest.url", "coordinator.endpoint"}) {
      EXPECT_EQ(all.seen.count(f), 1u) << f << "\n" << Describe(all);
    }
    EXPECT_TRUE(SeenUnder(all, "out/part-")) << Describe(all);
    EXPECT_TRUE(SeenUnder(all, "checkpoints/")) << Describe(all);
    EXPECT_EQ(all.seen.count(".keyflow/job-library-cache"), 1u) << Describe(all);
    EXPECT_EQ(all.seen.count("keys"), 1u);
    EXPECT_EQ(all.seen["keys"] & 0777, 0700u) << "the key set's directory is its user's";
    // The print sink's results are in the .out files whose modes were checked.
    const std::string printed =
        ReadFileOrEmpty(run_dir_ + "/worker-0.out") + ReadFileOrEmpty(run_dir_ + "/worker-1.out");
    EXPECT_TRUE(std::regex_search(printed, std::regex("(^|\n)[12]> \\{\"key\":")))
        << printed.substr(0, 2000);
    struct stat st {};
    ASSERT_EQ(::stat(run_dir_.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, group ? 02750u : 0700u);
    if (group) {
      EXPECT_EQ(st.st_gid, gid);
    }
  }

  TestDir dir_;
  const std::string run_dir_ = dir_.path() + "/run";
  std::string endpoint_;
};

TEST_F(FilePermissionsTest, EverythingAClusterWritesIsItsUsersAlone) {
  ASSERT_NO_FATAL_FAILURE(Start({}));
  ASSERT_NO_FATAL_FAILURE(RunJobsAndCheckEveryMode(false, ::getegid()));
}

TEST_F(FilePermissionsTest, WithAGroupTheGroupReadsWhatTheClusterSharesAndNeverWrites) {
  const std::string group = ChooseGroup();
  ASSERT_FALSE(group.empty()) << "no group to test with";
  const struct group* gr = ::getgrnam(group.c_str());
  ASSERT_NE(gr, nullptr) << group;
  const gid_t gid = gr->gr_gid;
  ASSERT_NO_FATAL_FAILURE(Start({"--group", group}));
  for (const char* process : {"coordinator", "worker-0", "worker-1"}) {
    const std::string pid = ReadFileOrEmpty(run_dir_ + "/" + process + ".pid");
    EXPECT_THAT(ReadFileOrEmpty("/proc/" + pid.substr(0, pid.find('\n')) + "/cmdline"),
                ::testing::HasSubstr(std::string("--group-readable") + '\0'))
        << process;
  }
  ASSERT_NO_FATAL_FAILURE(RunJobsAndCheckEveryMode(true, gid));
}

TEST_F(FilePermissionsTest, AnUnknownGroupIsRefusedWithASentence) {
  auto r = RunCommand({Script("start-cluster.sh"), "--run-dir", run_dir_, "--build-dir",
                       KEYFLOW_BINARY_DIR, "--workers", "1", "--group", "no-such-group-kf"},
                      Duration::Seconds(30));
  ASSERT_OK(r);
  EXPECT_EQ(r->exit_code, 1);
  EXPECT_EQ(r->err,
            "start-cluster: --group no-such-group-kf is not a group of this host (getent group "
            "no-such-group-kf found none): create it (groupadd) or choose another\n");
  EXPECT_FALSE(fs::exists(run_dir_)) << "nothing created";
}

}  // namespace
}  // namespace keyflow::test
