// TestDir: a fresh temporary directory for one integration test (inputs, outputs, process
// logs). Removed when the test passed; kept when it failed, with its path printed, so the logs
// of the processes can be read afterwards.
//
// Threading: one test thread.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

namespace keyflow::test {

class TestDir {
 public:
  TestDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "keyflow-it-XXXXXX").string();
    char* made = ::mkdtemp(tmpl.data());
    if (made == nullptr) {
      ADD_FAILURE() << "mkdtemp failed for " << tmpl;
      return;
    }
    path_ = made;
  }
  ~TestDir() {
    if (path_.empty()) return;
    if (::testing::Test::HasFailure()) {
      std::cerr << "[ keyflow ] test directory kept for inspection: " << path_ << "\n";
      return;
    }
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TestDir(const TestDir&) = delete;
  TestDir& operator=(const TestDir&) = delete;

  const std::string& path() const { return path_; }
  // path()/name, created as a directory.
  std::string Subdir(const std::string& name) const {
    std::string p = path_ + "/" + name;
    std::error_code ec;
    std::filesystem::create_directories(p, ec);
    return p;
  }

 private:
  std::string path_;
};

// The RocksDB subtask directories under a state root
// (<root>/<cluster>/<job>/attempt-N/subtask-I), relative to it, in directory order.
inline std::vector<std::string> SubtaskStateDirectories(const std::string& root) {
  std::vector<std::string> dirs;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(root, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_directory() && it->path().filename().string().rfind("subtask-", 0) == 0) {
      dirs.push_back(it->path().lexically_relative(root).string());
      it.disable_recursion_pending();
    }
  }
  return dirs;
}

}  // namespace keyflow::test
