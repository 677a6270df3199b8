// A shared object that is not a keyflow job library: no KEYFLOW_JOB_LIBRARY.
extern "C" __attribute__((visibility("default"))) int keyflow_something_else() {
  return 42;
}
