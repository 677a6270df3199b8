#include "worker/api/job_definition.h"

#include <charconv>
#include <cmath>

namespace keyflow {
namespace {

std::optional<int64_t> ParseInt64(const std::string& text) {
  int64_t v = 0;
  const char* begin = text.data();
  const char* end = begin + text.size();
  if (begin != end && *begin == '+') ++begin;  // "+3" is a whole number too
  auto [ptr, ec] = std::from_chars(begin, end, v);
  if (begin == end || ec != std::errc() || ptr != end) return std::nullopt;
  return v;
}

std::optional<double> ParseDouble(const std::string& text) {
  double v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size() || !std::isfinite(v)) {
    return std::nullopt;
  }
  return v;
}

std::string Join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

const std::string& ValueOf(const std::map<std::string, std::string>& values,
                           const std::string& name) {
  auto it = values.find(name);
  KF_CHECK(it != values.end()) << "job parameter '" << name
                               << "' is not declared (or the params were not resolved)";
  return it->second;
}

}  // namespace

std::string_view ParamTypeName(ParamType type) {
  switch (type) {
    case ParamType::kInt:
      return "int";
    case ParamType::kPositiveInt:
      return "positive int";
    case ParamType::kDouble:
      return "double";
    case ParamType::kBool:
      return "bool";
    case ParamType::kString:
      return "string";
    case ParamType::kDuration:
      return "duration";
    case ParamType::kChoice:
      return "choice";
  }
  return "?";
}

Status ValidateParamValue(const ParamSpec& p, const std::string& value) {
  const std::string what = "parameter " + p.name + "=" + value;
  switch (p.type) {
    case ParamType::kInt:
      if (!ParseInt64(value)) return InvalidArgument(what + " must be a whole number, e.g. -3");
      break;
    case ParamType::kPositiveInt: {
      auto v = ParseInt64(value);
      if (!v || *v <= 0) return InvalidArgument(what + " must be a positive whole number");
      break;
    }
    case ParamType::kDouble:
      if (!ParseDouble(value)) return InvalidArgument(what + " must be a finite number, e.g. 0.25");
      break;
    case ParamType::kBool:
      if (value != "true" && value != "false") {
        return InvalidArgument(what + " must be true or false");
      }
      break;
    case ParamType::kString:
      break;
    case ParamType::kDuration: {
      auto d = ParseDuration(value);
      if (!d.ok()) return d.status().WithContext("parameter " + p.name);
      if (d->millis() <= 0) return InvalidArgument("parameter " + p.name + " must be > 0");
      break;
    }
    case ParamType::kChoice: {
      for (const std::string& c : p.choices) {
        if (c == value) return Status::Ok();
      }
      return InvalidArgument(what + " must be one of: " + Join(p.choices));
    }
  }
  return Status::Ok();
}

int64_t JobParams::GetInt(const std::string& name) const {
  auto v = ParseInt64(ValueOf(values_, name));
  KF_CHECK(v.has_value()) << "job parameter '" << name << "' is not a whole number";
  return *v;
}

double JobParams::GetDouble(const std::string& name) const {
  auto v = ParseDouble(ValueOf(values_, name));
  KF_CHECK(v.has_value()) << "job parameter '" << name << "' is not a number";
  return *v;
}

bool JobParams::GetBool(const std::string& name) const {
  const std::string& v = ValueOf(values_, name);
  KF_CHECK(v == "true" || v == "false") << "job parameter '" << name << "' is not a bool";
  return v == "true";
}

const std::string& JobParams::GetString(const std::string& name) const {
  return ValueOf(values_, name);
}

Duration JobParams::GetDuration(const std::string& name) const {
  auto d = ParseDuration(ValueOf(values_, name));
  KF_CHECK(d.ok()) << d.status().ToString();
  return *d;
}

Result<JobParams> ResolveJobParams(const JobDefinition& job,
                                   const std::map<std::string, std::string>& given) {
  std::map<std::string, std::string> out;
  for (const auto& [name, value] : given) {
    const ParamSpec* spec = nullptr;
    for (const ParamSpec& p : job.params) {
      if (p.name == name) spec = &p;
    }
    if (spec == nullptr) {
      if (job.params.empty()) {
        return InvalidArgument("job " + job.name + " has no parameter '" + name +
                               "'; it takes no parameters");
      }
      std::vector<std::string> known;
      for (const ParamSpec& p : job.params) known.push_back(p.name);
      return InvalidArgument("job " + job.name + " has no parameter '" + name +
                             "'; its parameters are: " + Join(known));
    }
    KF_RETURN_IF_ERROR(ValidateParamValue(*spec, value));
    out[name] = value;
  }
  for (const ParamSpec& p : job.params) out.emplace(p.name, p.default_value);
  return JobParams(std::move(out));
}

}  // namespace keyflow
