#include "tests/integration/headless_chromium.h"

#include <signal.h>
#include <stdlib.h>

#include <filesystem>
#include <vector>

#include "tests/integration/child_process.h"

namespace keyflow::test {
namespace {

// A fresh --user-data-dir, removed at scope exit.
class TempProfile {
 public:
  explicit TempProfile(const std::string& parent) {
    std::string tmpl = parent + "/chromium-profile-XXXXXX";
    if (::mkdtemp(tmpl.data()) != nullptr) path_ = tmpl;
  }
  ~TempProfile() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  TempProfile(const TempProfile&) = delete;
  TempProfile& operator=(const TempProfile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Kills chromium's process group (the browser, its zygotes and renderers) at scope exit.
class ProcessGroupKiller {
 public:
  explicit ProcessGroupKiller(pid_t leader) : leader_(leader) {}
  ~ProcessGroupKiller() {
    if (leader_ > 0) ::kill(-leader_, SIGKILL);
  }
  ProcessGroupKiller(const ProcessGroupKiller&) = delete;
  ProcessGroupKiller& operator=(const ProcessGroupKiller&) = delete;

 private:
  pid_t leader_;
};

}  // namespace

bool ChromiumAvailable() {
  auto r = RunCommand({"sh", "-c", "command -v chromium"}, Duration::Seconds(10));
  return r.ok() && r->exit_code == 0;
}

Result<std::string> RunHeadlessChromium(const std::string& url, const std::string& work_dir,
                                        const ChromiumRun& run) {
  TempProfile profile(work_dir);
  if (profile.path().empty()) {
    return IoError("cannot create a Chromium profile directory in " + work_dir);
  }
  std::string out_path = work_dir + "/chromium.out";
  std::string log_path = work_dir + "/chromium.log";
  std::error_code ec;
  std::filesystem::remove(out_path, ec);
  // setsid: its own process group, so a timeout kills the renderers too. (Not a process group
  // leader after fork, so setsid execs chromium in place: the pid is the group's id.)
  std::vector<std::string> argv = {
      "setsid",
      "chromium",
      "--headless=new",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-dev-shm-usage",
      "--no-first-run",
      "--no-default-browser-check",
      "--disable-extensions",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--hide-scrollbars",
      "--user-data-dir=" + profile.path(),
      "--window-size=" + std::to_string(run.width) + "," + std::to_string(run.height),
      "--virtual-time-budget=" + std::to_string(run.virtual_time_budget.millis())};
  if (run.screenshot_path.empty()) {
    argv.push_back("--dump-dom");
  } else {
    argv.push_back("--screenshot=" + run.screenshot_path);
  }
  argv.push_back(url);
  auto child = ChildProcess::Start(argv, out_path, log_path);
  if (!child.ok()) return child.status();
  ProcessGroupKiller killer(child->pid());
  auto code = child->Wait(run.timeout);
  if (!code.ok()) {
    return DeadlineExceeded("chromium did not finish loading " + url + " within " +
                            std::to_string(run.timeout.millis()) + " ms; its log:\n" +
                            Tail(log_path, 30));
  }
  if (*code != 0) {
    return Internal("chromium exited with " + std::to_string(*code) + " loading " + url +
                    "; its log:\n" + Tail(log_path, 30));
  }
  return run.screenshot_path.empty() ? ReadFileOrEmpty(out_path) : std::string();
}

}  // namespace keyflow::test
