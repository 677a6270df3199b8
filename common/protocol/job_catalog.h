// The job catalog (BuiltInJobs, FindJob, ResolveJobParams): the built-in jobs and their parameters,
// known to every process, so that the CLI and the coordinator refuse an unknown job or a bad
// --param before anything is deployed. The implementations live in worker/jobs/ (a test checks both
// lists agree).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/status.h"

namespace keyflow {

enum class ParamKind { kPositiveInt, kDuration, kChoice };

struct JobParamDef {
  std::string name;
  ParamKind kind;
  std::string default_value;
  std::vector<std::string> choices;  // kChoice only
  std::string description;
};

struct JobDef {
  std::string name;
  std::string description;
  std::vector<JobParamDef> params;
};

const std::vector<JobDef>& BuiltInJobs();
// The job's definition, or NotFound listing the known jobs.
Result<const JobDef*> FindJob(const std::string& name);

// Checks every parameter (known name, well-formed value) and returns the full set with defaults
// filled in. Messages name the parameter and what is accepted.
Result<std::map<std::string, std::string>> ResolveJobParams(
    const JobDef& job, const std::map<std::string, std::string>& given);

// "name=value" -> (name, value); InvalidArgument otherwise.
Result<std::pair<std::string, std::string>> ParseParamAssignment(const std::string& text);

// Typed access to resolved parameters (preconditions: resolved by ResolveJobParams).
int64_t ParamInt(const std::map<std::string, std::string>& params, const std::string& name);
int64_t ParamDurationMillis(const std::map<std::string, std::string>& params,
                            const std::string& name);

}  // namespace keyflow
