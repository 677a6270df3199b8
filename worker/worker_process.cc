#include "worker/worker_process.h"

#include <unistd.h>

#include <algorithm>

#include "common/logging/log_rate_limiter.h"
#include "common/logging/logging.h"
#include "common/process/process_usage.h"
#include "common/transport/control_plane.h"

namespace keyflow {
namespace {

constexpr int64_t kMaxRegisterBackoffMs = 2000;
constexpr int64_t kUnreachableLogEveryMs = 5000;
// A refused registration is retried this often, for at least kRefusedGiveUpMs (and two
// heartbeat timeouts): a predecessor that has just died is then declared lost and the slot
// becomes free; a live holder keeps it and this worker gives up.
constexpr int64_t kRefusedRetryMs = 500;
constexpr int64_t kRefusedGiveUpMs = 3000;

// Errors logged per received control message: at most once a minute each.
LogRateLimiter& ControlMessageErrors() {
  static LogRateLimiter limiter;
  return limiter;
}

}  // namespace

Result<std::unique_ptr<WorkerProcess>> WorkerProcess::Create(WorkerOptions options, ZmqContext* zmq,
                                                             const Clock* clock) {
  std::unique_ptr<WorkerProcess> w(new WorkerProcess());
  w->options_ = std::move(options);
  w->zmq_ = zmq;
  w->clock_ = clock;
  if (w->options_.hostname.empty()) {
    char buf[256] = {};
    ::gethostname(buf, sizeof(buf) - 1);
    w->options_.hostname = buf;
  }
  if (w->options_.security.enabled) {
    w->options_.data.curve_keys = w->options_.security.own;
    w->data_authorizer_ = std::make_unique<DataPlaneAuthorizer>();
    w->options_.data.data_authorizer = w->data_authorizer_.get();
    auto zap = ZapAuthenticator::Start(*zmq, w->data_authorizer_->Policy());
    if (!zap.ok()) return zap.status().WithContext("starting the worker's data-plane ZAP handler");
    w->zap_ = std::move(zap).value();
  }
  SocketOptions so = ControlPlaneSocketOptions();
  so.immediate = true;  // nothing piles up while the coordinator is unreachable
  so.send_high_water_mark = 1000;
  so.receive_high_water_mark = 1000;
  // Secure: CURVE with this worker's key, pinning the coordinator's; failed handshakes (a key
  // the coordinator refuses, an --insecure coordinator) are watched to say why it cannot register.
  so.curve = w->options_.security.ControlClientCurve();
  so.track_connections = w->options_.security.enabled;
  KF_ASSIGN_OR_RETURN(ZmqSocket s, ZmqSocket::Create(*zmq, SocketType::kDealer, so));
  KF_RETURN_IF_ERROR(s.Connect(w->options_.coordinator));
  w->socket_.emplace(std::move(s));
  KF_ASSIGN_OR_RETURN(w->mailbox_, TaskMailbox::Create());
  w->job_libraries_ = std::make_unique<JobLibraryCache>(w->options_.data.job_library_cache_dir);
  return w;
}

int64_t WorkerProcess::refused_data_connections() const {
  return data_authorizer_ ? data_authorizer_->refused() : 0;
}

WorkerProcess::~WorkerProcess() {
  DropExecutor();
  if (mailbox_) mailbox_->Close();
}

void WorkerProcess::Send(const ControlMessage& msg) {
  auto sent = socket_->TrySend(EncodeControlMessage(msg));
  if (!sent.ok()) {
    KF_LOG_WARN("control send failed type={} error={}", ControlMessageName(msg),
                sent.status().message());
  }
}

void WorkerProcess::DropExecutor() {
  awaiting_library_.reset();
  if (data_authorizer_) data_authorizer_->Clear();
  if (executor_) {
    int64_t start = MonotonicMillis();
    executor_->Cancel();
    executor_.reset();
    KF_LOG_DEBUG("executor dropped ms={}", MonotonicMillis() - start);
  }
}

Status WorkerProcess::Run(int stop_fd) {
  Status s = RunLoop(stop_fd);
  if (!s.ok() && registered_) {
    // Say why before going, so the coordinator does not wait for a heartbeat timeout.
    if (socket_->SetLinger(Duration::Millis(200)).ok())
      Send(WorkerExiting{worker_id_, s.message()});
  }
  return s;
}

Status WorkerProcess::RunLoop(int stop_fd) {
  KF_LOG_INFO("worker starting coordinator={} slot={} data_host={}", options_.coordinator,
              options_.slot, options_.data.advertised_host);
  while (true) {
    int64_t now = MonotonicMillis();
    Tick(now);
    int64_t next = registered_ ? next_heartbeat_ms_ : next_register_ms_;
    int64_t timeout = std::clamp<int64_t>(next - MonotonicMillis(), 0, 100);
    zmq_pollitem_t items[3] = {{socket_->handle(), 0, ZMQ_POLLIN, 0},
                               {nullptr, mailbox_->fd(), ZMQ_POLLIN, 0},
                               {nullptr, stop_fd, ZMQ_POLLIN, 0}};
    KF_RETURN_IF_ERROR(
        PollItems(std::span(items, stop_fd >= 0 ? 3 : 2), Duration::Millis(timeout)).status());
    if (stop_fd >= 0 && (items[2].revents & ZMQ_POLLIN)) {
      KF_LOG_INFO("worker stopping (signal)");
      DropExecutor();
      return Status::Ok();
    }
    while (auto mail = mailbox_->TryTake()) mail->action();
    while (true) {
      zmq::message_t msg;
      auto got = socket_->TryReceive(&msg);
      if (!got.ok() || !*got) break;
      auto decoded = DecodeControlMessage(
          std::string_view(static_cast<const char*>(msg.data()), msg.size()), "the coordinator");
      if (!decoded.ok()) {
        KF_LOG_WARN_RATE_LIMITED(ControlMessageErrors(), "undecodable", "{}",
                                 decoded.status().message());
        continue;
      }
      Handle(*decoded, MonotonicMillis());
    }
    if (!fatal_.ok()) return fatal_;
  }
}

void WorkerProcess::Tick(int64_t now) {
  if (!registered_) {
    if (now < next_register_ms_) return;
    RegisterWorker r;
    r.hostname = options_.hostname;
    r.pid = ::getpid();
    r.data_host = options_.data.advertised_host;
    r.slot = slot_ >= 0 ? slot_ : options_.slot;
    r.previous_exit = options_.previous_exit;
    r.previous_pid = options_.previous_pid;
    if (options_.security.enabled) r.public_key = options_.security.own.public_key;
    auto sent = socket_->TrySend(EncodeControlMessage(r));
    if (!sent.ok() || !*sent) {
      if (unreachable_since_ms_ == 0) unreachable_since_ms_ = now;
      // Read on every try: the monitor's events must not pile up while handshakes keep failing.
      HandshakeFailures failed;
      if (options_.security.enabled) failed = socket_->handshake_failures();
      // The first tries happen before the connection exists: warn only when it persists.
      if (now - unreachable_since_ms_ >= 1000 &&
          now - last_unreachable_log_ms_ >= kUnreachableLogEveryMs) {
        last_unreachable_log_ms_ = now;
        const std::string& key = options_.security.self.name;
        if (failed.auth > 0) {
          KF_LOG_ERROR(
              "the coordinator {} refused worker key {}: ask its operator to add it "
              "(`keyflow keys add-worker {}`) and reload its keys; retrying",
              options_.coordinator, key, key);
        } else if (failed.protocol > 0) {
          KF_LOG_ERROR(
              "the coordinator {} does not accept CURVE connections (started with "
              "--insecure?): start it with --keys DIR, or this worker with --insecure; "
              "retrying",
              options_.coordinator);
        } else {
          KF_LOG_WARN("coordinator {} unreachable for {} ms; retrying (is it running?)",
                      options_.coordinator, now - unreachable_since_ms_);
        }
      }
    }
    next_register_ms_ = now + register_backoff_ms_;
    register_backoff_ms_ = std::min(register_backoff_ms_ * 2, kMaxRegisterBackoffMs);
    return;
  }
  if (now - last_from_coordinator_ms_ > heartbeat_timeout_ms_) {
    KF_LOG_WARN("coordinator silent for {} ms: cancelling the subtask and registering again",
                now - last_from_coordinator_ms_);
    DropExecutor();
    registered_ = false;
    register_backoff_ms_ = 100;
    next_register_ms_ = now;
    unreachable_since_ms_ = now;
    return;
  }
  if (now >= next_heartbeat_ms_) {
    SendHeartbeat();
    next_heartbeat_ms_ = now + heartbeat_interval_ms_;
  }
}

void WorkerProcess::SendHeartbeat() {
  WorkerHeartbeat hb;
  hb.worker = worker_id_;
  hb.attempt = executor_ ? executor_->attempt() : AttemptNumber(0);
  if (executor_) hb.metrics = executor_->Metrics();
  hb.metrics.refused_data_connections = refused_data_connections();
  // RSS, CPU and fds for status and /metrics; without /proc the zeros say "unknown".
  if (auto usage = ReadProcessUsage(); usage.ok()) hb.usage = *usage;
  Send(hb);
}

void WorkerProcess::Handle(const ControlMessage& msg, int64_t now) {
  last_from_coordinator_ms_ = now;
  if (!std::holds_alternative<CoordinatorHeartbeat>(msg)) {
    KF_LOG_DEBUG("control message type={}", ControlMessageName(msg));
  }
  std::visit(
      [&](const auto& m) {
        using T = std::decay_t<decltype(m)>;
        if constexpr (std::is_same_v<T, Registered>) {
          if (!m.refused.empty()) {
            if (refused_since_ms_ == 0) {
              refused_since_ms_ = now;
              KF_LOG_WARN("{} (retrying for a few seconds in case that worker has just died)",
                          m.refused);
            }
            if (now - refused_since_ms_ > std::max(kRefusedGiveUpMs, 2 * m.heartbeat_timeout_ms)) {
              fatal_ = FailedPrecondition(m.refused);
            }
            next_register_ms_ = now + kRefusedRetryMs;
            return;
          }
          refused_since_ms_ = 0;
          options_.previous_exit.clear();  // reported once
          options_.previous_pid = 0;
          registered_ = true;
          worker_id_ = m.worker;
          slot_ = m.slot;
          heartbeat_interval_ms_ = m.heartbeat_interval_ms;
          heartbeat_timeout_ms_ = m.heartbeat_timeout_ms;
          unreachable_since_ms_ = 0;
          register_backoff_ms_ = 100;
          next_heartbeat_ms_ = now;
          KF_LOG_INFO("registered worker={} slot={}", m.worker.value(), m.slot);
        } else if constexpr (std::is_same_v<T, RegisterAgain>) {
          DropExecutor();
          registered_ = false;
          next_register_ms_ = now;
        } else if constexpr (std::is_same_v<T, DeployTask>) {
          OnDeploy(m);
        } else if constexpr (std::is_same_v<T, StartTask>) {
          if (!executor_ || executor_->attempt() != m.attempt) return;
          Status s = executor_->Start(m);
          if (!s.ok()) {
            KF_LOG_ERROR("start failed attempt={} reason={}", m.attempt.value(), s.message());
            Send(TaskFailed{worker_id_, m.attempt, executor_->subtask(), s.message()});
            DropExecutor();
          } else {
            KF_LOG_INFO("subtask started attempt={} subtask={}", m.attempt.value(),
                        executor_->subtask().value());
          }
        } else if constexpr (std::is_same_v<T, JobLibraryBlob>) {
          OnJobLibraryBlob(m);
        } else if constexpr (std::is_same_v<T, CancelTask>) {
          if (awaiting_library_ && awaiting_library_->attempt <= m.attempt) {
            awaiting_library_.reset();
          }
          if (executor_ && executor_->attempt() <= m.attempt) {
            KF_LOG_INFO("cancelling subtask attempt={} reason={}", m.attempt.value(), m.reason);
            SendHeartbeat();  // what the attempt did since the last heartbeat counts too
            DropExecutor();
          }
        } else if constexpr (std::is_same_v<T, TriggerCheckpoint>) {
          if (executor_ && executor_->attempt() == m.attempt) {
            executor_->TriggerCheckpoint(m);
          } else if (ended_attempt_ == m.attempt) {
            Send(DeclineCheckpoint{worker_id_, m.attempt, ended_subtask_, m.checkpoint,
                                   "subtask " + std::to_string(ended_subtask_.value()) +
                                       " of this attempt already ended on this worker"});
          } else {
            Send(DeclineCheckpoint{worker_id_, m.attempt, SubtaskIndex(-1), m.checkpoint,
                                   "no subtask of this attempt runs on this worker"});
          }
        } else if constexpr (std::is_same_v<T, AddSplits>) {
          if (executor_ && executor_->attempt() == m.attempt && executor_->subtask() == m.subtask) {
            executor_->AddSplits(m);
          }
        } else if constexpr (std::is_same_v<T, NotifyCheckpointComplete>) {
          if (executor_ && executor_->attempt() == m.attempt) {
            executor_->NotifyCheckpointComplete(m.checkpoint);
          }
        } else if constexpr (std::is_same_v<T, NotifyCheckpointAborted>) {
          if (executor_ && executor_->attempt() == m.attempt) {
            executor_->NotifyCheckpointAborted(m.checkpoint, m.reason);
          }
        } else if constexpr (std::is_same_v<T, SetLogLevel>) {
          if (Status s = ChangeLogLevel(m.level, "set by the coordinator"); !s.ok()) {
            KF_LOG_WARN("the coordinator sent a log level this worker does not know: {}",
                        s.message());
          }
        } else if constexpr (std::is_same_v<T, CoordinatorHeartbeat>) {
          // Liveness only (recorded above). A coordinator that moved on to another attempt
          // will send CancelTask or DeployTask.
        } else {
          KF_LOG_WARN_RATE_LIMITED(ControlMessageErrors(),
                                   "unexpected " + std::string(ControlMessageName(msg)),
                                   "unexpected control message type={}", ControlMessageName(msg));
        }
      },
      msg);
}

void WorkerProcess::OnDeploy(const DeployTask& d) {
  DropExecutor();
  const JobLibraryRef& ref = d.spec.job_library;
  if (!ref.is_default()) {
    auto cached = job_libraries_->Find(ref);
    if (!cached.ok()) return FailDeploy(d, cached.status());
    if (!*cached) {
      KF_LOG_INFO("job library {} sha256={} is not cached in {}: fetching it from the coordinator",
                  ref.file_name, ref.sha256, job_libraries_->dir());
      awaiting_library_ = d;
      Send(FetchJobLibrary{worker_id_, d.attempt, ref.sha256});
      return;  // the coordinator's deploy timeout covers an answer that never comes
    }
    KF_LOG_INFO("job library {} sha256={} found in the cache: {}", ref.file_name, ref.sha256,
                **cached);
  }
  Deploy(d);
}

void WorkerProcess::OnJobLibraryBlob(const JobLibraryBlob& blob) {
  if (!awaiting_library_ || awaiting_library_->attempt != blob.attempt ||
      awaiting_library_->spec.job_library.sha256 != blob.sha256) {
    return;  // an answer for a deployment that was cancelled or replaced meanwhile
  }
  DeployTask d = std::move(*awaiting_library_);
  awaiting_library_.reset();
  const JobLibraryRef& ref = d.spec.job_library;
  if (!blob.error.empty()) {
    // The coordinator cannot produce it: no restart on any worker can help.
    return FailDeploy(d, DataLoss("cannot get job library " + ref.file_name +
                                  " from the coordinator: " + blob.error));
  }
  auto stored = job_libraries_->Store(ref, blob.bytes);
  if (!stored.ok()) return FailDeploy(d, stored.status());
  KF_LOG_INFO("job library {} sha256={} fetched ({} bytes) and cached: {}", ref.file_name,
              ref.sha256, blob.bytes.size(), *stored);
  Deploy(d);
}

void WorkerProcess::FailDeploy(const DeployTask& d, const Status& why) {
  KF_LOG_ERROR("deploy failed attempt={} subtask={} reason={}", d.attempt.value(),
               d.subtask.value(), why.message());
  Send(TaskFailed{worker_id_, d.attempt, d.subtask, why.message(), CheckpointId(0),
                  why.code() == StatusCode::kDataLoss});
}

void WorkerProcess::Deploy(const DeployTask& d) {
  AttemptNumber attempt = d.attempt;
  TaskMailbox* mailbox = mailbox_.get();
  TaskExecutorHooks hooks;
  hooks.run_on_control_thread = [mailbox](std::function<void()> fn) {
    // A closed mailbox means the worker is shutting down; nothing is waiting for the result.
    mailbox->Put(std::move(fn), "from a task thread").IgnoreError();
  };
  hooks.send = [this](const ControlMessage& m) { Send(m); };
  hooks.done = [this, attempt](const Status& s, CheckpointId corrupted) {
    OnTaskDone(attempt, s, corrupted);
  };
  if (data_authorizer_) {
    // Before the input gate binds: every sender's key is known before any sender connects.
    Status keys = data_authorizer_->SetDeployment(d.subtask, d.peer_public_keys);
    if (!keys.ok()) return FailDeploy(d, keys);
  }
  auto executor = TaskExecutor::Deploy(d, worker_id_, zmq_, options_.data, clock_, hooks);
  if (!executor.ok()) return FailDeploy(d, executor.status());
  executor_ = std::move(executor).value();
  TaskDeployed reply;
  reply.worker = worker_id_;
  reply.attempt = d.attempt;
  reply.subtask = d.subtask;
  reply.input_endpoints = executor_->input_endpoints();
  Send(reply);
  std::string inputs;
  for (const std::string& e : reply.input_endpoints) inputs += (inputs.empty() ? "" : ",") + e;
  KF_LOG_INFO(
      "subtask deployed job={} attempt={} subtask={} key_groups={}-{} restore={} data_plane={} "
      "input_endpoints={}",
      d.job_id, d.attempt.value(), d.subtask.value(), d.key_groups.start(), d.key_groups.end(),
      d.restore ? d.restore->checkpoint.value() : 0, data_authorizer_ ? "curve" : "plain", inputs);
}

void WorkerProcess::OnTaskDone(AttemptNumber attempt, const Status& s, CheckpointId corrupted) {
  if (!executor_ || executor_->attempt() != attempt) return;
  SubtaskIndex subtask = executor_->subtask();
  SubtaskMetrics metrics = executor_->Metrics();
  ended_attempt_ = attempt;
  ended_subtask_ = subtask;
  if (s.ok()) {
    Send(TaskFinished{worker_id_, attempt, subtask, metrics});
  } else {
    KF_LOG_ERROR("subtask failed attempt={} subtask={} reason={}", attempt.value(), subtask.value(),
                 s.message());
    // The input is gone (DataLoss) or the checkpoint cannot be read by this build: a restart
    // cannot help.
    Send(TaskFailed{worker_id_, attempt, subtask, s.message(), corrupted,
                    s.code() == StatusCode::kDataLoss || executor_->restore_unreadable(), metrics});
  }
  DropExecutor();
}

}  // namespace keyflow
