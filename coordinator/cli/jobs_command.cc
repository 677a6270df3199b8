#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "common/job_library/job_library.h"
#include "common/process/command_line.h"
#include "coordinator/cli/job_commands.h"
#include "coordinator/cli/job_library_upload.h"

namespace keyflow::cli {
namespace {

// The fields a job declares (JobDefinition::fields) with its default parameters; nullopt when
// it ships every field.
std::optional<std::vector<std::string>> DeclaredFields(const JobDefinition& job) {
  if (!job.reads_fields || !job.fields) return std::nullopt;
  Result<JobParams> defaults = ResolveJobParams(job, {});
  if (!defaults.ok()) return std::nullopt;
  std::vector<std::string> fields = job.fields(*defaults);
  if (fields.empty()) return std::nullopt;
  return fields;
}

// A graph job's graph with its default parameters (JobGraph::Describe), or why it cannot be
// built with them; nullopt for a single-function job.
std::optional<std::string> DefaultGraph(const JobLibrary& library, const JobDefinition& job) {
  if (!job.graph) return std::nullopt;
  Result<JobParams> defaults = ResolveJobParams(job, {});
  if (!defaults.ok()) return "(not built: " + defaults.status().message() + ")\n";
  Result<BuiltJobGraph> built = library.BuildGraph(job, *defaults);
  if (!built.ok()) return "(not built: " + built.status().message() + ")\n";
  return built->graph.Describe();
}

}  // namespace

int RunJobsCommand(const std::vector<std::string>& args) {
  po::options_description opts;
  std::string library_path;
  bool json = false;
  opts.add_options()("job-library", po::value(&library_path), kJobLibraryHelp)(
      "json", po::bool_switch(&json), "print the jobs as JSON");
  po::variables_map vm;
  int code;
  if (!ParseCommandLine("usage: keyflow jobs [--job-library L] [--json]\n"
                        "Lists the jobs of a job library: description, parameters (type, "
                        "default, doc), key and timestamp defaults.",
                        opts, {}, args, &vm, &code)) {
    return code;
  }
  auto library = LoadJobLibraryFlag(library_path);
  if (!library.ok()) return Fail(library.status(), kExitUsage);
  const JobLibraryManifest& m = (*library)->manifest();
  if (json) {
    nlohmann::json out;
    out["library"] = (*library)->path();
    out["sdk_version"] = m.sdk_version;
    out["abi_version"] = m.abi_version;
    out["jobs"] = nlohmann::json::array();
    for (const JobDefinition& job : m.jobs) {
      nlohmann::json j;
      j["name"] = job.name;
      j["description"] = job.description;
      j["key_field"] = job.key_field;
      j["key_type"] = std::string(KeyTypeName(job.key_type));
      j["timestamp_field"] = job.timestamp_field;
      j["reads_fields"] = job.reads_fields;
      if (std::optional<std::string> g = DefaultGraph(**library, job)) j["graph"] = *g;
      if (std::optional<std::vector<std::string>> f = DeclaredFields(job)) j["fields"] = *f;
      j["params"] = nlohmann::json::array();
      for (const ParamSpec& p : job.params) {
        nlohmann::json pj = {{"name", p.name},
                             {"type", std::string(ParamTypeName(p.type))},
                             {"default", p.default_value},
                             {"doc", p.doc}};
        if (p.type == ParamType::kChoice) pj["choices"] = p.choices;
        j["params"].push_back(std::move(pj));
      }
      out["jobs"].push_back(std::move(j));
    }
    out["sources"] = nlohmann::json::array();
    for (const SourceConnector& source : m.sources) {
      out["sources"].push_back({{"name", source.name}, {"description", source.description}});
    }
    out["sinks"] = nlohmann::json::array();
    for (const SinkConnector& sink : m.sinks) {
      out["sinks"].push_back({{"name", sink.name}, {"description", sink.description}});
    }
    std::cout << out.dump(2) << "\n";
    return kExitOk;
  }
  std::cout << "job library " << (*library)->path() << " (keyflow SDK " << m.sdk_version << ", ABI "
            << m.abi_version << ")\n";
  for (const JobDefinition& job : m.jobs) {
    const std::optional<std::string> graph = DefaultGraph(**library, job);
    std::cout << "\n" << job.name << "\n  " << job.description << "\n  input: ";
    if (graph) {
      std::cout << "keyed by the graph's KeyBy";
    } else {
      std::cout << "key field " << job.key_field << " (" << KeyTypeName(job.key_type) << ")";
    }
    std::cout << ", timestamp field " << job.timestamp_field
              << "; reads fields: " << (job.reads_fields ? "yes" : "no (key and timestamp only)");
    if (std::optional<std::vector<std::string>> f = DeclaredFields(job)) {
      std::string names;
      for (const std::string& n : *f) names += (names.empty() ? "" : ", ") + n;
      std::cout << ", only " << names << " (its declared fields with the default parameters)";
    }
    std::cout << "\n";
    if (graph) {
      std::cout << "  graph (default parameters):\n";
      std::istringstream lines(*graph);
      for (std::string line; std::getline(lines, line);) std::cout << "    " << line << "\n";
    }
    if (job.params.empty()) std::cout << "  parameters: none\n";
    for (const ParamSpec& p : job.params) {
      std::cout << "  --param " << p.name << "=<" << ParamTypeName(p.type);
      if (p.type == ParamType::kChoice) {
        std::string choices;
        for (const std::string& c : p.choices) choices += (choices.empty() ? "" : "|") + c;
        std::cout << ": " << choices;
      }
      std::cout << ">  (default " << p.default_value << ")  " << p.doc << "\n";
    }
  }
  for (const SourceConnector& source : m.sources) {
    std::cout << "\nsource " << source.name << "  (--input connector:" << source.name
              << "[:ARGS])\n  " << source.description << "\n";
  }
  for (const SinkConnector& sink : m.sinks) {
    std::cout << "\nsink " << sink.name << "  (--output connector:" << sink.name << "[:ARGS])\n  "
              << sink.description << "\n";
  }
  return kExitOk;
}

}  // namespace keyflow::cli
