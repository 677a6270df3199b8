// ReportWorkerExit: the `keyflow-worker --report-exit HOW --previous-pid P` mode. The supervisor
// (scripts/lib/worker-supervisor.sh) runs it as soon as the worker process it watches ended, with
// that worker's own command line (coordinator endpoint, --keys/--key-name, --slot, --hostname),
// so the coordinator learns how the process ended at once — not only when the supervisor starts
// the next process after its restart delay (1 s .. 30 s), which a `keyflow run --wait` may not
// wait for. One WorkerExitReport (common/protocol/control_messages.h) over a short-lived DEALER
// that authenticates with the worker's key, one Reply, done; no registration, no task.
//
// Threading: the calling thread only (a process of its own).
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"
#include "common/transport/zmq_context.h"
#include "common/types.h"
#include "worker/worker_process.h"

namespace keyflow {

// Sends WorkerExitReport{hostname, pid, slot, how} for `options` (coordinator, security, slot,
// hostname; an empty hostname is this host's name, as the worker registers with) and waits for
// the coordinator's Reply. Returns the Reply's message. Errors: Unavailable when the
// coordinator does not take or answer the report within `timeout` (the restarted worker still
// reports the exit when it registers); FailedPrecondition with the coordinator's sentence when it
// refuses the report (e.g. a key it does not trust).
Result<std::string> ReportWorkerExit(const WorkerOptions& options, const std::string& how,
                                     int64_t pid, ZmqContext* zmq, Duration timeout);

}  // namespace keyflow
