// What a job library built by another keyflow (0.99.0, SDK ABI 99) exports: the loader must refuse
// it after reading the ABI version, without calling keyflow_job_library().
#include <cstdint>
#include <cstdlib>

extern "C" __attribute__((visibility("default"))) uint32_t keyflow_job_library_abi_version() {
  return 99;
}
extern "C" __attribute__((visibility("default"))) const char* keyflow_job_library_sdk_version() {
  return "0.99.0";
}
extern "C" __attribute__((visibility("default"))) const void* keyflow_job_library() {
  std::abort();  // another layout: never called
}
