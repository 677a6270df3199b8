#include "state/heap/keyed_state_handle.h"

#include <cstdlib>

namespace keyflow {

void KeyedStateHandle::FailNoCurrentKey() const {
  CHECK(false) << "keyed state '" << name()
               << "' was used without a current key: keyed state is only accessible while the "
                  "runtime has set a key (in processElement, onTimer or ApplyToAllKeys)";
  std::abort();  // not reached: CHECK(false) aborts
}

}  // namespace keyflow
