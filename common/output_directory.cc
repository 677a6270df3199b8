#include "common/output_directory.h"

#include <vector>

#include "common/file_io.h"

namespace keyflow {

bool OutputIsConnector(std::string_view output) {
  return output.substr(0, 10) == "connector:";
}

bool OutputIsDirectory(std::string_view output) {
  return !output.empty() && output.substr(0, 6) != "kafka:" && !OutputIsConnector(output);
}

Status CheckOutputDirectoryIsFresh(const std::string& dir) {
  if (!PathExists(dir)) return Status::Ok();
  KF_ASSIGN_OR_RETURN(std::vector<std::string> names, ListDirectory(dir));
  for (const std::string& n : names) {
    if (!n.empty() && n[0] != '.' && n[0] != '_') {
      return FailedPrecondition("output directory " + dir + " already holds results (" + n +
                                "): use an empty directory for a new job, or remove them");
    }
  }
  return Status::Ok();
}

}  // namespace keyflow
