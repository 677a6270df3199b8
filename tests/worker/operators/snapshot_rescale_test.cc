// The per-key-group snapshot round trip that rescaling rests on: run a job in the harness over
// the whole key-group range, snapshot mid-stream, restore into 2 and 3 harnesses with split
// ranges (and from 2 snapshots into 3), continue; the union of outputs equals the
// uninterrupted run exactly.
#include <gtest/gtest.h>

#include <algorithm>
#include <regex>

#include "common/job_library/job_library.h"
#include "tests/testutil/status_matchers.h"
#include "worker/testing/keyed_operator_test_harness.h"

namespace keyflow {
namespace {

using Lines = std::vector<std::string>;

struct Step {
  std::string key;
  int64_t ts;
  int64_t watermark;        // after the record
  int64_t processing_time;  // before the record
};

// 6000 records over 300 keys: event time increasing with bounded disorder (< 400 ms), a
// watermark with bound 400 after each record, processing time +7 ms per record.
std::vector<Step> MakeSteps() {
  std::vector<Step> steps;
  int64_t max_ts = 0;
  uint64_t x = 12345;
  for (int i = 0; i < 6000; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    int key = static_cast<int>((x >> 33) % 300);
    int64_t ts = 1'000'000 + 50 * i + static_cast<int64_t>((x >> 20) % 400);
    max_ts = std::max(max_ts, ts);
    steps.push_back({"k" + std::to_string(key), ts, max_ts - 400 - 1, 10'000 + 7 * i});
  }
  return steps;
}

std::unique_ptr<KeyedOperatorTestHarness> MakeHarness(const std::string& job,
                                                      const std::map<std::string, std::string>& p,
                                                      int32_t parallelism, int32_t subtask,
                                                      int64_t processing_time) {
  auto fn = CreateBuiltInJobFunction(job, p);
  KF_CHECK(fn.ok()) << fn.status().ToString();
  KeyedOperatorTestHarness::Options o;
  o.parallelism = parallelism;
  o.subtask = subtask;
  o.params = p;
  o.processing_time = processing_time;
  auto h = std::make_unique<KeyedOperatorTestHarness>(std::move(fn).value(), o);
  KF_CHECK(h->Open().ok());
  return h;
}

// Feeds steps [from, to) to every harness: each gets the records of its own key groups, and all
// get every watermark and processing-time advance (as the runtime broadcasts them).
void Feed(const std::vector<Step>& steps, size_t from, size_t to,
          const std::vector<KeyedOperatorTestHarness*>& harnesses) {
  KeyGroupAssigner assigner(KeyType::kString, 128);
  for (size_t i = from; i < to; ++i) {
    const Step& s = steps[i];
    KeyGroupId g = assigner.Assign(Key::FromBytes(s.key));
    int owners = 0;
    for (auto* h : harnesses) {
      h->SetProcessingTime(s.processing_time);
      if (h->key_groups().contains(g)) {
        ASSERT_OK(h->ProcessElement(s.key, s.ts));
        ++owners;
      }
      h->ProcessWatermark(s.watermark);
    }
    ASSERT_EQ(owners, 1) << "key group " << g << " must have exactly one owner";
  }
}

Lines WithoutSubtask(Lines lines) {
  static const std::regex kSubtask(R"(,"subtask":\d+)");
  for (auto& l : lines) l = std::regex_replace(l, kSubtask, "");
  std::sort(lines.begin(), lines.end());
  return lines;
}

Lines Drain(const std::vector<KeyedOperatorTestHarness*>& hs) {
  Lines out;
  for (auto* h : hs) {
    for (auto& l : h->ExtractOutput()) out.push_back(std::move(l));
  }
  return out;
}

struct JobCase {
  std::string job;
  std::map<std::string, std::string> params;
};

class SnapshotRescaleTest : public ::testing::TestWithParam<JobCase> {};

TEST_P(SnapshotRescaleTest, RestoringIntoSplitRangesContinuesExactlyLikeTheUninterruptedRun) {
  const JobCase& c = GetParam();
  std::vector<Step> steps = MakeSteps();
  const size_t mid = steps.size() / 2;

  auto reference = MakeHarness(c.job, c.params, 1, 0, 0);
  Feed(steps, 0, steps.size(), {reference.get()});
  reference->EndInput();
  Lines expected = WithoutSubtask(reference->ExtractOutput());
  ASSERT_GT(expected.size(), 50u);

  auto first = MakeHarness(c.job, c.params, 1, 0, 0);
  Feed(steps, 0, mid, {first.get()});
  Lines before = first->ExtractOutput();
  auto snapshot = first->Snapshot();
  ASSERT_OK(snapshot);

  for (int32_t p : {2, 3}) {
    std::vector<std::unique_ptr<KeyedOperatorTestHarness>> owned;
    std::vector<KeyedOperatorTestHarness*> hs;
    for (int32_t i = 0; i < p; ++i) {
      owned.push_back(MakeHarness(c.job, c.params, p, i, steps[mid - 1].processing_time));
      ASSERT_OK(owned.back()->Restore({*snapshot}));
      hs.push_back(owned.back().get());
    }
    Feed(steps, mid, steps.size(), hs);
    for (auto* h : hs) h->EndInput();
    Lines got = before;
    for (auto& l : Drain(hs)) got.push_back(std::move(l));
    EXPECT_EQ(WithoutSubtask(got), expected) << "1 -> " << p;
  }

  // 2 -> 3: each new subtask restores its key groups from both old snapshots.
  std::vector<std::unique_ptr<KeyedOperatorTestHarness>> two;
  for (int32_t i = 0; i < 2; ++i) two.push_back(MakeHarness(c.job, c.params, 2, i, 0));
  Feed(steps, 0, mid, {two[0].get(), two[1].get()});
  Lines before2 = Drain({two[0].get(), two[1].get()});
  std::vector<std::string> snaps;
  for (auto& h : two) snaps.push_back(*h->Snapshot());
  std::vector<std::unique_ptr<KeyedOperatorTestHarness>> three;
  std::vector<KeyedOperatorTestHarness*> hs3;
  for (int32_t i = 0; i < 3; ++i) {
    three.push_back(MakeHarness(c.job, c.params, 3, i, steps[mid - 1].processing_time));
    ASSERT_OK(three.back()->Restore(snaps));
    hs3.push_back(three.back().get());
  }
  Feed(steps, mid, steps.size(), hs3);
  for (auto* h : hs3) h->EndInput();
  Lines got = before2;
  for (auto& l : Drain(hs3)) got.push_back(std::move(l));
  EXPECT_EQ(WithoutSubtask(got), expected) << "2 -> 3";
}

INSTANTIATE_TEST_SUITE_P(
    Jobs, SnapshotRescaleTest,
    ::testing::Values(
        JobCase{"count-window", {{"count", "5"}, {"timeout", "2s"}, {"time", "event"}}},
        JobCase{"count-window", {{"count", "5"}, {"timeout", "900ms"}, {"time", "processing"}}},
        JobCase{"tumbling-count", {{"size", "3s"}}}),
    [](const auto& info) {
      return info.param.job.substr(0, info.param.job.find('-')) + "_" +
             (info.param.params.count("time") ? info.param.params.at("time") : "event");
    });

TEST(SnapshotRestore, RefusesAnotherMaxParallelism) {
  auto a = MakeHarness("tumbling-count", {{"size", "1s"}}, 1, 0, 0);
  ASSERT_OK(a->ProcessElement("x", 5));
  auto snap = a->Snapshot();
  ASSERT_OK(snap);
  auto fn = CreateBuiltInJobFunction("tumbling-count", {{"size", "1s"}});
  KeyedOperatorTestHarness::Options o;
  o.max_parallelism = 256;
  KeyedOperatorTestHarness b(std::move(fn).value(), o);
  ASSERT_OK(b.Open());
  Status s = b.Restore({*snap});
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message(),
            "the snapshot was written with max parallelism 128 but this job has max parallelism "
            "256: the number of key groups is fixed for the lifetime of a job and its "
            "checkpoints; restore with --max-parallelism 128");
}

}  // namespace
}  // namespace keyflow
