#include "common/job_library/job_library.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cerrno>
#include <exception>
#include <filesystem>
#include <fstream>
#include <set>
#include <typeinfo>

#include "common/job_library/keyed_pipeline.h"
#include "common/job_library/user_function_guard.h"
#include "common/record.h"
#include "worker/api/keyed_process_function.h"
#include "worker/api/output.h"

namespace keyflow {
namespace {

using AbiVersionFn = uint32_t (*)();
using SdkVersionFn = const char* (*)();
using ManifestFn = const JobLibraryManifest* (*)();

// The function a library created, and the library: forwards every call and unloads the library
// only after the function is destroyed.
class LibraryFunction final : public KeyedFunction {
 public:
  LibraryFunction(std::unique_ptr<KeyedFunction> inner, std::shared_ptr<const JobLibrary> library)
      : inner_(std::move(inner)), library_(std::move(library)) {}
  ~LibraryFunction() override { inner_.reset(); }  // before library_ is released

  Status Open(RuntimeContext& runtime) override { return inner_->Open(runtime); }
  void ProcessElement(const Record& value, Context& ctx, Collector<OutputRecord>& out) override {
    inner_->ProcessElement(value, ctx, out);
  }
  void OnTimer(Timestamp timestamp, OnTimerContext& ctx, Collector<OutputRecord>& out) override {
    inner_->OnTimer(timestamp, ctx, out);
  }
  void EndInput(Context& ctx, Collector<OutputRecord>& out) override { inner_->EndInput(ctx, out); }
  void Close() override { inner_->Close(); }

 private:
  std::unique_ptr<KeyedFunction> inner_;
  std::shared_ptr<const JobLibrary> library_;
};

// The keyed task's function of a graph without a KeyBy: each record goes on to the sink as it
// came (its JSON text and timestamp).
class PassThroughFunction final : public KeyedFunction {
 public:
  void ProcessElement(const Record& value, Context&, Collector<OutputRecord>& out) override {
    out.Collect(OutputRecord(std::string(value.raw_json()), value.timestamp));
  }
};

bool IsValidJobName(std::string_view name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || (c == '-' && i > 0);
    if (!ok) return false;
  }
  return true;
}

// Checks the file before dlopen sees it: it exists and starts like an ELF shared object.
Status CheckSharedObjectFile(const std::string& path) {
  std::error_code ec;
  auto st = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(st)) {
    return NotFound("job library " + path +
                    " does not exist: give the path of the lib<name>.so that keyflow_add_job "
                    "built");
  }
  if (!std::filesystem::is_regular_file(st)) {
    return InvalidArgument("job library " + path +
                           " is not a file: give the path of the lib<name>.so that "
                           "keyflow_add_job built");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return ErrnoError("cannot read job library " + path, errno);
  unsigned char header[18] = {};
  in.read(reinterpret_cast<char*>(header), sizeof(header));
  const bool elf = in.gcount() == sizeof(header) && header[0] == 0x7f && header[1] == 'E' &&
                   header[2] == 'L' && header[3] == 'F';
  // e_type at offset 16 (little-endian on the platforms keyflow runs on): 3 = ET_DYN.
  if (!elf || header[16] != 3 || header[17] != 0) {
    return InvalidArgument("job library " + path +
                           " is not a shared object (no ELF shared-object header): give the "
                           "lib<name>.so that keyflow_add_job built");
  }
  return Status::Ok();
}

std::string JobNames(const std::vector<JobDefinition>& jobs) {
  std::string out;
  for (const JobDefinition& j : jobs) out += (out.empty() ? "" : ", ") + j.name;
  return out.empty() ? "none" : out;
}

// Each of `connectors` (a manifest's sources or sinks: `kind` "source" or "sink", each a `type`)
// has a valid name no other one has, and `has_functions` (`functions` names them).
template <class Connector, class HasFunctions>
Status ValidateConnectors(const std::vector<Connector>& connectors, const std::string& lib,
                          const std::string& kind, std::string_view type,
                          std::string_view functions, HasFunctions has_functions) {
  std::set<std::string> names;
  for (const Connector& c : connectors) {
    if (!IsValidJobName(c.name)) {
      return InvalidArgument("job library " + lib + " declares a " + kind + " named '" + c.name +
                             "': " + kind + " names are lowercase letters, digits and '-'");
    }
    if (!names.insert(c.name).second) {
      return InvalidArgument("job library " + lib + " declares " + kind + " '" + c.name +
                             "' twice: give each " + std::string(type) + " its own name");
    }
    if (!has_functions(c)) {
      return InvalidArgument(kind + " '" + c.name + "' of job library " + lib + " lacks its " +
                             std::string(functions) + " function: set both");
    }
  }
  return Status::Ok();
}

// The connector of `connectors` named `name`, or NotFound listing the `kind`s `library` has.
template <class Connector>
Result<const Connector*> FindConnector(const std::vector<Connector>& connectors,
                                       std::string_view name, const std::string& library,
                                       const std::string& kind) {
  std::string names;
  for (const Connector& c : connectors) {
    if (c.name == name) return &c;
    names += (names.empty() ? "" : ", ") + c.name;
  }
  return NotFound(
      "job library " + library + " has no " + kind + " '" + std::string(name) + "'" +
      (names.empty() ? std::string(": it defines none") : "; its " + kind + "s are: " + names));
}

}  // namespace

Status ValidateJobLibraryManifest(const JobLibraryManifest& manifest, std::string_view library) {
  const std::string lib(library);
  if (manifest.jobs.empty()) {
    return InvalidArgument("job library " + lib +
                           " declares no jobs: return at least one JobDefinition from the "
                           "function given to KEYFLOW_JOB_LIBRARY");
  }
  std::set<std::string> names;
  for (const JobDefinition& job : manifest.jobs) {
    if (!IsValidJobName(job.name)) {
      return InvalidArgument("job library " + lib + " declares a job named '" + job.name +
                             "': job names are lowercase letters, digits and '-' (e.g. "
                             "\"running-sum\")");
    }
    if (!names.insert(job.name).second) {
      return InvalidArgument("job library " + lib + " declares job '" + job.name +
                             "' twice: give each JobDefinition its own name");
    }
    if (!job.create && !job.graph) {
      return InvalidArgument("job '" + job.name + "' of job library " + lib +
                             " has neither a create nor a graph function: set "
                             "JobDefinition::create (one keyed function) or "
                             "JobDefinition::graph (a dataflow graph)");
    }
    if (job.create && job.graph) {
      return InvalidArgument("job '" + job.name + "' of job library " + lib +
                             " sets both JobDefinition::create and JobDefinition::graph: set "
                             "one (a graph job's keyed functions come from its Process calls)");
    }
    if (job.key_field.empty() || job.timestamp_field.empty()) {
      return InvalidArgument("job '" + job.name + "' of job library " + lib +
                             " has an empty key_field or timestamp_field: name the JSON fields");
    }
    std::set<std::string> params;
    for (const ParamSpec& p : job.params) {
      if (p.name.empty() || p.name.find('=') != std::string::npos) {
        return InvalidArgument("job '" + job.name + "' of job library " + lib +
                               " declares a parameter named '" + p.name +
                               "': parameter names are non-empty and have no '='");
      }
      if (!params.insert(p.name).second) {
        return InvalidArgument("job '" + job.name + "' of job library " + lib +
                               " declares parameter '" + p.name + "' twice");
      }
      if (p.type == ParamType::kChoice && p.choices.empty()) {
        return InvalidArgument("parameter " + p.name + " of job '" + job.name + "' (job library " +
                               lib + ") is a choice without choices");
      }
      Status s = ValidateParamValue(p, p.default_value);
      if (!s.ok()) {
        return InvalidArgument("the default of job '" + job.name + "' of job library " + lib +
                               " is invalid: " + s.message() + "; fix the ParamSpec");
      }
    }
  }
  KF_RETURN_IF_ERROR(ValidateConnectors(
      manifest.sources, lib, "source", "SourceConnector", "splits or open",
      [](const SourceConnector& source) { return source.splits && source.open; }));
  return ValidateConnectors(manifest.sinks, lib, "sink", "SinkConnector", "open or commit",
                            [](const SinkConnector& sink) { return sink.open && sink.commit; });
}

Result<std::shared_ptr<const JobLibrary>> JobLibrary::Load(const std::string& path,
                                                           const std::string& display_name) {
  // Messages name the library as the user knows it; a cached copy also by its path.
  const std::string name = display_name.empty() ? path : display_name + " (" + path + ")";
  KF_RETURN_IF_ERROR(CheckSharedObjectFile(path));
  // dlopen searches the library path for a name without '/': a job library is always a file.
  std::string file = path.find('/') == std::string::npos ? "./" + path : path;
  void* handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* err = dlerror();
    return FailedPrecondition("cannot load job library " + name + ": " +
                              (err ? err : "unknown dlopen error") +
                              " (install what it needs, or rebuild it with keyflow_add_job)");
  }
  struct Closer {
    void* h;
    ~Closer() {
      if (h) dlclose(h);
    }
  } closer{handle};
  auto abi = reinterpret_cast<AbiVersionFn>(dlsym(handle, KEYFLOW_JOB_LIBRARY_ABI_SYMBOL));
  auto manifest_fn = reinterpret_cast<ManifestFn>(dlsym(handle, KEYFLOW_JOB_LIBRARY_SYMBOL));
  if (abi == nullptr || manifest_fn == nullptr) {
    return InvalidArgument(name +
                           " is not a keyflow job library (it has no keyflow_job_library entry "
                           "point): build it with keyflow_add_job and declare its jobs with "
                           "KEYFLOW_JOB_LIBRARY");
  }
  const uint32_t version = abi();
  if (version != kSdkAbiVersion) {
    auto sdk =
        reinterpret_cast<SdkVersionFn>(dlsym(handle, KEYFLOW_JOB_LIBRARY_SDK_VERSION_SYMBOL));
    std::string built_with = sdk != nullptr && sdk() != nullptr ? std::string(sdk()) : "unknown";
    return FailedPrecondition(name + " was built with keyflow SDK ABI " + std::to_string(version) +
                              " (keyflow " + built_with + "); this keyflow " + KEYFLOW_SDK_VERSION +
                              " speaks SDK ABI " + std::to_string(kSdkAbiVersion) +
                              ": rebuild the library against this installation");
  }
  const JobLibraryManifest* manifest = nullptr;
  try {
    manifest = manifest_fn();
  } catch (const std::exception& e) {
    return FailedPrecondition("job library " + name + " threw " + typeid(e).name() +
                              " while declaring its jobs: " + e.what());
  } catch (...) {
    return FailedPrecondition("job library " + name + " threw while declaring its jobs");
  }
  if (manifest == nullptr) {
    return InvalidArgument("job library " + name +
                           " returned no manifest: declare its jobs with KEYFLOW_JOB_LIBRARY");
  }
  if (manifest->abi_version != kSdkAbiVersion) {
    return FailedPrecondition(name + " declares SDK ABI " + std::to_string(manifest->abi_version) +
                              " in its manifest but " + std::to_string(version) +
                              " in its entry point: rebuild it with keyflow_add_job");
  }
  KF_RETURN_IF_ERROR(ValidateJobLibraryManifest(*manifest, name));
  closer.h = nullptr;
  return std::shared_ptr<const JobLibrary>(new JobLibrary(path, display_name, handle, manifest));
}

JobLibrary::~JobLibrary() {
  if (handle_ != nullptr) dlclose(handle_);
}

std::string JobLibrary::file_name() const {
  return std::filesystem::path(display_name_.empty() ? path_ : display_name_).filename().string();
}

Result<const JobDefinition*> JobLibrary::FindJob(std::string_view name) const {
  for (const JobDefinition& j : manifest_->jobs) {
    if (j.name == name) return &j;
  }
  return NotFound("job library " + file_name() + " has no job '" + std::string(name) +
                  "'; its jobs are: " + JobNames(manifest_->jobs) +
                  " (keyflow jobs lists them with their parameters)");
}

Result<const SourceConnector*> JobLibrary::FindSource(std::string_view name) const {
  return FindConnector(manifest_->sources, name, file_name(), "source");
}

Result<const SinkConnector*> JobLibrary::FindSink(std::string_view name) const {
  return FindConnector(manifest_->sinks, name, file_name(), "sink");
}

Result<BuiltJobGraph> JobLibrary::BuildGraph(const JobDefinition& job,
                                             const JobParams& params) const {
  if (!job.graph) {
    return FailedPrecondition("job '" + job.name + "' of " + file_name() +
                              " is a single-function job: it has no graph function");
  }
  BuiltJobGraph built;
  built.builder = std::make_unique<StreamGraphBuilder>();
  StreamGraphOptions options;
  UserFunctionGuard guard(job.name, file_name());
  KF_RETURN_IF_ERROR(guard.Call(UserCall::kGraph, [&] {
    if (job.reads_fields && job.fields) options.declared_fields = job.fields(params);
    job.graph(*built.builder, params);
  }));
  Result<JobGraph> graph = built.builder->Build(options);
  if (!graph.ok()) {
    return InvalidArgument("job '" + job.name + "' of " + file_name() +
                           " builds an invalid graph: " + graph.status().message());
  }
  built.graph = std::move(graph).value();
  return built;
}

Result<std::unique_ptr<KeyedFunction>> JobLibrary::CreateFunction(const JobDefinition& job,
                                                                  const JobParams& params) const {
  std::unique_ptr<KeyedFunction> inner;
  // Like every call into user code (a crash in create is named by the crash handler too).
  UserFunctionGuard guard(job.name, file_name());
  if (job.graph) {
    // The factory of the graph's keyed stage.
    KF_ASSIGN_OR_RETURN(BuiltJobGraph built, BuildGraph(job, params));
    Result<KeyedPipeline> pipeline = PlanKeyedPipeline(built.graph);
    if (!pipeline.ok()) {
      return InvalidArgument("job '" + job.name + "' of " + file_name() + ": " +
                             pipeline.status().message());
    }
    if (!pipeline->keyed) return std::unique_ptr<KeyedFunction>(new PassThroughFunction());
    const KeyedFunctionFactory& factory = built.builder->functions_of(pipeline->process).process;
    KF_RETURN_IF_ERROR(guard.Call(UserCall::kCreate, [&] { inner = factory(); }));
  } else {
    KF_RETURN_IF_ERROR(guard.Call(UserCall::kCreate, [&] { inner = job.create(params); }));
  }
  if (inner == nullptr) {
    return Internal(guard.function_description() +
                    " returned no function from create: return a new function");
  }
  return std::unique_ptr<KeyedFunction>(
      std::make_unique<LibraryFunction>(std::move(inner), shared_from_this()));
}

Result<std::string> DefaultJobLibraryPath() {
  std::error_code ec;
  std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) {
    return IoError("cannot find the running binary (/proc/self/exe: " + ec.message() +
                   "), so not the built-in job library either: give --job-library");
  }
  return (exe.parent_path().parent_path() / "lib" / "keyflow" / "jobs" /
          std::string(kBuiltInJobLibraryName))
      .lexically_normal()
      .string();
}

Result<std::shared_ptr<const JobLibrary>> LoadDefaultJobLibrary() {
  KF_ASSIGN_OR_RETURN(std::string path, DefaultJobLibraryPath());
  auto library = JobLibrary::Load(path);
  if (!library.ok()) {
    return library.status().WithContext("the built-in job library of this installation");
  }
  return library;
}

Result<std::unique_ptr<KeyedFunction>> CreateBuiltInJobFunction(
    const std::string& job, const std::map<std::string, std::string>& params) {
  KF_ASSIGN_OR_RETURN(std::shared_ptr<const JobLibrary> library, LoadDefaultJobLibrary());
  KF_ASSIGN_OR_RETURN(const JobDefinition* def, library->FindJob(job));
  KF_ASSIGN_OR_RETURN(JobParams resolved, ResolveJobParams(*def, params));
  return library->CreateFunction(*def, resolved);
}

}  // namespace keyflow
