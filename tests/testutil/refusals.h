// The sentence an operation refuses its input with, for tests that compare it:
//
//   EXPECT_EQ(InvalidArgumentMessage(g.Build({})), "source 'in' has no consumer");
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "common/status.h"

namespace keyflow::test {

// The message of the error of `r` (a Result<T>), which must be InvalidArgument; "" and a test
// failure when `r` is OK.
template <typename R>
std::string InvalidArgumentMessage(const R& r) {
  EXPECT_FALSE(r.ok());
  if (r.ok()) return "";
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  return r.status().message();
}

}  // namespace keyflow::test
