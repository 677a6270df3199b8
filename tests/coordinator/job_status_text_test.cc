#include "coordinator/cli/job_status_text.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

namespace keyflow::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

nlohmann::json RunningJob(int attempt, const std::string& last_failure) {
  return {{"state", attempt > 1 ? "RESTARTING" : "RUNNING"},
          {"job_id", "count-20261206-101500"},
          {"records_in", 12345},
          {"records_in_per_s", 2500.0},
          {"records_processed", 12000},
          {"records_out", 42},
          {"watermark", 1000},
          {"attempt", attempt},
          {"last_failure", last_failure}};
}

TEST(JobStatusTextTest, HumanRoundsToOneDecimalWithAUnit) {
  EXPECT_EQ(Human(12), "12");
  EXPECT_EQ(Human(1234), "1.2k");
  EXPECT_EQ(Human(5e6), "5.0M");
  EXPECT_EQ(Human(2.5e9), "2.5G");
}

TEST(JobStatusTextTest, TheProgressLineOfAFirstAttemptHasNoFailure) {
  EXPECT_EQ(ProgressLine(RunningJob(1, "")),
            "[RUNNING] count-20261206-101500  in 12.3k (2.5k/s)  processed 12.0k  out 42  "
            "watermark 1000");
}

TEST(JobStatusTextTest, TheProgressLineOfARestartedJobSaysWhyItRestarted) {
  const std::string failure = "worker 2 was lost: no heartbeat for 3000 ms";
  EXPECT_EQ(ProgressLine(RunningJob(7, failure)),
            "[RESTARTING] count-20261206-101500  in 12.3k (2.5k/s)  processed 12.0k  out 42  "
            "watermark 1000  attempt 7  last failure: " +
                failure);
}

TEST(JobStatusTextTest, TheSummaryNamesAttemptsAndTheLastFailure) {
  nlohmann::json job = RunningJob(3, "subtask 1 failed: user code threw");
  job["state"] = "FINISHED";
  job["restarts"] = 2;
  job["output"] = "/tmp/out";
  std::ostringstream os;
  PrintSummary(job, os);
  EXPECT_THAT(os.str(), HasSubstr("  attempts:          3 (2 restarts)\n"));
  EXPECT_THAT(os.str(), HasSubstr("  last failure:      subtask 1 failed: user code threw\n"));
  EXPECT_THAT(os.str(), HasSubstr("  output:            /tmp/out\n"));
  EXPECT_THAT(os.str(), Not(HasSubstr("reason:")));
}

TEST(JobStatusTextTest, TheSummarySaysWhereSkippedRecordsAndPrintedResultsAre) {
  nlohmann::json job = RunningJob(1, "");
  job["state"] = "FINISHED";
  job["bad_records"] = 3;
  std::ostringstream os;
  PrintSummary(job, os);
  EXPECT_THAT(os.str(), HasSubstr("  malformed records: 3 (skipped; each is logged with its file, "
                                  "line and reason as 'bad record skipped' in the worker logs: "
                                  "<run dir>/worker-<i>.log with scripts/start-cluster.sh)\n"));
  EXPECT_THAT(os.str(), HasSubstr("  output:            printed by the workers to their stdout "
                                  "(with scripts/start-cluster.sh: <run dir>/worker-<i>.out)\n"));
  job["bad_records"] = 0;
  std::ostringstream none;
  PrintSummary(job, none);
  EXPECT_THAT(none.str(), HasSubstr("  malformed records: 0 (skipped)\n"));
}

TEST(JobStatusTextTest, TheStatusOfAClusterWithoutAJobSaysSo) {
  std::ostringstream os;
  PrintStatus({{"workers", nlohmann::json::array()}}, os);
  EXPECT_EQ(os.str(), "workers: 0\njob: none\n");
}

TEST(JobStatusTextTest, AMonitoredDirectorySaysHowManyFilesWereFoundAndWhyAListingFailed) {
  nlohmann::json job = RunningJob(1, "");
  job["source"] = {{"kind", "monitor"},
                   {"directory", "/in"},
                   {"interval_ms", 1000},
                   {"splits", 12},
                   {"listing_error", ""}};
  std::ostringstream ok;
  PrintStatus({{"workers", nlohmann::json::array()}, {"job", job}}, ok);
  EXPECT_THAT(ok.str(), HasSubstr("\n  input: monitoring /in every 1000 ms: 12 files found\n"));
  job["source"]["listing_error"] = "cannot list input directory '/in': No such file or directory";
  std::ostringstream failed;
  PrintStatus({{"workers", nlohmann::json::array()}, {"job", job}}, failed);
  EXPECT_THAT(failed.str(),
              HasSubstr("12 files found; the last listing failed: cannot list input directory "
                        "'/in': No such file or directory\n"));
  job["source"] = {{"kind", "files"}, {"splits", 3}};
  std::ostringstream files;
  PrintStatus({{"workers", nlohmann::json::array()}, {"job", job}}, files);
  EXPECT_THAT(files.str(), Not(HasSubstr("input:")));
}

TEST(JobStatusTextTest, AKafkaSourceSaysItsTopicsPartitionsAndWhyADiscoveryFailed) {
  nlohmann::json job = RunningJob(1, "");
  job["source"] = {{"kind", "kafka"}, {"topics", {"clicks", "views"}},  {"bounded", false},
                   {"splits", 6},     {"discovery_interval_ms", 10000}, {"discovery_error", ""}};
  std::ostringstream ok;
  PrintStatus({{"workers", nlohmann::json::array()}, {"job", job}}, ok);
  EXPECT_THAT(ok.str(), HasSubstr("\n  input: Kafka topics clicks, views: 6 partitions\n"));
  job["source"]["topics"] = {"clicks"};
  job["source"]["bounded"] = true;
  job["source"]["discovery_error"] = "the Kafka brokers h:1 did not answer";
  std::ostringstream bounded;
  PrintStatus({{"workers", nlohmann::json::array()}, {"job", job}}, bounded);
  EXPECT_THAT(bounded.str(),
              HasSubstr("\n  input: Kafka topic clicks: 6 partitions (bounded: up to the end "
                        "offsets seen at the start); the last discovery failed: the Kafka "
                        "brokers h:1 did not answer\n"));
}

TEST(JobStatusTextTest, AKafkaSourceSaysItsConsumerLagAndWhyItsMeasurementFailed) {
  nlohmann::json job = RunningJob(1, "");
  job["source"] = {{"kind", "kafka"},  {"topics", {"clicks"}},  {"bounded", false},
                   {"splits", 2},      {"discovery_error", ""}, {"lag_records", 1234},
                   {"lag_ms", 90'000}, {"lag_error", ""}};
  std::ostringstream ok;
  PrintStatus({{"workers", nlohmann::json::array()}, {"job", job}}, ok);
  EXPECT_THAT(ok.str(), HasSubstr("\n  input: Kafka topic clicks: 2 partitions, consumer lag 1234 "
                                  "records (90s)\n"));
  job["source"]["lag_ms"] = -1;  // not known: the records only
  std::ostringstream no_age;
  PrintStatus({{"workers", nlohmann::json::array()}, {"job", job}}, no_age);
  EXPECT_THAT(
      no_age.str(),
      HasSubstr("\n  input: Kafka topic clicks: 2 partitions, consumer lag 1234 records\n"));
  job["source"]["lag_records"] = -1;
  job["source"]["lag_error"] = "the Kafka brokers h:1 did not answer";
  std::ostringstream failed;
  PrintStatus({{"workers", nlohmann::json::array()}, {"job", job}}, failed);
  EXPECT_THAT(failed.str(),
              HasSubstr("\n  input: Kafka topic clicks: 2 partitions; the last lag measurement "
                        "failed: the Kafka brokers h:1 did not answer\n"));
}

}  // namespace
}  // namespace keyflow::cli
