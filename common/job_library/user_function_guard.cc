#include "common/job_library/user_function_guard.h"

#include <cxxabi.h>

#include <cstdlib>
#include <memory>
#include <typeinfo>

namespace keyflow {
namespace {

// constinit: no TLS initialisation wrapper, so reading it in a signal handler is safe.
constinit thread_local const char* t_user_call_note = nullptr;

// "std::runtime_error" for a mangled type name; the mangled name if demangling fails.
std::string Demangle(const char* mangled) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> name(
      abi::__cxa_demangle(mangled, nullptr, nullptr, &status), std::free);
  return status == 0 && name ? std::string(name.get()) : std::string(mangled);
}

}  // namespace

std::string_view UserCallName(UserCall call) {
  switch (call) {
    case UserCall::kCreate:
      return "create";
    case UserCall::kOpen:
      return "Open";
    case UserCall::kProcessElement:
      return "ProcessElement";
    case UserCall::kOnTimer:
      return "OnTimer";
    case UserCall::kEndInput:
      return "EndInput";
    case UserCall::kClose:
      return "Close";
    case UserCall::kGraph:
      return "graph";
    case UserCall::kMap:
      return "Map";
    case UserCall::kFilter:
      return "Filter";
    case UserCall::kFlatMap:
      return "FlatMap";
  }
  return "?";
}

const char* CurrentUserCallNote() {
  return t_user_call_note;
}

UserFunctionGuard::NoteScope::NoteScope(const char* note) : previous_(t_user_call_note) {
  t_user_call_note = note;
}

UserFunctionGuard::NoteScope::~NoteScope() {
  t_user_call_note = previous_;
}

UserFunctionGuard::UserFunctionGuard(std::string job_name, std::string library,
                                     std::string operator_uid) {
  std::string of_job = "job '" + job_name + "'";
  if (!operator_uid.empty()) of_job = "operator '" + operator_uid + "' of " + of_job;
  if (!library.empty()) of_job += " (" + library + ")";
  function_ = "function of " + of_job;
  for (size_t i = 0; i < kNumUserCalls; ++i) {
    notes_[i] = std::string(UserCallName(static_cast<UserCall>(i))) + " of " + of_job;
  }
}

std::string DescribeException(std::exception_ptr e) {
  try {
    std::rethrow_exception(std::move(e));
  } catch (const std::exception& ex) {
    return Demangle(typeid(ex).name()) + ": " + ex.what();
  } catch (...) {
    const std::type_info* type = abi::__cxa_current_exception_type();
    return "an exception of type " + (type != nullptr ? Demangle(type->name()) : "unknown") +
           " (not a std::exception)";
  }
}

Status UserFunctionGuard::Threw(UserCall call, std::exception_ptr e) const {
  const std::string in = " in " + std::string(UserCallName(call));
  try {
    std::rethrow_exception(std::move(e));
  } catch (const std::exception& ex) {
    return Internal(function_ + " threw " + Demangle(typeid(ex).name()) + in + ": " + ex.what());
  } catch (...) {
    const std::type_info* type = abi::__cxa_current_exception_type();
    std::string name = type != nullptr ? Demangle(type->name()) : "of unknown type";
    return Internal(function_ + " threw an exception of type " + name + " (not a std::exception)" +
                    in);
  }
}

Status UserFunctionGuard::Failed(UserCall call, const Status& s) const {
  return Status(s.code(),
                function_ + " failed in " + std::string(UserCallName(call)) + ": " + s.message());
}

}  // namespace keyflow
