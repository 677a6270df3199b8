// The modules' include graph points one way (top-level CMakeLists.txt): common is the base, state
// and checkpoint build on it, the worker on all three, the coordinator on common and checkpoint
// and never on the worker or on state. The job SDK's headers (worker/api/) are the exception every
// module may include: the SDK depends on nothing of the runtime. This test reads every source file
// of each module and names each include that points the wrong way.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

namespace keyflow {
namespace {

namespace fs = std::filesystem;

// The modules each module may include besides itself and the SDK (worker/api/).
const std::map<std::string, std::set<std::string>>& AllowedIncludes() {
  static const auto* allowed = new std::map<std::string, std::set<std::string>>{
      {"common", {}},
      {"state", {"common"}},
      {"checkpoint", {"common"}},
      {"coordinator", {"common", "checkpoint"}},
      {"worker", {"common", "state", "checkpoint"}},
  };
  return *allowed;
}

// "worker/task/keyed_task.cc:12 includes coordinator/job_master.h" for every wrong include.
std::vector<std::string> WrongIncludes(const std::string& module) {
  const std::set<std::string>& allowed = AllowedIncludes().at(module);
  const std::regex include(R"re(^\s*#\s*include\s*"([a-z_]+)/([^"]*)")re");
  std::vector<std::string> wrong;
  const fs::path root = fs::path(KEYFLOW_SOURCE_DIR) / module;
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    const std::string ext = entry.path().extension().string();
    if (!entry.is_regular_file() || (ext != ".h" && ext != ".cc")) continue;
    std::ifstream in(entry.path());
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
      std::smatch m;
      if (!std::regex_search(line, m, include)) continue;
      const std::string target = m[1].str();
      if (target == module || allowed.count(target) != 0) continue;
      if (target == "worker" && m[2].str().rfind("api/", 0) == 0) continue;  // the SDK
      if (AllowedIncludes().count(target) == 0) continue;  // not a module (e.g. generated)
      wrong.push_back(fs::relative(entry.path(), KEYFLOW_SOURCE_DIR).string() + ":" +
                      std::to_string(n) + " includes " + target + "/" + m[2].str());
    }
  }
  return wrong;
}

TEST(ModuleLayering, EveryIncludePointsDownTheModuleGraph) {
  for (const auto& [module, allowed] : AllowedIncludes()) {
    std::vector<std::string> wrong = WrongIncludes(module);
    std::string text;
    for (const std::string& w : wrong) text += "  " + w + "\n";
    EXPECT_TRUE(wrong.empty()) << module << " includes what it must not:\n" << text;
  }
}

TEST(ModuleLayering, TheCheckSeesEveryModulesFiles) {
  // A rule that reads no file would pass vacuously.
  for (const auto& [module, allowed] : AllowedIncludes()) {
    size_t files = 0;
    for (const auto& entry :
         fs::recursive_directory_iterator(fs::path(KEYFLOW_SOURCE_DIR) / module)) {
      if (entry.is_regular_file() && entry.path().extension() == ".cc") ++files;
    }
    EXPECT_GT(files, 5u) << module;
  }
}

}  // namespace
}  // namespace keyflow
