// UserFunctionGuard: every call from the runtime into a job's function (a job library's code)
// goes through it. What escapes user code becomes a Status that names the job, the library,
// the call and the error, e.g.
//   function of job 'sessions' (libsessions.so) threw std::runtime_error in ProcessElement: boom
// and while user code runs, the calling thread's crash note (CurrentUserCallNote) says which
// call it is, so the worker's crash handler (worker/runtime/crash_handler.h) can name it when
// the function crashes the process (SIGSEGV, SIGABRT, ...).
//
// Cost per call: two thread-local pointer stores (the note strings are formatted once, here)
// and a try block (zero-cost until something is thrown).
// Threading: a guard is used on one task thread; the note is per thread.
#pragma once

#include <array>
#include <exception>
#include <string>
#include <string_view>
#include <utility>

#include "common/status.h"

namespace keyflow {

// The calls the runtime makes into user code.
enum class UserCall : uint8_t {
  kCreate,
  kOpen,
  kProcessElement,
  kOnTimer,
  kEndInput,
  kClose,
  kGraph,  // JobDefinition::graph
  kMap,    // the chained stateless operators
  kFilter,
  kFlatMap,
};
inline constexpr size_t kNumUserCalls = 10;
std::string_view UserCallName(UserCall call);  // "create", "Open", "ProcessElement", ...

// What user code the calling thread is running: e.g. "ProcessElement of job 'crashy'
// (libcrashy.so)", or nullptr outside user code. Async-signal-safe (reads a thread-local
// pointer to a string that outlives the call).
const char* CurrentUserCallNote();

// "std::runtime_error: boom" (the demangled type and what()), or "an exception of type T (not a
// std::exception)": how messages name what escaped user code.
std::string DescribeException(std::exception_ptr e);

class UserFunctionGuard {
 public:
  // `library` is the library's file name (empty: the function is not from a library, e.g. a
  // test's own function class).
  // `operator_uid` non-empty: the function of that operator of a graph job.
  UserFunctionGuard(std::string job_name, std::string library, std::string operator_uid = "");

  // "function of job 'sessions' (libsessions.so)", "function of operator 'large' of job
  // 'spend' (libspend.so)"
  const std::string& function_description() const { return function_; }

  // Runs `fn` (returning void); an exception becomes Internal naming the call.
  template <typename Fn>
  Status Call(UserCall call, Fn&& fn) const {
    NoteScope note(notes_[static_cast<size_t>(call)].c_str());
    try {
      std::forward<Fn>(fn)();
      return Status::Ok();
    } catch (...) {
      return Threw(call, std::current_exception());
    }
  }
  // Runs `fn` returning a Status (Open): an error is reported as the function's, with its code.
  template <typename Fn>
  Status CallReturningStatus(UserCall call, Fn&& fn) const {
    NoteScope note(notes_[static_cast<size_t>(call)].c_str());
    try {
      Status s = std::forward<Fn>(fn)();
      if (s.ok()) return s;
      return Failed(call, s);
    } catch (...) {
      return Threw(call, std::current_exception());
    }
  }

 private:
  // Sets the thread's crash note for the scope of one call (restores the previous one, so
  // nested calls, e.g. EndInput -> ApplyToAllKeys -> user lambda, keep the outer note).
  class NoteScope {
   public:
    explicit NoteScope(const char* note);
    ~NoteScope();
    NoteScope(const NoteScope&) = delete;
    NoteScope& operator=(const NoteScope&) = delete;

   private:
    const char* previous_;
  };

  Status Threw(UserCall call, std::exception_ptr e) const;
  Status Failed(UserCall call, const Status& s) const;

  std::string function_;
  std::array<std::string, kNumUserCalls> notes_;
};

}  // namespace keyflow
