// Job definitions and job libraries (Flink's job jar + its entry class).
//
// A job library is a shared object built with keyflow_add_job (the installed CMake package) that
// declares its jobs once, with KEYFLOW_JOB_LIBRARY:
//
//   std::vector<keyflow::JobDefinition> Jobs() {
//     keyflow::JobDefinition sessions;
//     sessions.name = "sessions";
//     sessions.description = "per user, one output record per session of activity";
//     sessions.params = {{"gap", keyflow::ParamType::kDuration, "30min", "inactivity gap"}};
//     sessions.create = [](const keyflow::JobParams& p) {
//       return std::make_unique<SessionFunction>(p.GetDuration("gap"));
//     };
//     return {sessions};
//   }
//   KEYFLOW_JOB_LIBRARY(Jobs)
//
// A library may also define sources and sinks (worker/api/source_connector.h,
// worker/api/sink_connector.h) with KEYFLOW_JOB_LIBRARY_WITH_CONNECTORS(Jobs, Connectors).
//
// `keyflow jobs --job-library L` lists a library's jobs; `keyflow run --job-library L --job N
// --param k=v` validates the parameters (ResolveJobParams) before anything is deployed, ships L
// to the coordinator and every worker, and each keyed subtask calls `create` once per
// deployment attempt.
//
// ABI: a library records kSdkAbiVersion, the version of the SDK's binary interface it was built
// with (the layouts and virtual interfaces of these headers, for the same C++ ABI: g++/libstdc++
// with the C++11 string ABI). The loader (common/job_library/) refuses another version before it
// calls anything else in the library. Raise kSdkAbiVersion whenever an installed header changes
// a layout or a virtual interface.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/duration.h"
#include "common/key.h"
#include "common/status.h"
#include "worker/api/sink_connector.h"
#include "worker/api/source_connector.h"

namespace keyflow {

// 2: JobDefinition::fields; 3: JobLibraryManifest::sources; 4: JobLibraryManifest::sinks;
// 5: JobDefinition::graph.
inline constexpr uint32_t kSdkAbiVersion = 5;

struct Record;
struct OutputRecord;
template <typename IN, typename OUT>
class KeyedProcessFunction;
class StreamGraphBuilder;
// What a job's keyed subtasks run.
using KeyedFunction = KeyedProcessFunction<Record, OutputRecord>;

enum class ParamType {
  kInt,          // a whole number (int64), e.g. "-3"
  kPositiveInt,  // a whole number > 0
  kDouble,       // a finite number, e.g. "0.25"
  kBool,         // "true" or "false"
  kString,       // any text
  kDuration,     // a duration > 0: "500ms", "30s", "30min", "12h", "2d" (common/duration.h)
  kChoice,       // one of `choices`
};
std::string_view ParamTypeName(ParamType type);  // "int", "positive int", ..., "choice"

struct ParamSpec {
  std::string name;
  ParamType type = ParamType::kString;
  std::string default_value;  // must itself be valid (checked when the library is loaded)
  std::string doc;
  std::vector<std::string> choices;  // kChoice only
};

// A job's resolved parameters: every declared parameter, given or defaulted, validated.
class JobParams {
 public:
  JobParams() = default;
  explicit JobParams(std::map<std::string, std::string> values) : values_(std::move(values)) {}

  // Typed reads. Precondition (CHECKed): `name` is a declared parameter of that type, which
  // ResolveJobParams validated.
  int64_t GetInt(const std::string& name) const;
  double GetDouble(const std::string& name) const;
  bool GetBool(const std::string& name) const;
  const std::string& GetString(const std::string& name) const;
  Duration GetDuration(const std::string& name) const;

  const std::map<std::string, std::string>& values() const { return values_; }

 private:
  std::map<std::string, std::string> values_;
};

struct JobDefinition {
  std::string name;  // unique within the library: [a-z0-9][a-z0-9-]*
  std::string description;
  std::vector<ParamSpec> params;
  // Defaults for the job's input format; `keyflow run --key-field/--key-type/--ts-field`
  // override them.
  std::string key_field = "uid";
  KeyType key_type = KeyType::kString;
  std::string timestamp_field = "ts";
  // False when the functions read only key and timestamp: the sources then ship neither fields
  // nor raw JSON (the fastest path). True gives Record::field() and Record::raw_json().
  bool reads_fields = true;
  // With reads_fields: the top-level fields the functions read, given the job's parameters
  // (called once, at submit). The sources then put only these into the records and drop every
  // other field before the shuffle (Flink's projection push-down), so a record stays small however
  // much else the input carries; Record::field() of an undeclared field and Record::raw_json()
  // see only the declared ones (raw_json() is then e.g. {"amount":42}). Null or an empty list:
  // every field. Names must be non-empty (checked at submit).
  std::function<std::vector<std::string>(const JobParams&)> fields;
  // Creates the function of one keyed subtask. Called on the task thread of every keyed subtask
  // of every deployment attempt; must not return null.
  std::function<std::unique_ptr<KeyedFunction>(const JobParams&)> create;
  // Instead of `create`: the job as a dataflow graph (worker/api/stream_graph.h), e.g.
  //   job.graph = [](keyflow::StreamGraphBuilder& g, const keyflow::JobParams& p) {
  //     g.Source().Filter("large", IsLarge).KeyBy("region").Process("sum", MakeSum).Sink();
  //   };
  // Called by `keyflow run` (which validates the graph before anything is deployed) and on every
  // worker of every deployment attempt, which takes the operators' functions from it: it must
  // build the same graph for the same parameters. A job sets exactly one of create and graph.
  // KeyBy's field and key type are the job's key (--key-field/--key-type do not apply).
  std::function<void(StreamGraphBuilder&, const JobParams&)> graph;
};

// OK if `value` is well-formed for `param` (its type, its choices); InvalidArgument naming the
// parameter and what it accepts otherwise.
Status ValidateParamValue(const ParamSpec& param, const std::string& value);

// Checks every given parameter (declared name, well-formed value) and fills in the defaults.
// InvalidArgument naming the parameter and what it accepts.
Result<JobParams> ResolveJobParams(const JobDefinition& job,
                                   const std::map<std::string, std::string>& given);

// What the library's entry point returns; built once, lives as long as the library is loaded.
struct JobLibraryManifest {
  uint32_t abi_version = kSdkAbiVersion;
  std::string sdk_version;  // the keyflow version of the SDK it was built with, e.g. "0.1.0"
  std::vector<JobDefinition> jobs;
  // The library's source connectors (worker/api/source_connector.h): --input connector:NAME.
  std::vector<SourceConnector> sources;
  // The library's sink connectors (worker/api/sink_connector.h): --output connector:NAME.
  std::vector<SinkConnector> sinks;
};

// What KEYFLOW_JOB_LIBRARY_WITH_CONNECTORS's second function returns.
struct Connectors {
  std::vector<SourceConnector> sources;
  std::vector<SinkConnector> sinks;
};

}  // namespace keyflow

// The library's entry points (C linkage, so they are found by name):
//   uint32_t keyflow_job_library_abi_version()      read first; must equal kSdkAbiVersion
//   const char* keyflow_job_library_sdk_version()   e.g. "0.1.0", for the loader's messages
//   const keyflow::JobLibraryManifest* keyflow_job_library()
// keyflow_add_job exports these and nothing else.
#define KEYFLOW_JOB_LIBRARY_ABI_SYMBOL "keyflow_job_library_abi_version"
#define KEYFLOW_JOB_LIBRARY_SDK_VERSION_SYMBOL "keyflow_job_library_sdk_version"
#define KEYFLOW_JOB_LIBRARY_SYMBOL "keyflow_job_library"

#ifndef KEYFLOW_SDK_VERSION
#define KEYFLOW_SDK_VERSION "unknown"
#endif

// Declares the library's jobs: `jobs_fn` is a function returning std::vector<JobDefinition>.
#define KEYFLOW_JOB_LIBRARY(jobs_fn) \
  KEYFLOW_JOB_LIBRARY_WITH_CONNECTORS(jobs_fn, ::keyflow::Connectors)

// Declares the library's jobs and connectors: `connectors_fn` is a function returning
// keyflow::Connectors (its sources and sinks).
#define KEYFLOW_JOB_LIBRARY_WITH_CONNECTORS(jobs_fn, connectors_fn)                              \
  extern "C" __attribute__((visibility("default"))) uint32_t keyflow_job_library_abi_version() { \
    return ::keyflow::kSdkAbiVersion;                                                            \
  }                                                                                              \
  extern "C" __attribute__((visibility("default"))) const char*                                  \
  keyflow_job_library_sdk_version() {                                                            \
    return KEYFLOW_SDK_VERSION;                                                                  \
  }                                                                                              \
  extern "C" __attribute__((visibility("default"))) const ::keyflow::JobLibraryManifest*         \
  keyflow_job_library() {                                                                        \
    static const ::keyflow::JobLibraryManifest manifest = [] {                                   \
      ::keyflow::JobLibraryManifest m;                                                           \
      m.sdk_version = KEYFLOW_SDK_VERSION;                                                       \
      m.jobs = jobs_fn();                                                                        \
      ::keyflow::Connectors connectors = connectors_fn();                                        \
      m.sources = std::move(connectors.sources);                                                 \
      m.sinks = std::move(connectors.sinks);                                                     \
      return m;                                                                                  \
    }();                                                                                         \
    return &manifest;                                                                            \
  }
