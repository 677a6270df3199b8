// What a job library built by another keyflow (0.3.0, SDK ABI 3) exports: the loader must refuse
// it after reading the ABI version, without calling keyflow_job_library().
#include <cstdint>
#include <cstdlib>

extern "C" __attribute__((visibility("default"))) uint32_t keyflow_job_library_abi_version() {
  return 3;
}
extern "C" __attribute__((visibility("default"))) const char* keyflow_job_library_sdk_version() {
  return "0.3.0";
}
extern "C" __attribute__((visibility("default"))) const void* keyflow_job_library() {
  std::abort();  // another layout: never called
}
