#include "worker/watermark/bounded_out_of_orderness_watermarks.h"

#include <sstream>

namespace keyflow {

Result<BoundedOutOfOrdernessWatermarks> BoundedOutOfOrdernessWatermarks::Create(
    Duration max_out_of_orderness) {
  if (max_out_of_orderness < Duration::Millis(0)) {
    std::ostringstream m;
    m << "the maximum out-of-orderness of the watermark generator must not be "
         "negative, got "
      << max_out_of_orderness << "; use 0 for ascending timestamps";
    return InvalidArgument(m.str());
  }
  return BoundedOutOfOrdernessWatermarks(max_out_of_orderness);
}

}  // namespace keyflow
