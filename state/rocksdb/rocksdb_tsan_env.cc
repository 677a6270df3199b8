#include "state/rocksdb/rocksdb_tsan_env.h"

#if defined(__SANITIZE_THREAD__)
extern "C" void __tsan_ignore_thread_begin();
extern "C" void __tsan_ignore_thread_end();
#endif

namespace keyflow {

#if defined(__SANITIZE_THREAD__)
namespace {

// A scheduled job and its unschedule callback, both given the job's own argument.
struct Job {
  void (*run)(void*);
  void* arg;
  void (*unschedule)(void*);
};

void RunIgnored(void* job_arg) {
  Job* job = static_cast<Job*>(job_arg);
  __tsan_ignore_thread_begin();
  job->run(job->arg);
  __tsan_ignore_thread_end();
  delete job;
}

void Unschedule(void* job_arg) {
  Job* job = static_cast<Job*>(job_arg);
  if (job->unschedule != nullptr) job->unschedule(job->arg);
  delete job;
}

class TsanIgnoringEnv final : public rocksdb::EnvWrapper {
 public:
  TsanIgnoringEnv() : rocksdb::EnvWrapper(rocksdb::Env::Default()) {}
  const char* Name() const override { return "keyflow.TsanIgnoringEnv"; }
  void Schedule(void (*function)(void*), void* arg, Priority pri, void* tag,
                void (*unschedule)(void*)) override {
    target()->Schedule(&RunIgnored, new Job{function, arg, unschedule}, pri, tag, &Unschedule);
  }
};

}  // namespace

rocksdb::Env* RocksDbBackgroundEnv() {
  static TsanIgnoringEnv* env = new TsanIgnoringEnv();  // lives as long as the process
  return env;
}
ScopedRocksDbIgnore::ScopedRocksDbIgnore() {
  __tsan_ignore_thread_begin();
}
ScopedRocksDbIgnore::~ScopedRocksDbIgnore() {
  __tsan_ignore_thread_end();
}
#else
ScopedRocksDbIgnore::ScopedRocksDbIgnore() = default;
ScopedRocksDbIgnore::~ScopedRocksDbIgnore() = default;

rocksdb::Env* RocksDbBackgroundEnv() {
  return rocksdb::Env::Default();
}
#endif

}  // namespace keyflow
