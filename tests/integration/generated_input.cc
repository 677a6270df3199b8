#include "tests/integration/generated_input.h"

#include <string_view>

#include "common/input/generator_spec.h"
#include "common/key_group_assignment.h"
#include "tests/testutil/status_matchers.h"
#include "worker/sources/generator_split_reader.h"

namespace keyflow::test {

Result<KeyedTimestamps> GeneratedKeyedTimestamps(const std::string& input) {
  constexpr std::string_view kPrefix = "gen:";
  if (input.rfind(kPrefix, 0) != 0) {
    return InvalidArgument("not a generator input (gen:...): " + input);
  }
  KF_ASSIGN_OR_RETURN(GeneratorSpec spec, ParseGeneratorSpec(input.substr(kPrefix.size())));
  spec.rate = 0;  // pacing only; EventAt() needs no clock
  // The key group of an event does not matter here; any max parallelism will do.
  const KeyGroupAssigner assigner(KeyType::kString, 128);
  KeyedTimestamps out;
  Record event;
  for (int32_t split = 0; split < spec.splits; ++split) {
    KF_ASSIGN_OR_RETURN(GeneratorSplitReader reader,
                        GeneratorSplitReader::Create(spec, split, assigner));
    for (int64_t i = 0; i < reader.size(); ++i) {
      reader.EventAt(i, &event);
      out[std::string(event.key.bytes())].push_back(event.timestamp.millis());
    }
  }
  return out;
}

std::vector<std::string> ReferenceCountWindowRun(const std::string& input, int64_t count,
                                                 int64_t timeout_ms) {
  auto records = GeneratedKeyedTimestamps(input);
  EXPECT_OK(records);
  if (!records.ok()) return {};
  return ReferenceCountWindow(*records, count, timeout_ms);
}

}  // namespace keyflow::test
