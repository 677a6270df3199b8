// The input of the built-in generator (--input gen:..., common/input/generator_spec.h) as
// per-key timestamps, for the reference functions of job_data.h: integration tests that run a
// job on generated input (rate-limited, so that it lasts long enough to be killed) compute the
// exact expected results here instead of running the job a second time without failures.
//
// The events come from the generator's random-access GeneratorSplitReader::EventAt() — the
// definition of the input, not the job code. Each key lives in one split (key k in split
// k % S) and a split's events are read in index order, so a key's timestamps here are in the
// order its keyed subtask processes them, whatever the parallelism.
//
// Threading: plain functions.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "tests/integration/job_data.h"

namespace keyflow::test {

// Per key ("uid-<k>"), the timestamps of its events in split order. `input` is the --input
// text, e.g. "gen:events=30000,keys=500,splits=3,seed=7,skew=1,rate=5000" (the rate does not
// change the events). InvalidArgument for anything but a valid gen: input.
Result<KeyedTimestamps> GeneratedKeyedTimestamps(const std::string& input);

// The output a failure-free count-window run (event time) on generated `input` gives
// (ReferenceCountWindow of GeneratedKeyedTimestamps): what recovery, rescale and backend tests
// compare their output with. Fails the calling test (and returns {}) for an invalid input.
std::vector<std::string> ReferenceCountWindowRun(const std::string& input, int64_t count,
                                                 int64_t timeout_ms);

}  // namespace keyflow::test
