// Loading job libraries (Flink's user-code class loader): the shared objects built
// with keyflow_add_job that declare jobs with KEYFLOW_JOB_LIBRARY (worker/api/job_definition.h).
//
//   KF_ASSIGN_OR_RETURN(auto library, JobLibrary::Load("build/libsessions.so"));
//   KF_ASSIGN_OR_RETURN(const JobDefinition* job, library->FindJob("sessions"));
//   KF_ASSIGN_OR_RETURN(JobParams params, ResolveJobParams(*job, given));
//   KF_ASSIGN_OR_RETURN(auto function, library->CreateFunction(*job, params));
//
// A library stays loaded (dlopen RTLD_NOW | RTLD_LOCAL) while the JobLibrary or any function it
// created lives: functions hold a shared_ptr to it, so dlclose runs after the last is gone.
// Load refuses, each with one sentence saying what to do: a missing file, a file that is not a
// shared object, one dlopen cannot load (e.g. a missing dependency: dlerror's text), one without
// the keyflow entry points, another SDK ABI version (checked before anything else in the library
// is called), and a bad manifest (duplicate or malformed job names, a default value that is not
// valid for its parameter, a job without a create or graph function, or with both).
//
// Thread-safety: a loaded JobLibrary is immutable; CreateFunction may be called from any thread.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"
#include "worker/api/job_definition.h"
#include "worker/api/stream_graph.h"

namespace keyflow {

// A graph job's graph, as JobLibrary::BuildGraph made it.
struct BuiltJobGraph {
  // The operators' functions (StreamGraphBuilder::functions_of): library code, valid while the
  // library stays loaded.
  std::unique_ptr<StreamGraphBuilder> builder;
  JobGraph graph;  // validated, with its chains
};

// The file name of the built-in job library.
inline constexpr std::string_view kBuiltInJobLibraryName = "libkeyflow-builtin-jobs.so";

class JobLibrary : public std::enable_shared_from_this<JobLibrary> {
 public:
  // `display_name`: how messages name the library when `path` is a copy (a worker's cache file
  // <sha256>.so of libsessions.so); empty = the path.
  static Result<std::shared_ptr<const JobLibrary>> Load(const std::string& path,
                                                        const std::string& display_name = "");
  ~JobLibrary();
  JobLibrary(const JobLibrary&) = delete;
  JobLibrary& operator=(const JobLibrary&) = delete;

  const std::string& path() const { return path_; }
  // The file name, for messages: "libsessions.so" (of the display name, if given).
  std::string file_name() const;
  const JobLibraryManifest& manifest() const { return *manifest_; }
  const std::vector<JobDefinition>& jobs() const { return manifest_->jobs; }

  // The job `name`, or NotFound listing the library's jobs.
  Result<const JobDefinition*> FindJob(std::string_view name) const;

  // The source connector `name` (--input connector:NAME), or NotFound listing the library's.
  Result<const SourceConnector*> FindSource(std::string_view name) const;
  // The sink connector `name` (--output connector:NAME), or NotFound listing the library's.
  Result<const SinkConnector*> FindSink(std::string_view name) const;

  // Calls `job.graph` (job must be one of jobs(), a graph job) with resolved params and builds
  // the graph (StreamGraphBuilder::Build, with the job's declared fields). InvalidArgument
  // naming the job when the graph is invalid; Internal if the graph function throws;
  // FailedPrecondition for a single-function job.
  Result<BuiltJobGraph> BuildGraph(const JobDefinition& job, const JobParams& params) const;

  // Calls `job.create` (job must be one of jobs()) with resolved params — for a graph job, the
  // factory of its keyed stage (KeyedPipeline::process); for a graph without a KeyBy, a function
  // that passes every record on as it is (its JSON text and timestamp). The function keeps the
  // library loaded.
  // Internal if create returns null or throws; InvalidArgument for a graph this version does not
  // run (PlanKeyedPipeline).
  Result<std::unique_ptr<KeyedFunction>> CreateFunction(const JobDefinition& job,
                                                        const JobParams& params) const;

 private:
  JobLibrary(std::string path, std::string display_name, void* handle,
             const JobLibraryManifest* manifest)
      : path_(std::move(path)),
        display_name_(std::move(display_name)),
        handle_(handle),
        manifest_(manifest) {}

  std::string path_;
  std::string display_name_;
  void* handle_;
  const JobLibraryManifest* manifest_;
};

// OK if `manifest` is well-formed (job names unique and [a-z0-9][a-z0-9-]*, parameters unique,
// defaults valid, create set; source and sink names likewise, their functions set); `library`
// names it in the message.
Status ValidateJobLibraryManifest(const JobLibraryManifest& manifest, std::string_view library);

// Where the installation's built-in job library is: ../lib/keyflow/jobs/ from the directory of
// the running binary (/proc/self/exe), the same layout in the build tree (build/bin,
// build/lib/keyflow/jobs) and in an installation (PREFIX/bin, PREFIX/lib/keyflow/jobs).
Result<std::string> DefaultJobLibraryPath();
Result<std::shared_ptr<const JobLibrary>> LoadDefaultJobLibrary();

// A function of the built-in library: load, find, resolve `params`, create (tests, tools).
Result<std::unique_ptr<KeyedFunction>> CreateBuiltInJobFunction(
    const std::string& job, const std::map<std::string, std::string>& params);

}  // namespace keyflow
