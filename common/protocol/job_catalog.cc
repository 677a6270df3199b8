#include "common/protocol/job_catalog.h"

#include <charconv>

#include "common/duration.h"

namespace keyflow {

const std::vector<JobDef>& BuiltInJobs() {
  static const std::vector<JobDef> jobs = {
      {"count-window",
       "per key, emit (key, count, start, time, cause) when `count` records have arrived or "
       "`timeout` after the window's first record, whichever comes first",
       {{"count", ParamKind::kPositiveInt, "500", {}, "records that close a window"},
        {"timeout", ParamKind::kDuration, "12h", {}, "window length after its first record"},
        {"time",
         ParamKind::kChoice,
         "processing",
         {"processing", "event"},
         "time domain of the timeout"}}},
      {"tumbling-count",
       "event-time tumbling windows: per key and window [floor(ts/size)*size, +size) count "
       "records; late records are counted and dropped",
       {{"size", ParamKind::kDuration, "1h", {}, "window size"}}},
  };
  return jobs;
}

Result<const JobDef*> FindJob(const std::string& name) {
  std::string known;
  for (const JobDef& j : BuiltInJobs()) {
    if (j.name == name) return &j;
    known += (known.empty() ? "" : ", ") + j.name;
  }
  return NotFound("unknown job '" + name + "'; built-in jobs: " + known);
}

Result<std::map<std::string, std::string>> ResolveJobParams(
    const JobDef& job, const std::map<std::string, std::string>& given) {
  std::map<std::string, std::string> out;
  for (const auto& [name, value] : given) {
    const JobParamDef* def = nullptr;
    for (const JobParamDef& p : job.params) {
      if (p.name == name) def = &p;
    }
    if (def == nullptr) {
      std::string known;
      for (const JobParamDef& p : job.params) known += (known.empty() ? "" : ", ") + p.name;
      return InvalidArgument("job " + job.name + " has no parameter '" + name +
                             "'; its parameters are: " + known);
    }
    switch (def->kind) {
      case ParamKind::kPositiveInt: {
        int64_t v = 0;
        auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
        if (ec != std::errc() || ptr != value.data() + value.size() || v <= 0) {
          return InvalidArgument("parameter " + name + "=" + value +
                                 " must be a positive whole number");
        }
        break;
      }
      case ParamKind::kDuration: {
        auto d = ParseDuration(value);
        if (!d.ok()) return d.status().WithContext("parameter " + name);
        if (d->millis() <= 0) return InvalidArgument("parameter " + name + " must be > 0");
        break;
      }
      case ParamKind::kChoice: {
        bool ok = false;
        std::string choices;
        for (const auto& c : def->choices) {
          ok |= (c == value);
          choices += (choices.empty() ? "" : ", ") + c;
        }
        if (!ok) {
          return InvalidArgument("parameter " + name + "=" + value + " must be one of: " + choices);
        }
        break;
      }
    }
    out[name] = value;
  }
  for (const JobParamDef& p : job.params) out.emplace(p.name, p.default_value);
  return out;
}

Result<std::pair<std::string, std::string>> ParseParamAssignment(const std::string& text) {
  auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0) {
    return InvalidArgument("--param '" + text + "' must look like name=value");
  }
  return std::make_pair(text.substr(0, eq), text.substr(eq + 1));
}

int64_t ParamInt(const std::map<std::string, std::string>& params, const std::string& name) {
  auto it = params.find(name);
  CHECK(it != params.end()) << "parameter " << name << " not resolved";
  int64_t v = 0;
  std::from_chars(it->second.data(), it->second.data() + it->second.size(), v);
  return v;
}

int64_t ParamDurationMillis(const std::map<std::string, std::string>& params,
                            const std::string& name) {
  auto it = params.find(name);
  CHECK(it != params.end()) << "parameter " << name << " not resolved";
  auto d = ParseDuration(it->second);
  CHECK(d.ok()) << d.status().ToString();
  return d->millis();
}

}  // namespace keyflow
