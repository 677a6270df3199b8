// The modules' include graph points one way (top-level CMakeLists.txt): common is the base, state
// and checkpoint build on it, the worker on all three, the coordinator on common and checkpoint
// and never on the worker or on state. The job SDK's headers (worker/api/) are the exception every
// module may include: the SDK depends on nothing of the runtime. This test reads every source file
// of each module and names each include that points the wrong way; within common/, it checks the
// libraries of common/ the same way, and that the base includes no heavy third-party header.
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

// common/ is several libraries (common/CMakeLists.txt): the base (the files directly in common/
// and common/input/) and one library per folder below. The libraries each may include besides
// itself and the base.
const std::map<std::string, std::set<std::string>>& CommonLibraries() {
  static const auto* allowed = new std::map<std::string, std::set<std::string>>{
      {"logging", {}},
      {"protocol", {}},
      {"security", {}},
      {"process", {"logging", "protocol"}},
      {"transport", {"logging", "protocol", "process", "security"}},
      {"kafka", {"logging"}},
      {"job_library", {"logging", "protocol", "security"}},
      {"testing", {}},
  };
  return *allowed;
}

// The library of common/ a path below common/ belongs to ("" for the base).
std::string CommonLibraryOf(const std::string& path_in_common) {
  const size_t slash = path_in_common.find('/');
  if (slash == std::string::npos) return "";
  const std::string folder = path_in_common.substr(0, slash);
  return CommonLibraries().count(folder) != 0 ? folder : "";
}

// The third-party headers the base must not include: it links no transport, crypto, logging,
// serialisation or flag library.
bool IsHeavyHeader(const std::string& system_header) {
  for (const char* prefix : {"zmq", "sodium", "openssl/", "spdlog/", "fmt/", "cereal/", "boost/",
                             "librdkafka/", "rocksdb/", "nlohmann/", "httplib"}) {
    if (system_header.rfind(prefix, 0) == 0) return true;
  }
  return false;
}

TEST(ModuleLayering, CommonsLibrariesIncludeDownwardsAndTheBaseNothingHeavy) {
  const std::regex local(R"re(^\s*#\s*include\s*"common/([^"]*)")re");
  const std::regex system(R"re(^\s*#\s*include\s*<([^>]*)>)re");
  const fs::path root = fs::path(KEYFLOW_SOURCE_DIR) / "common";
  std::vector<std::string> wrong;
  size_t base_files = 0;
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    const std::string ext = entry.path().extension().string();
    if (!entry.is_regular_file() || (ext != ".h" && ext != ".cc")) continue;
    const std::string path = fs::relative(entry.path(), root).string();
    const std::string library = CommonLibraryOf(path);
    if (library.empty()) ++base_files;
    std::ifstream in(entry.path());
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
      std::smatch m;
      const std::string where = "common/" + path + ":" + std::to_string(n) + " includes ";
      if (std::regex_search(line, m, local)) {
        const std::string target = CommonLibraryOf(m[1].str());
        if (target.empty() || target == library) continue;
        if (!library.empty() && CommonLibraries().at(library).count(target) != 0) continue;
        wrong.push_back(where + "common/" + m[1].str());
      } else if (library.empty() && std::regex_search(line, m, system) &&
                 IsHeavyHeader(m[1].str())) {
        wrong.push_back(where + "<" + m[1].str() + ">");
      }
    }
  }
  std::string text;
  for (const std::string& w : wrong) text += "  " + w + "\n";
  EXPECT_TRUE(wrong.empty()) << "common/ includes what it must not:\n" << text;
  EXPECT_GT(base_files, 20u);  // the rule read the base
}

// The link side of the same rule: this binary (the base's tests) links keyflow::common, and no
// transport, crypto, logging, Kafka or RocksDB library is loaded into it.
TEST(ModuleLayering, TheBaseLoadsNoTransportCryptoOrLoggingLibrary) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  size_t mappings = 0;
  std::set<std::string> heavy;
  while (std::getline(maps, line)) {
    ++mappings;
    for (const char* library : {"libzmq", "libsodium", "libssl", "libcrypto", "libspdlog",
                                "librdkafka", "librocksdb", "libboost_program_options"}) {
      if (line.find(std::string("/") + library) != std::string::npos) heavy.insert(library);
    }
  }
  EXPECT_GT(mappings, 10u);
  EXPECT_TRUE(heavy.empty()) << "loaded: " << *heavy.begin();
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
