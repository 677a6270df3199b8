#include "state/state_descriptor.h"

#include <cxxabi.h>

#include <cstdlib>
#include <string_view>

namespace keyflow {

std::string_view StateKindName(StateKind kind) {
  switch (kind) {
    case StateKind::kValue:
      return "ValueState";
    case StateKind::kList:
      return "ListState";
    case StateKind::kMap:
      return "MapState";
    case StateKind::kReducing:
      return "ReducingState";
    case StateKind::kAggregating:
      return "AggregatingState";
  }
  return "UnknownState";
}

std::string TypeNameOf(const std::type_info& type) {
  if (type == typeid(std::string)) return "std::string";
  int status = 0;
  char* demangled = abi::__cxa_demangle(type.name(), nullptr, nullptr, &status);
  std::string name = (status == 0 && demangled != nullptr) ? demangled : type.name();
  std::free(demangled);
  for (std::string_view qualifier : {"(anonymous namespace)::", "keyflow::"}) {
    for (size_t at = name.find(qualifier); at != std::string::npos; at = name.find(qualifier, at)) {
      name.erase(at, qualifier.size());
    }
  }
  return name;
}

}  // namespace keyflow
