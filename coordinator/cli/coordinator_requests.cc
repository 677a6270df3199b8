#include "coordinator/cli/coordinator_requests.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>

#include "common/clock.h"
#include "common/transport/process_security.h"
#include "coordinator/cli/control_client.h"
#include "coordinator/cli/job_status_text.h"

namespace keyflow::cli {

namespace {

constexpr char kDefaultCoordinator[] = "tcp://127.0.0.1:6123";

// --keys/--key-name/--insecure of the command being run (one command per process).
SecurityFlags& ClientSecurityFlags() {
  static SecurityFlags flags;
  return flags;
}

// $KEYFLOW_COORDINATOR (scripts/start-cluster.sh writes it into RUN_DIR/cluster.env), else
// kDefaultCoordinator.
std::string CoordinatorDefault() {
  const char* env = std::getenv("KEYFLOW_COORDINATOR");
  return env != nullptr && *env != '\0' ? env : kDefaultCoordinator;
}

}  // namespace

void AddCoordinatorOption(po::options_description* opts, std::string* endpoint) {
  opts->add_options()("coordinator", po::value(endpoint)->default_value(CoordinatorDefault()),
                      "coordinator control endpoint tcp://HOST:PORT (default: "
                      "$KEYFLOW_COORDINATOR, else tcp://127.0.0.1:6123)");
  AddSecurityFlags(*opts, Role::kOperator, &ClientSecurityFlags(), "operator");
}

namespace {

// The client's keys: without --keys (and $KEYFLOW_KEYS) it connects without CURVE, which an
// --insecure coordinator accepts and a secure one refuses with a sentence.
Result<std::unique_ptr<ControlClient>> ConnectToCoordinator(const std::string& endpoint,
                                                            int64_t timeout_ms) {
  SecurityFlags flags = ClientSecurityFlags();
  if (flags.keys_dir.empty()) flags.insecure = true;
  KF_ASSIGN_OR_RETURN(ProcessSecurity security, LoadProcessSecurity(flags, Role::kOperator));
  return ControlClient::Connect(endpoint, timeout_ms, security);
}

std::string IncarnationOf(const Reply& status) {
  nlohmann::json j = nlohmann::json::parse(status.json, nullptr, false);
  if (!j.is_object() || !j["coordinator"].is_object()) return "";
  return j["coordinator"].value("incarnation", std::string());
}

}  // namespace

std::optional<Reply> Ask(const std::string& endpoint, const ControlMessage& msg, int* exit_code,
                         bool quiet, int64_t timeout_ms) {
  if (Status s = EndpointFlag("coordinator", endpoint); !s.ok()) {
    *exit_code = Fail(s, kExitUsage);
    return std::nullopt;
  }
  auto client = ConnectToCoordinator(endpoint, timeout_ms);
  if (!client.ok()) {
    *exit_code = Fail(client.status(), kExitUsage);
    return std::nullopt;
  }
  auto reply = (*client)->Request(msg);
  if (!reply.ok()) {
    *exit_code = quiet ? kExitFailure : Fail(reply.status(), kExitFailure);
    return std::nullopt;
  }
  return *reply;
}

std::optional<Reply> AskWatchingRestarts(const std::string& endpoint, const ControlMessage& msg,
                                         const std::string& what, int64_t timeout_ms,
                                         int* exit_code) {
  auto before = Ask(endpoint, StatusRequest{}, exit_code);
  if (!before) return std::nullopt;
  const std::string incarnation = IncarnationOf(*before);
  auto client = ConnectToCoordinator(endpoint, timeout_ms);
  if (!client.ok()) {
    *exit_code = Fail(client.status(), kExitUsage);
    return std::nullopt;
  }
  std::optional<std::string> restarted;  // the sentence, once the coordinator restarted
  bool completed = false;
  auto watch = [&]() -> Status {
    int code = 0;
    auto now = Ask(endpoint, StatusRequest{}, &code, /*quiet=*/true, /*timeout_ms=*/1000);
    if (!now || !now->ok || incarnation.empty() || IncarnationOf(*now) == incarnation) {
      return Status::Ok();  // unreachable (restarting?) or the same process: keep waiting
    }
    nlohmann::json st = nlohmann::json::parse(now->json, nullptr, false);
    const nlohmann::json& job = st["job"];
    // contains() first: a const json's operator[] of a missing key is undefined behaviour.
    const nlohmann::json* last =
        job.is_object() && job.contains("last_command") && job["last_command"].is_object()
            ? &job["last_command"]
            : nullptr;
    if (last != nullptr && last->value("command", std::string()) == what) {
      std::string outcome = last->value("outcome", std::string());
      completed = outcome.rfind("completed", 0) == 0;
      restarted = "the coordinator restarted while the " + what + " was in progress; the " + what +
                  " was " + outcome;
    } else {
      restarted = "the coordinator restarted while the " + what +
                  " was in progress and has no record of it, so it was lost: check `keyflow "
                  "status` and run it again";
    }
    return Aborted(*restarted);
  };
  auto reply = (*client)->Request(msg, /*poll_ms=*/1000, watch);
  if (restarted) {
    if (completed) {
      std::cout << *restarted << "\n";
      *exit_code = kExitOk;
    } else {
      *exit_code = Fail(*restarted, kExitFailure);
    }
    return std::nullopt;
  }
  if (!reply.ok()) {
    *exit_code = Fail(reply.status(), kExitFailure);
    return std::nullopt;
  }
  return *reply;
}

int WaitForJob(const std::string& endpoint, const std::string& job_id) {
  bool tty = isatty(STDERR_FILENO) != 0;
  int64_t last_print = 0, unreachable_since = 0, failed_since = 0;
  constexpr int64_t kUnreachableGraceMs = 120'000;
  constexpr int64_t kExitNoteGraceMs = 4'000;
  while (true) {
    int code = 0;
    auto reply = Ask(endpoint, StatusRequest{}, &code, /*quiet=*/true);
    int64_t now = MonotonicMillis();
    if (!reply || !reply->ok) {
      if (unreachable_since == 0) {
        unreachable_since = now;
        std::cerr << (tty ? "\n" : "") << "keyflow: coordinator unreachable, still waiting for job "
                  << job_id << "...\n";
      }
      if (now - unreachable_since > kUnreachableGraceMs) {
        return Fail("gave up waiting: the coordinator at " + endpoint + " was unreachable for " +
                        std::to_string(kUnreachableGraceMs / 1000) + " s",
                    kExitFailure);
      }
    } else {
      unreachable_since = 0;
      nlohmann::json status = nlohmann::json::parse(reply->json, nullptr, false);
      const nlohmann::json& job = status.is_object() ? status["job"] : status;
      if (job.is_object() && job.value("job_id", "") == job_id) {
        std::string state = job.value("state", "");
        // A job failed by a lost worker: its supervisor reports how the process ended as soon
        // as it noticed (worker-supervisor.sh runs `keyflow-worker --report-exit`, whatever its
        // restart delay), e.g. "died of SIGSEGV while running ProcessElement of job ...";
        // wait a little for that note so the summary names the crash.
        const std::string failure = job.value("failure", std::string());
        const bool note_due = state == "FAILED" &&
                              failure.find(" was lost: ") != std::string::npos &&
                              failure.find("its process ended") == std::string::npos;
        if (note_due && failed_since == 0) failed_since = now;
        if (note_due && now - failed_since < kExitNoteGraceMs) {
          std::this_thread::sleep_for(std::chrono::milliseconds(200));  // polling period
          continue;
        }
        if (state == "FINISHED" || state == "FAILED" || state == "CANCELED") {
          if (tty) std::cerr << "\r\033[K";
          PrintSummary(job, std::cout);
          return state == "FINISHED" ? kExitOk : kExitFailure;
        }
        if (tty) {
          std::cerr << "\r\033[K" << ProgressLine(job) << std::flush;
        } else if (now - last_print >= 10'000) {
          std::cerr << ProgressLine(job) << "\n";
          last_print = now;
        }
      } else if (job.is_object()) {
        return Fail("the coordinator now runs job " + job.value("job_id", std::string("?")) +
                        " instead of " + job_id,
                    kExitFailure);
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));  // polling period, not sync
  }
}

}  // namespace keyflow::cli
