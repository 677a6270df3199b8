#include "worker/jobs/job_factory.h"

#include "common/protocol/job_catalog.h"
#include "worker/jobs/count_window_function.h"
#include "worker/jobs/tumbling_count_function.h"

namespace keyflow {

Result<std::unique_ptr<RecordFunction>> CreateJobFunction(
    const std::string& job_name, const std::map<std::string, std::string>& params) {
  ASSIGN_OR_RETURN(const JobDef* def, FindJob(job_name));
  ASSIGN_OR_RETURN(auto resolved, ResolveJobParams(*def, params));
  if (job_name == "count-window") return MakeCountWindowFunction(resolved);
  if (job_name == "tumbling-count") return MakeTumblingCountFunction(resolved);
  return Internal("job " + job_name + " is in the catalog but has no implementation");
}

}  // namespace keyflow
