// count-window: per key, emit (key, count, start, time, cause) when `count` records have arrived
// or `timeout` after the window's first record, whichever comes first (issue
// "Core"). Parameters: count (default 500), timeout (default 12h), time = processing | event.
//
// Output, one JSON line per window:
//   {"key":K,"count":N,"start":S,"time":T,"cause":"count"|"timeout"|"end-of-input","subtask":I}
// (K is a JSON string for string keys, a number for int/long keys.)
//
// Event time — deterministic for a given per-key record order: a window opens at its first
// record's timestamp S with deadline D = S + timeout and an event-time timer at D. A record with
// timestamp >= D first closes the open window (cause timeout, T = D, timer deleted), then opens
// a new one. Each record adds 1; the count-th emits (cause count, T = that record's timestamp),
// deletes the timer and clears. The timer at D emits (cause timeout, T = D) if still open. The
// final watermark at end of input fires every open window's timer.
//
// Processing time: S = processing time of the first record; a processing-time timer at
// S + timeout. The count-th record emits (cause count, T = now) and deletes the timer; the timer
// emits (cause timeout, T = timer time). At end of input, open windows emit (cause
// end-of-input, T = now): processing-time timers do not fire after the end of input.
#pragma once

#include <memory>

#include "common/record.h"
#include "worker/api/job_definition.h"
#include "worker/api/keyed_process_function.h"
#include "worker/api/output.h"

namespace keyflow {

// Precondition: params resolved for count-window (ResolveJobParams, builtin_jobs.cc).
std::unique_ptr<KeyedFunction> MakeCountWindowFunction(const JobParams& params);

}  // namespace keyflow
