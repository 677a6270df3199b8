// Ok(): a gtest assertion on a Status or Result<T> that prints the error when it fails, so
// that `ASSERT_TRUE(Ok(cluster->StartWorker(1)))` says why instead of "false".
//
// Threading: plain functions.
#pragma once

#include <gtest/gtest.h>

#include "common/status.h"

namespace keyflow::test {

inline ::testing::AssertionResult Ok(const Status& s) {
  if (s.ok()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << s.ToString();
}
template <typename T>
::testing::AssertionResult Ok(const Result<T>& r) {
  return Ok(r.status());
}

}  // namespace keyflow::test
