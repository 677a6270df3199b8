// Assertions on Status, Result<T> and anything else with ok() (rocksdb::Status): on failure
// they print the expression and its error, so a test says why instead of "false".
//
//   ASSERT_OK(storage.WriteJobRecord(r));
//   EXPECT_OK(cluster->StartWorker(1)) << "the replacement worker";
//   ASSERT_OK_AND_ASSIGN(auto metadata, CheckpointStorage::ReadMetadata(dir));
//   EXPECT_TRUE(Ok(status));            // an AssertionResult, for EXPECT_TRUE/WaitUntil
//
// Test-only: no production library includes this.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <utility>

namespace keyflow::test {

// The error of `v` as text: its status's ToString(), its own ToString(), or nothing.
template <typename T>
std::string DescribeNotOk(const T& v) {
  if constexpr (requires { v.status().ToString(); }) {
    return v.status().ToString();
  } else if constexpr (requires { v.ToString(); }) {
    return v.ToString();
  } else {
    return "not OK";
  }
}

template <typename T>
::testing::AssertionResult Ok(const T& v) {
  if (v.ok()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << DescribeNotOk(v);
}

// For EXPECT_PRED_FORMAT1: names the expression.
template <typename T>
::testing::AssertionResult IsOkFormat(const char* text, const T& v) {
  if (v.ok()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << text << " is not OK: " << DescribeNotOk(v);
}

}  // namespace keyflow::test

#define EXPECT_OK(expr) EXPECT_PRED_FORMAT1(::keyflow::test::IsOkFormat, expr)
#define ASSERT_OK(expr) ASSERT_PRED_FORMAT1(::keyflow::test::IsOkFormat, expr)

#define KF_TEST_CONCAT_INNER(a, b) a##b
#define KF_TEST_CONCAT(a, b) KF_TEST_CONCAT_INNER(a, b)
// Binds the value of a Result<T> `expr` to `lhs`, or fails the test (fatally) with its error.
#define ASSERT_OK_AND_ASSIGN(lhs, expr) \
  ASSERT_OK_AND_ASSIGN_IMPL(KF_TEST_CONCAT(kf_test_result_, __LINE__), lhs, expr)
#define ASSERT_OK_AND_ASSIGN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                              \
  ASSERT_OK(tmp);                                 \
  lhs = std::move(tmp).value()
