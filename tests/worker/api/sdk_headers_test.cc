// The installed SDK is complete: every header of this tree that <keyflow/keyflow.h> includes,
// directly or not, is in KEYFLOW_SDK_HEADERS (worker/api/CMakeLists.txt), so a job library
// built against an installation finds it. Asks the compiler for the dependencies (-MM).
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

namespace {

const std::string kSource = KEYFLOW_SOURCE_DIR;
const std::string kBinary = KEYFLOW_BINARY_DIR;

std::string RunAndCapture(const std::string& command) {
  std::string out;
  FILE* p = popen(command.c_str(), "r");
  if (p == nullptr) return out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  EXPECT_EQ(pclose(p), 0) << command;
  return out;
}

TEST(SdkHeaders, EveryHeaderTheUmbrellaIncludesIsInstalled) {
  std::set<std::string> installed;
  std::ifstream list(kBinary + "/generated/sdk/installed_headers.txt");
  ASSERT_TRUE(list) << "run cmake: generated/sdk/installed_headers.txt is missing";
  for (std::string line; std::getline(list, line);) {
    if (!line.empty()) installed.insert(line);
  }
  const std::string umbrella = kBinary + "/generated/sdk/keyflow/keyflow.h";
  const std::string deps =
      RunAndCapture(std::string(KEYFLOW_CXX_COMPILER) + " -std=c++20 -MM -x c++ -I" + kSource +
                    " -I" + kBinary + "/generated/sdk " + umbrella + " 2>/dev/null");
  std::istringstream tokens(deps);
  int project_headers = 0;
  std::string missing;
  for (std::string t; tokens >> t;) {
    if (t.rfind(kSource + "/", 0) != 0 || t.rfind(kBinary + "/", 0) == 0) continue;
    std::string relative = t.substr(kSource.size() + 1);
    ++project_headers;
    if (!installed.count(relative)) missing += " " + relative;
  }
  EXPECT_GE(project_headers, 4) << deps;
  EXPECT_EQ(missing, "") << "add these to KEYFLOW_SDK_HEADERS in worker/api/CMakeLists.txt";
}

}  // namespace
