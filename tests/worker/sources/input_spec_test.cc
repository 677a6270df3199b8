#include "common/input/input_spec.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "tests/testutil/status_matchers.h"
#include "tests/worker/sources/test_util.h"

namespace keyflow {
namespace {

using test_util::TempDir;

TEST(InputSpec, SingleFileIsOneSplit) {
  TempDir dir;
  std::string path = dir.Write("events.jsonl", "{}\n");
  Result<InputSpec> spec = InputSpec::Parse(path);
  ASSERT_OK(spec);
  EXPECT_EQ(spec->kind(), InputSpec::Kind::kFiles);
  ASSERT_EQ(spec->splits().size(), 1u);
  EXPECT_EQ(spec->splits()[0], SourceSplit::File(SplitId(0), path));
}

TEST(InputSpec, EmptyFileIsStillASplit) {
  TempDir dir;
  std::string path = dir.Write("empty.jsonl", "");
  Result<InputSpec> spec = InputSpec::Parse(path);
  ASSERT_OK(spec);
  EXPECT_EQ(spec->splits().size(), 1u);
}

TEST(InputSpec, DirectoryGivesRegularFilesSortedByNameSkippingHiddenAndInProgress) {
  TempDir dir;
  dir.Write("b.jsonl", "");
  dir.Write("a.jsonl", "");
  dir.Write("B-upper.jsonl", "");  // byte order: 'B' < 'a'
  dir.Write(".part-0-1-0.inprogress", "");
  dir.Write("_part-0-1-0-3.pending", "");
  dir.Write("_SUCCESS", "");
  ASSERT_EQ(::mkdir(dir.File("subdir").c_str(), 0755), 0);
  dir.Write("subdir/nested.jsonl", "");
  ASSERT_EQ(::symlink(dir.File("a.jsonl").c_str(), dir.File("c-link.jsonl").c_str()), 0);
  ASSERT_EQ(::symlink(dir.File("missing").c_str(), dir.File("d-dangling.jsonl").c_str()), 0);

  Result<InputSpec> spec = InputSpec::Parse(dir.path());
  ASSERT_OK(spec);
  std::vector<SourceSplit> expected = {
      SourceSplit::File(SplitId(0), dir.File("B-upper.jsonl")),
      SourceSplit::File(SplitId(1), dir.File("a.jsonl")),
      SourceSplit::File(SplitId(2), dir.File("b.jsonl")),
      SourceSplit::File(SplitId(3), dir.File("c-link.jsonl")),
  };
  EXPECT_EQ(spec->splits(), expected);
}

TEST(InputSpec, DirectoryWithTrailingSlashDoesNotDoubleTheSlash) {
  TempDir dir;
  dir.Write("a.jsonl", "");
  Result<InputSpec> spec = InputSpec::Parse(dir.path() + "/");
  ASSERT_OK(spec);
  EXPECT_EQ(spec->splits()[0].path(), dir.File("a.jsonl"));
}

TEST(InputSpec, MissingPathIsNotFound) {
  TempDir dir;
  std::string path = dir.File("nope.jsonl");
  Result<InputSpec> spec = InputSpec::Parse(path);
  EXPECT_EQ(spec.status(), Status(StatusCode::kNotFound, "input '" + path +
                                                             "' does not exist; give a JSON Lines "
                                                             "file, a directory of them, or "
                                                             "gen:events=N,keys=K,splits=S"));
}

TEST(InputSpec, DirectoryWithoutInputFilesIsAnError) {
  TempDir dir;
  std::string expected = "input directory '" + dir.path() +
                         "' contains no input files (only regular files whose names do not "
                         "start with '.' or '_' are read)";
  EXPECT_EQ(InputSpec::Parse(dir.path()).status(), InvalidArgument(expected));
  dir.Write(".hidden", "x");
  dir.Write("_in_progress", "x");
  EXPECT_EQ(InputSpec::Parse(dir.path()).status(), InvalidArgument(expected));
}

TEST(InputSpec, EmptyTextIsAnError) {
  EXPECT_EQ(InputSpec::Parse("").status(),
            InvalidArgument("--input is empty: give a JSON Lines file, a directory of them, or "
                            "gen:events=N,keys=K,splits=S"));
}

TEST(InputSpec, DeviceIsNeitherFileNorDirectory) {
  EXPECT_EQ(InputSpec::Parse("/dev/null").status(),
            InvalidArgument("input '/dev/null' is neither a regular file nor a directory"));
}

TEST(InputSpec, GeneratorWithRequiredParametersGetsDefaultsAndOneSplitPerGeneratorSplit) {
  Result<InputSpec> spec = InputSpec::Parse("gen:events=10,keys=4,splits=3");
  ASSERT_OK(spec);
  EXPECT_EQ(spec->kind(), InputSpec::Kind::kGenerator);
  const GeneratorSpec& g = spec->generator();
  EXPECT_EQ(g.events, 10);
  EXPECT_EQ(g.keys, 4);
  EXPECT_EQ(g.splits, 3);
  EXPECT_EQ(g.seed, 0u);
  EXPECT_EQ(g.rate, 0.0);
  EXPECT_EQ(g.disorder_ms, 200);
  EXPECT_EQ(g.start_ms, 1700000000000);
  EXPECT_EQ(g.step_ms, 1);
  EXPECT_EQ(g.skew, 0.0);
  EXPECT_EQ(g.payload_bytes, 0);
  std::vector<SourceSplit> expected = {SourceSplit::Generator(SplitId(0), 0),
                                       SourceSplit::Generator(SplitId(1), 1),
                                       SourceSplit::Generator(SplitId(2), 2)};
  EXPECT_EQ(spec->splits(), expected);
  EXPECT_EQ(g.EventsInSplit(0), 4);
  EXPECT_EQ(g.EventsInSplit(1), 3);
  EXPECT_EQ(g.EventsInSplit(2), 3);
  EXPECT_EQ(g.KeysInSplit(0), 2);
  EXPECT_EQ(g.KeysInSplit(1), 1);
}

TEST(InputSpec, GeneratorParsesEveryParameterAndRoundTripsThroughToString) {
  Result<GeneratorSpec> g = ParseGeneratorSpec(
      "payload=16,skew=1.25,step=5,start=-100,disorder=0,note=7,"
      "rate=2.5,seed=18446744073709551615,"
      "splits=2,keys=1000,events=1000000");
  ASSERT_OK(g);
  EXPECT_EQ(g->events, 1000000);
  EXPECT_EQ(g->keys, 1000);
  EXPECT_EQ(g->splits, 2);
  EXPECT_EQ(g->seed, 18446744073709551615u);
  EXPECT_EQ(g->rate, 2.5);
  EXPECT_EQ(g->disorder_ms, 0);
  EXPECT_EQ(g->start_ms, -100);
  EXPECT_EQ(g->step_ms, 5);
  EXPECT_EQ(g->skew, 1.25);
  EXPECT_EQ(g->payload_bytes, 16);
  EXPECT_EQ(g->note_bytes, 7);
  EXPECT_EQ(g->ToString(),
            "gen:events=1000000,keys=1000,splits=2,seed="
            "18446744073709551615,rate=2.5,"
            "disorder=0,start=-100,step=5,skew=1.25,payload=16,note=7");
  Result<InputSpec> again = InputSpec::Parse(g->ToString());
  ASSERT_OK(again);
  EXPECT_EQ(again->generator(), *g);
}

TEST(InputSpec, GeneratorHotSetRoundTripsAndDefaultsItsShareToOne) {
  Result<InputSpec> spec = InputSpec::Parse("gen:events=100,keys=10,splits=2,hot=0.01");
  ASSERT_OK(spec);
  const GeneratorSpec& g = spec->generator();
  EXPECT_EQ(g.hot, 0.01);
  EXPECT_EQ(g.hot_share, 1.0);
  EXPECT_EQ(g.HotKeysInSplit(0), 1);  // ceil(0.01 * 5), at least one
  EXPECT_EQ(g.ToString(),
            "gen:events=100,keys=10,splits=2,seed=0,rate=0,disorder=200,start=1700000000000,"
            "step=1,skew=0,payload=0,note=100,hot=0.01,hot_share=1");
  Result<InputSpec> again = InputSpec::Parse(g.ToString());
  ASSERT_OK(again);
  EXPECT_EQ(again->generator(), g);

  Result<InputSpec> shared =
      InputSpec::Parse("gen:events=9,keys=1000,splits=3,hot=0.1,hot_share=0");
  ASSERT_OK(shared);
  EXPECT_EQ(shared->generator().hot_share, 0.0);
  EXPECT_EQ(shared->generator().HotKeysInSplit(0), 34);  // ceil(0.1 * 334)
  EXPECT_EQ(shared->generator().HotKeysInSplit(2), 34);  // ceil(0.1 * 333)
}

TEST(InputSpec, GeneratorHoldIsAnAbsolutePathThatRoundTrips) {
  Result<InputSpec> spec = InputSpec::Parse("gen:events=10,keys=2,splits=1,hold=/tmp/run/go");
  ASSERT_OK(spec);
  EXPECT_EQ(spec->generator().hold, "/tmp/run/go");
  EXPECT_EQ(spec->generator().ToString(),
            "gen:events=10,keys=2,splits=1,seed=0,rate=0,disorder=200,start=1700000000000,"
            "step=1,skew=0,payload=0,note=100,hold=/tmp/run/go");
  Result<InputSpec> again = InputSpec::Parse(spec->generator().ToString());
  ASSERT_OK(again);
  EXPECT_EQ(again->generator(), spec->generator());
  EXPECT_EQ(InputSpec::Parse("gen:events=10,keys=2,splits=1,hold=go").status().message(),
            "generator parameter 'hold' must be an absolute path (a file whose creation lets "
            "the input end), got 'go'");
}

TEST(InputSpec, GeneratorErrorsNameTheParameter) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"gen:",
       "generator parameter 'events' is missing "
       "(gen:events=N,keys=K,splits=S[,seed=X,...])"},
      {"gen:events=5,splits=1",
       "generator parameter 'keys' is missing "
       "(gen:events=N,keys=K,splits=S[,seed=X,...])"},
      {"gen:events=5,keys=1",
       "generator parameter 'splits' is missing "
       "(gen:events=N,keys=K,splits=S[,seed=X,...])"},
      {"gen:events=5,keys=2,splits=1,color=red",
       "unknown generator parameter 'color'; known parameters: events, keys, "
       "splits, seed, rate, "
       "disorder, start, step, skew, payload, note, hot, hot_share, hold"},
      {"gen:events=abc,keys=2,splits=1",
       "generator parameter 'events' must be a decimal integer, got 'abc'"},
      {"gen:events=,keys=2,splits=1",
       "generator parameter 'events' must be a decimal integer, got ''"},
      {"gen:events=+5,keys=2,splits=1",
       "generator parameter 'events' must be a decimal integer, got '+5'"},
      {"gen:events=1.5,keys=2,splits=1",
       "generator parameter 'events' must be a decimal integer, got '1.5'"},
      {"gen:events=99999999999999999999,keys=2,splits=1",
       "generator parameter 'events' is out of range: 99999999999999999999"},
      {"gen:events=0,keys=2,splits=1", "generator parameter 'events' must be > 0, got 0"},
      {"gen:events=-3,keys=2,splits=1", "generator parameter 'events' must be > 0, got -3"},
      {"gen:events=5,keys=0,splits=1", "generator parameter 'keys' must be > 0, got 0"},
      {"gen:events=5,keys=2,splits=0", "generator parameter 'splits' must be > 0, got 0"},
      {"gen:events=5,keys=100000,splits=65537",
       "generator parameter 'splits' must be <= 65536, got 65537"},
      {"gen:events=5,keys=2,splits=4",
       "generator parameter 'keys' (2) must be >= 'splits' (4): every key "
       "belongs to exactly one split"},
      {"gen:events=5,keys=2,splits=1,seed=-1",
       "generator parameter 'seed' must be a decimal integer, got '-1'"},
      {"gen:events=5,keys=2,splits=1,rate=-1", "generator parameter 'rate' must be >= 0, got -1"},
      {"gen:events=5,keys=2,splits=1,rate=nan",
       "generator parameter 'rate' must be a number, got 'nan'"},
      {"gen:events=5,keys=2,splits=1,rate=fast",
       "generator parameter 'rate' must be a number, got 'fast'"},
      {"gen:events=5,keys=2,splits=1,disorder=-1",
       "generator parameter 'disorder' must be >= 0, got -1"},
      {"gen:events=5,keys=2,splits=1,step=-2", "generator parameter 'step' must be >= 0, got -2"},
      {"gen:events=5,keys=2,splits=1,skew=-0.5",
       "generator parameter 'skew' must be >= 0, got -0.5"},
      {"gen:events=5,keys=2,splits=1,payload=-1",
       "generator parameter 'payload' must be >= 0, got -1"},
      {"gen:events=5,keys=2,splits=1,hot=0",
       "generator parameter 'hot' is a fraction of keys and must be > 0 and <= 1, got 0"},
      {"gen:events=5,keys=2,splits=1,hot=1.5",
       "generator parameter 'hot' is a fraction of keys and must be > 0 and <= 1, got 1.5"},
      {"gen:events=5,keys=2,splits=1,hot=-0.1",
       "generator parameter 'hot' is a fraction of keys and must be > 0 and <= 1, got -0.1"},
      {"gen:events=5,keys=2,splits=1,hot=few",
       "generator parameter 'hot' must be a number, got 'few'"},
      {"gen:events=5,keys=2,splits=1,hot=0.5,hot_share=2",
       "generator parameter 'hot_share' is a fraction of records and must be >= 0 and <= 1, got "
       "2"},
      {"gen:events=5,keys=2,splits=1,hot_share=0.5",
       "generator parameter 'hot_share' needs 'hot' (the fraction of keys that are hot), e.g. "
       "hot=0.01,hot_share=0.9"},
      {"gen:events=5,keys=2,splits=1,hot=0.5,skew=1",
       "generator parameters 'hot' and 'skew' cannot be combined: use a hot set or a Zipf skew"},
      {"gen:events=5,keys=2,splits=1,payload=1048577",
       "generator parameter 'payload' must be <= 1048576 bytes, got 1048577"},
      {"gen:events=5,keys=2,splits=1,note=-1", "generator parameter 'note' must be >= 0, got -1"},
      {"gen:events=5,keys=2,splits=1,note=1048577",
       "generator parameter 'note' must be <= 1048576 bytes, got 1048577"},
      {"gen:events=5,keys=2,splits=1,note=x",
       "generator parameter 'note' must be a decimal integer, got 'x'"},
      {"gen:events=5,keys=2,splits=1,events=6", "generator parameter 'events' is given twice"},
      {"gen:events=5,keys,splits=1", "generator parameter 'keys' needs a value (keys=...)"},
      {"gen:events=5,,keys=2,splits=1",
       "empty generator parameter in 'events=5,,keys=2,splits=1' (two commas "
       "in a row, or a "
       "trailing comma?)"},
      {"gen:events=5,keys=2,splits=1,",
       "empty generator parameter in 'events=5,keys=2,splits=1,' (two commas "
       "in a row, or a "
       "trailing comma?)"},
      {"gen:events=1000,keys=2,splits=1,start=9223372036854775000",
       "generator timestamps overflow: start + (events - 1) * step + disorder "
       "does not fit in a "
       "64-bit integer; use a smaller start, step, disorder or events"},
      {"gen:events=9223372036854775807,keys=2,splits=1,step=2",
       "generator timestamps overflow: start + (events - 1) * step + disorder "
       "does not fit in a "
       "64-bit integer; use a smaller start, step, disorder or events"},
  };
  for (const auto& [text, message] : cases) {
    EXPECT_EQ(InputSpec::Parse(text).status(), InvalidArgument(message)) << text;
  }
}

TEST(InputSpec, PathStartingWithGenNeedsDotSlash) {
  TempDir dir;
  std::string path = dir.Write("gen:events=1", "");
  // Relative to the working directory the name would be read as a generator; an absolute or
  // ./-prefixed path is a file.
  Result<InputSpec> spec = InputSpec::Parse(path);
  ASSERT_OK(spec);
  EXPECT_EQ(spec->kind(), InputSpec::Kind::kFiles);
}

TEST(InputSpec, MonitorListsTheFilesThereNowAndMayStartEmpty) {
  TempDir dir;
  ASSERT_OK_AND_ASSIGN(InputSpec empty, InputSpec::Parse("monitor:" + dir.path()));
  EXPECT_EQ(empty.kind(), InputSpec::Kind::kMonitor);
  EXPECT_TRUE(empty.splits().empty());
  EXPECT_EQ(empty.monitored_directory(), dir.path());
  EXPECT_EQ(empty.monitor_interval(), InputSpec::kDefaultMonitorInterval);
  dir.Write("b.jsonl", "");
  dir.Write("a.jsonl", "");
  dir.Write("_writing", "");
  ASSERT_OK_AND_ASSIGN(InputSpec two,
                       InputSpec::Parse("monitor:" + dir.path() + ",interval=250ms"));
  EXPECT_EQ(two.monitor_interval(), Duration::Millis(250));
  ASSERT_EQ(two.splits().size(), 2u);
  EXPECT_EQ(two.splits()[0], SourceSplit::File(SplitId(0), dir.File("a.jsonl")));
  EXPECT_EQ(two.splits()[1], SourceSplit::File(SplitId(1), dir.File("b.jsonl")));
  EXPECT_EQ(InputSpec::PathOf("monitor:" + dir.path() + ",interval=1s"), dir.path());
  EXPECT_EQ(InputSpec::PathOf(dir.path()), dir.path());
  EXPECT_EQ(InputSpec::PathOf("gen:events=1,keys=1"), "");
  const std::string cwd = std::filesystem::current_path().string();
  EXPECT_EQ(InputSpec::WithAbsolutePath("monitor:in,interval=1s"),
            "monitor:" + cwd + "/in,interval=1s");
  EXPECT_EQ(InputSpec::WithAbsolutePath("in/a.jsonl"), cwd + "/in/a.jsonl");
  EXPECT_EQ(InputSpec::WithAbsolutePath("gen:events=1,keys=1"), "gen:events=1,keys=1");
}

TEST(InputSpec, MonitorErrorsAreSentences) {
  TempDir dir;
  const std::string file = dir.Write("a.jsonl", "");
  EXPECT_EQ(InputSpec::Parse("monitor:" + dir.File("nope")).status(),
            NotFound("the directory to monitor '" + dir.File("nope") +
                     "' does not exist: create it first (it may be empty)"));
  EXPECT_EQ(InputSpec::Parse("monitor:" + file).status(),
            InvalidArgument("--input monitor:" + file + ": '" + file +
                            "' is not a directory (monitor: watches a directory for new files)"));
  EXPECT_EQ(InputSpec::Parse("monitor:" + dir.path() + ",interval=0s").status(),
            InvalidArgument("--input monitor:" + dir.path() +
                            ",interval=0s: interval '0s' is not a positive duration (e.g. 500ms, "
                            "10s, 1min)"));
  EXPECT_EQ(InputSpec::Parse("monitor:" + dir.path() + ",interval=soon").status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(InputSpec::Parse("monitor:").status(),
            InvalidArgument("--input monitor: names no directory: give "
                            "monitor:DIR[,interval=DURATION]"));
}

}  // namespace
}  // namespace keyflow
