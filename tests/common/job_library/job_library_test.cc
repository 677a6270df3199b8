#include "common/job_library/job_library.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "common/record.h"
#include "tests/testutil/status_matchers.h"
#include "worker/api/keyed_process_function.h"
#include "worker/api/output.h"

namespace keyflow {
namespace {

const std::string kTestData =
    std::string(KEYFLOW_BINARY_DIR) + "/tests/common/job_library/testdata";

std::string TestLibrary(const std::string& name) {
  return kTestData + "/lib" + name + ".so";
}

// True while `path` is loaded in this process (RTLD_NOLOAD does not load it).
bool IsLoaded(const std::string& path) {
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (h == nullptr) return false;
  dlclose(h);
  return true;
}

class StringCollector : public Collector<OutputRecord> {
 public:
  void Collect(OutputRecord value) override { lines.push_back(std::move(value.line)); }
  std::vector<std::string> lines;
};

TEST(JobLibrary, LoadsTheBuiltInLibraryFromBesideTheBinary) {
  auto path = DefaultJobLibraryPath();
  ASSERT_OK(path);
  EXPECT_EQ(*path, std::filesystem::path(KEYFLOW_BINARY_DIR + std::string("/lib/keyflow/jobs/"
                                                                          "libkeyflow-builtin-"
                                                                          "jobs.so"))
                       .lexically_normal()
                       .string());
  auto library = LoadDefaultJobLibrary();
  ASSERT_OK(library);
  ASSERT_EQ((*library)->jobs().size(), 2u);
  EXPECT_EQ((*library)->jobs()[0].name, "count-window");
  EXPECT_EQ((*library)->jobs()[1].name, "tumbling-count");
  EXPECT_FALSE((*library)->jobs()[0].reads_fields);
  EXPECT_FALSE((*library)->jobs()[1].reads_fields);
  EXPECT_EQ((*library)->manifest().abi_version, kSdkAbiVersion);
  EXPECT_EQ((*library)->manifest().sdk_version, KEYFLOW_SDK_VERSION);
  EXPECT_EQ((*library)->file_name(), "libkeyflow-builtin-jobs.so");
}

TEST(JobLibrary, ReadsTheManifestOfAValidLibrary) {
  auto library = JobLibrary::Load(TestLibrary("kf-test-jobs"));
  ASSERT_OK(library);
  auto job = (*library)->FindJob("all-types");
  ASSERT_OK(job);
  EXPECT_EQ((*job)->params.size(), 7u);
  EXPECT_EQ((*job)->key_field, "user");
  EXPECT_EQ((*job)->key_type, KeyType::kLong);
  EXPECT_EQ((*job)->timestamp_field, "time");
  EXPECT_TRUE((*job)->reads_fields);
  EXPECT_EQ((*library)->FindJob("nope").status().message(),
            "job library libkf-test-jobs.so has no job 'nope'; its jobs are: all-types, "
            "no-params, create-throws, create-returns-null, echo (keyflow jobs lists them with "
            "their parameters)");
}

TEST(JobLibrary, CreatedFunctionsKeepTheLibraryLoaded) {
  const std::string path = TestLibrary("kf-test-jobs");
  ASSERT_FALSE(IsLoaded(path));
  std::unique_ptr<KeyedFunction> function;
  {
    auto library = JobLibrary::Load(path);
    ASSERT_OK(library);
    EXPECT_TRUE(IsLoaded(path));
    const JobDefinition* job = (*library)->FindJob("all-types").value();
    auto params = ResolveJobParams(*job, {{"s", "x y"}, {"b", "false"}});
    ASSERT_OK(params);
    auto f = (*library)->CreateFunction(*job, *params);
    ASSERT_OK(f);
    function = std::move(f).value();
  }
  EXPECT_TRUE(IsLoaded(path)) << "the function still needs the library's code";
  Record r;
  Context ctx(nullptr, nullptr);  // the function uses neither key nor timers
  StringCollector out;
  function->ProcessElement(r, ctx, out);
  EXPECT_EQ(out.lines, std::vector<std::string>{"-3 7 0.250000 no [x y] 1800000 fast"});
  function.reset();
  EXPECT_FALSE(IsLoaded(path)) << "dlclose after the last function is gone";
}

TEST(JobLibrary, CreateFailuresNameTheJobAndLibrary) {
  auto library = JobLibrary::Load(TestLibrary("kf-test-jobs")).value();
  const JobDefinition* throws = library->FindJob("create-throws").value();
  EXPECT_EQ(library->CreateFunction(*throws, JobParams()).status().message(),
            "function of job 'create-throws' (libkf-test-jobs.so) threw std::runtime_error in "
            "create: no such thing");
  const JobDefinition* null = library->FindJob("create-returns-null").value();
  EXPECT_EQ(library->CreateFunction(*null, JobParams()).status().message(),
            "function of job 'create-returns-null' (libkf-test-jobs.so) returned no function "
            "from create: return a new function");
}

TEST(JobLibrary, RefusesAMissingFile) {
  auto r = JobLibrary::Load(kTestData + "/libnot-there.so");
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(r.status().message(), "job library " + kTestData +
                                      "/libnot-there.so does not exist: give the path of the "
                                      "lib<name>.so that keyflow_add_job built");
}

TEST(JobLibrary, RefusesAFileThatIsNotASharedObject) {
  const std::string path = ::testing::TempDir() + "/not-a-library.so";
  std::ofstream(path) << "this is text, not ELF\n";
  auto r = JobLibrary::Load(path);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(), "job library " + path +
                                      " is not a shared object (no ELF shared-object header): "
                                      "give the lib<name>.so that keyflow_add_job built");
  // An ELF file that is not a shared object (a relocatable object file) is refused too.
  const std::string object = ::testing::TempDir() + "/object.so";
  std::string elf_rel(
      "\x7f"
      "ELF\x02\x01\x01\0\0\0\0\0\0\0\0\0\x01\0",
      18);
  std::ofstream(object, std::ios::binary) << elf_rel;
  EXPECT_EQ(JobLibrary::Load(object).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(JobLibrary::Load(::testing::TempDir()).status().message(),
            "job library " + ::testing::TempDir() +
                " is not a file: give the path of the lib<name>.so that keyflow_add_job built");
}

TEST(JobLibrary, RefusesALibraryDlopenCannotLoad) {
  EXPECT_EQ(JobLibrary::Load(TestLibrary("kf-needs-dep")).status(),
            FailedPrecondition(
                "cannot load job library " + TestLibrary("kf-needs-dep") +
                ": libkf-dep.so: cannot open shared object file: No such file or directory "
                "(install what it needs, or rebuild it with keyflow_add_job)"));
}

TEST(JobLibrary, RefusesASharedObjectWithoutEntryPoint) {
  EXPECT_EQ(JobLibrary::Load(TestLibrary("kf-no-entry-point")).status(),
            InvalidArgument(
                TestLibrary("kf-no-entry-point") +
                " is not a keyflow job library (it has no keyflow_job_library entry point): "
                "build it with keyflow_add_job and declare its jobs with KEYFLOW_JOB_LIBRARY"));
}

TEST(JobLibrary, RefusesAnotherSdkAbiBeforeCallingTheLibrary) {
  // libkf-other-abi.so aborts if keyflow_job_library() is called.
  EXPECT_EQ(
      JobLibrary::Load(TestLibrary("kf-other-abi")).status(),
      FailedPrecondition(TestLibrary("kf-other-abi") +
                         " was built with keyflow SDK ABI 99 (keyflow 0.99.0); this keyflow " +
                         KEYFLOW_SDK_VERSION +
                         " speaks SDK ABI 5: rebuild the library against this installation"));
  EXPECT_FALSE(IsLoaded(TestLibrary("kf-other-abi")));
  // A worker's cached copy is named as it was submitted, and by its path.
  EXPECT_EQ(JobLibrary::Load(TestLibrary("kf-other-abi"), "libother.so").status().message(),
            "libother.so (" + TestLibrary("kf-other-abi") +
                ") was built with keyflow SDK ABI 99 (keyflow 0.99.0); this keyflow " +
                KEYFLOW_SDK_VERSION +
                " speaks SDK ABI 5: rebuild the library against this installation");
}

TEST(JobLibrary, ACopyIsNamedByItsDisplayName) {
  auto library = JobLibrary::Load(TestLibrary("kf-test-jobs"), "libmine.so").value();
  EXPECT_EQ(library->file_name(), "libmine.so");
  EXPECT_EQ(library->path(), TestLibrary("kf-test-jobs"));
  EXPECT_EQ(library->FindJob("x").status().message().rfind("job library libmine.so has no job", 0),
            0u);
}

TEST(JobLibrary, RefusesBadManifests) {
  struct Case {
    std::string library;
    std::string message;
  } cases[] = {
      {"kf-bad-duplicate-job", " declares job 'twice' twice: give each JobDefinition its own name"},
      {"kf-bad-bad-default",
       "the default of job 'sessions' of job library {} is invalid: parameter gap: "},
      {"kf-bad-null-create", "has neither a create nor a graph function"},
      {"kf-bad-create-and-graph",
       "job 'both' of job library {} sets both JobDefinition::create and JobDefinition::graph: "
       "set one (a graph job's keyed functions come from its Process calls)"},
      {"kf-bad-bad-name",
       " declares a job named 'Running Sum': job names are lowercase letters, digits and '-' "
       "(e.g. \"running-sum\")"},
      {"kf-bad-no-jobs",
       " declares no jobs: return at least one JobDefinition from the function given to "
       "KEYFLOW_JOB_LIBRARY"},
  };
  for (const Case& c : cases) {
    const std::string path = TestLibrary(c.library);
    auto r = JobLibrary::Load(path);
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << c.library;
    std::string expected = c.message;
    if (auto pos = expected.find("{}"); pos != std::string::npos) expected.replace(pos, 2, path);
    EXPECT_NE(r.status().message().find(expected), std::string::npos)
        << c.library << ": " << r.status().message();
    EXPECT_FALSE(IsLoaded(path)) << c.library;
  }
  EXPECT_EQ(JobLibrary::Load(TestLibrary("kf-bad-null-create")).status().message(),
            "job 'lazy' of job library " + TestLibrary("kf-bad-null-create") +
                " has neither a create nor a graph function: set JobDefinition::create (one "
                "keyed function) or JobDefinition::graph (a dataflow graph)");
}

TEST(JobLibrary, ExportsOnlyTheEntryPoints) {
  void* h = dlopen(TestLibrary("kf-test-jobs").c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(h, nullptr) << dlerror();
  EXPECT_NE(dlsym(h, KEYFLOW_JOB_LIBRARY_SYMBOL), nullptr);
  EXPECT_NE(dlsym(h, KEYFLOW_JOB_LIBRARY_ABI_SYMBOL), nullptr);
  EXPECT_NE(dlsym(h, KEYFLOW_JOB_LIBRARY_SDK_VERSION_SYMBOL), nullptr);
  // The SDK it links statically stays private: e.g. keyflow::ParseDuration.
  EXPECT_EQ(dlsym(h, "_ZN7keyflow13ParseDurationESt17basic_string_viewIcSt11char_traitsIcEE"),
            nullptr);
  dlclose(h);
}

// A manifest with one job "j" and no sources or sinks.
JobLibraryManifest ManifestOfOneJob() {
  JobLibraryManifest m;
  JobDefinition job;
  job.name = "j";
  job.create = [](const JobParams&) { return std::unique_ptr<KeyedFunction>(); };
  m.jobs = {job};
  return m;
}

// A library's sources are checked with its jobs: names as job names, unique, both functions.
TEST(JobLibrary, AManifestsSourcesNeedWellFormedUniqueNamesAndBothFunctions) {
  JobLibraryManifest m = ManifestOfOneJob();
  SourceConnector source;
  source.name = "lines";
  source.splits = [](const std::string&) { return Result<std::vector<std::string>>({"a"}); };
  source.open = [](const std::string&, const std::string&, const std::string&) {
    return Result<std::unique_ptr<ConnectorSplitReader>>(std::unique_ptr<ConnectorSplitReader>());
  };
  m.sources = {source};
  EXPECT_OK(ValidateJobLibraryManifest(m, "libx.so"));
  m.sources = {source, source};
  EXPECT_EQ(ValidateJobLibraryManifest(m, "libx.so"),
            InvalidArgument("job library libx.so declares source 'lines' twice: give each "
                            "SourceConnector its own name"));
  SourceConnector bad = source;
  bad.name = "Lines";
  m.sources = {bad};
  EXPECT_EQ(ValidateJobLibraryManifest(m, "libx.so"),
            InvalidArgument("job library libx.so declares a source named 'Lines': source names "
                            "are lowercase letters, digits and '-'"));
  bad = source;
  bad.open = nullptr;
  m.sources = {bad};
  EXPECT_EQ(ValidateJobLibraryManifest(m, "libx.so"),
            InvalidArgument("source 'lines' of job library libx.so lacks its splits or open "
                            "function: set both"));
}

TEST(JobLibrary, AManifestsSinksNeedWellFormedUniqueNamesAndOpenAndCommit) {
  JobLibraryManifest m = ManifestOfOneJob();
  SinkConnector sink;
  sink.name = "files";
  sink.open = [](const std::string&, int32_t, int32_t) {
    return Result<std::unique_ptr<ConnectorSinkWriter>>(std::unique_ptr<ConnectorSinkWriter>());
  };
  sink.commit = [](const std::string&, const std::string&) { return Status::Ok(); };
  m.sinks = {sink};
  EXPECT_OK(ValidateJobLibraryManifest(m, "libx.so"));
  m.sinks = {sink, sink};
  EXPECT_EQ(ValidateJobLibraryManifest(m, "libx.so"),
            InvalidArgument("job library libx.so declares sink 'files' twice: give each "
                            "SinkConnector its own name"));
  SinkConnector bad = sink;
  bad.commit = nullptr;
  m.sinks = {bad};
  EXPECT_EQ(ValidateJobLibraryManifest(m, "libx.so"),
            InvalidArgument("sink 'files' of job library libx.so lacks its open or commit "
                            "function: set both"));
}

}  // namespace
}  // namespace keyflow
