// Damage to checkpoint files, as a bad disk or a careless hand does it, for the fault tests of
// tests/integration (recovery_test.cc, shared_state_faults_test.cc). gtest assertions: call
// under ASSERT_NO_FATAL_FAILURE.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <fstream>
#include <string>

namespace keyflow::test {

// Inverts `n` bytes of `path` starting at byte `offset`.
inline void FlipBytesAt(const std::string& path, std::streamoff offset, size_t n) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  ASSERT_TRUE(f) << path;
  f.seekg(0, std::ios::end);
  const std::streamoff size = f.tellg();
  ASSERT_LE(offset + static_cast<std::streamoff>(n), size) << path;
  std::string bytes(n, '\0');
  f.seekg(offset);
  f.read(bytes.data(), static_cast<std::streamsize>(n));
  for (char& c : bytes) c = static_cast<char>(~c);
  f.seekp(offset);
  f.write(bytes.data(), static_cast<std::streamsize>(n));
  ASSERT_TRUE(f) << path;
}

// Inverts `n` bytes in the middle of `path` (which has more than 2n bytes).
inline void FlipBytes(const std::string& path, size_t n = 8) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  ASSERT_TRUE(in) << path;
  const std::streamoff size = in.tellg();
  ASSERT_GT(size, static_cast<std::streamoff>(2 * n)) << path;
  FlipBytesAt(path, size / 2, n);
}

}  // namespace keyflow::test
