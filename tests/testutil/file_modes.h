// The permission bits of a file, for tests that check what a component created.
#pragma once

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <string>

namespace keyflow::test {

// The permission bits (07777) of `path`, following symbolic links; fails the test when `path`
// cannot be stat()ed.
inline unsigned Mode(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

}  // namespace keyflow::test
