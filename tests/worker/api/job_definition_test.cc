#include "worker/api/job_definition.h"

#include <gtest/gtest.h>
#include "tests/testutil/status_matchers.h"

namespace keyflow {
namespace {

JobDefinition AllTypes() {
  JobDefinition job;
  job.name = "all";
  job.params = {{"i", ParamType::kInt, "-3", "", {}},
                {"p", ParamType::kPositiveInt, "7", "", {}},
                {"d", ParamType::kDouble, "0.25", "", {}},
                {"b", ParamType::kBool, "false", "", {}},
                {"s", ParamType::kString, "", "", {}},
                {"gap", ParamType::kDuration, "30min", "", {}},
                {"mode", ParamType::kChoice, "fast", "", {"fast", "slow"}}};
  return job;
}

TEST(JobDefinition, ParamTypeNames) {
  EXPECT_EQ(ParamTypeName(ParamType::kInt), "int");
  EXPECT_EQ(ParamTypeName(ParamType::kPositiveInt), "positive int");
  EXPECT_EQ(ParamTypeName(ParamType::kDouble), "double");
  EXPECT_EQ(ParamTypeName(ParamType::kBool), "bool");
  EXPECT_EQ(ParamTypeName(ParamType::kString), "string");
  EXPECT_EQ(ParamTypeName(ParamType::kDuration), "duration");
  EXPECT_EQ(ParamTypeName(ParamType::kChoice), "choice");
}

TEST(JobDefinition, ResolveFillsDefaultsAndKeepsGivenValues) {
  auto p = ResolveJobParams(AllTypes(), {{"i", "+12"}, {"s", "a=b c"}, {"gap", "2h"}});
  ASSERT_OK(p);
  EXPECT_EQ(p->values(), (std::map<std::string, std::string>{{"b", "false"},
                                                             {"d", "0.25"},
                                                             {"gap", "2h"},
                                                             {"i", "+12"},
                                                             {"mode", "fast"},
                                                             {"p", "7"},
                                                             {"s", "a=b c"}}));
  EXPECT_EQ(p->GetInt("i"), 12);
  EXPECT_EQ(p->GetInt("p"), 7);
  EXPECT_EQ(p->GetDouble("d"), 0.25);
  EXPECT_FALSE(p->GetBool("b"));
  EXPECT_EQ(p->GetString("s"), "a=b c");
  EXPECT_EQ(p->GetDuration("gap"), Duration::Seconds(7200));
  EXPECT_EQ(p->GetString("mode"), "fast");
}

TEST(JobDefinition, ResolveRefusesBadValuesNamingTheParameter) {
  const JobDefinition job = AllTypes();
  auto message = [&](const std::string& name, const std::string& value) {
    return ResolveJobParams(job, {{name, value}}).status().message();
  };
  EXPECT_EQ(message("i", "1.5"), "parameter i=1.5 must be a whole number, e.g. -3");
  EXPECT_EQ(message("i", ""), "parameter i= must be a whole number, e.g. -3");
  EXPECT_EQ(message("i", "99999999999999999999"),
            "parameter i=99999999999999999999 must be a whole number, e.g. -3");
  EXPECT_EQ(message("p", "0"), "parameter p=0 must be a positive whole number");
  EXPECT_EQ(message("p", "-1"), "parameter p=-1 must be a positive whole number");
  EXPECT_EQ(message("d", "abc"), "parameter d=abc must be a finite number, e.g. 0.25");
  EXPECT_EQ(message("d", "inf"), "parameter d=inf must be a finite number, e.g. 0.25");
  EXPECT_EQ(message("d", "nan"), "parameter d=nan must be a finite number, e.g. 0.25");
  EXPECT_EQ(message("b", "yes"), "parameter b=yes must be true or false");
  EXPECT_EQ(message("gap", "0"), "parameter gap must be > 0");
  EXPECT_EQ(message("mode", "medium"), "parameter mode=medium must be one of: fast, slow");
  EXPECT_EQ(message("nope", "1"),
            "job all has no parameter 'nope'; its parameters are: i, p, d, b, s, gap, mode");
  EXPECT_EQ(ResolveJobParams(job, {{"gap", "soon"}}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ResolveJobParams(job, {{"gap", "soon"}}).status().message().rfind("parameter gap: ", 0),
            0u);
  JobDefinition none;
  none.name = "none";
  EXPECT_EQ(ResolveJobParams(none, {{"x", "1"}}).status().message(),
            "job none has no parameter 'x'; it takes no parameters");
  EXPECT_TRUE(ResolveJobParams(none, {})->values().empty());
}

TEST(JobDefinition, ValidateParamValueAcceptsWellFormedValues) {
  const JobDefinition job = AllTypes();
  EXPECT_OK(ValidateParamValue(job.params[0], "-9223372036854775808"));
  EXPECT_OK(ValidateParamValue(job.params[2], "-1e3"));
  EXPECT_OK(ValidateParamValue(job.params[3], "true"));
  EXPECT_OK(ValidateParamValue(job.params[4], ""));
  EXPECT_OK(ValidateParamValue(job.params[5], "500ms"));
  EXPECT_OK(ValidateParamValue(job.params[6], "slow"));
}

}  // namespace
}  // namespace keyflow
