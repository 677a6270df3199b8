#include "worker/shuffle/data_plane_authorizer.h"

#include <charconv>

#include "common/logging/logging.h"
#include "common/security/curve_keys.h"
#include "common/security/identity.h"

namespace keyflow {
namespace {

std::optional<int32_t> ParseIndex(std::string_view s) {
  int32_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty() || v < 0) return std::nullopt;
  return v;
}

}  // namespace

std::string DataZapDomain(SubtaskIndex receiver, SubtaskIndex sender) {
  return "data/" + std::to_string(receiver.value()) + "/" + std::to_string(sender.value());
}

std::optional<std::pair<SubtaskIndex, SubtaskIndex>> ParseDataZapDomain(std::string_view domain) {
  constexpr std::string_view kPrefix = "data/";
  if (!domain.starts_with(kPrefix)) return std::nullopt;
  domain.remove_prefix(kPrefix.size());
  size_t slash = domain.find('/');
  if (slash == std::string_view::npos) return std::nullopt;
  auto r = ParseIndex(domain.substr(0, slash));
  auto s = ParseIndex(domain.substr(slash + 1));
  if (!r || !s) return std::nullopt;
  return std::make_pair(SubtaskIndex(*r), SubtaskIndex(*s));
}

Status DataPlaneAuthorizer::SetDeployment(SubtaskIndex receiver,
                                          std::vector<std::string> sender_keys) {
  Clear();
  if (sender_keys.empty()) {
    return InvalidArgument(
        "the deployment names no data-plane public keys although this worker runs with --keys: "
        "run the coordinator with --keys too (or every process with --insecure)");
  }
  for (size_t s = 0; s < sender_keys.size(); ++s) {
    Status valid = ValidateZ85Key(sender_keys[s]);
    if (!valid.ok()) {
      return InvalidArgument("the deployment's public key of the worker running subtask " +
                             std::to_string(s) + " is unusable (" + valid.message() +
                             "): check that worker's key file");
    }
  }
  MutexLock lock(&mu_);
  receiver_ = receiver;
  sender_keys_ = std::move(sender_keys);
  return Status::Ok();
}

void DataPlaneAuthorizer::Clear() {
  MutexLock lock(&mu_);
  receiver_.reset();
  sender_keys_.clear();
}

ZapPolicy DataPlaneAuthorizer::Policy() {
  return [this](const ZapRequest& request) { return Decide(request); };
}

ZapDecision DataPlaneAuthorizer::Decide(const ZapRequest& request) {
  auto channel = ParseDataZapDomain(request.domain);
  if (!channel) return Refuse(request, "not a data channel");
  std::string reason;
  {
    MutexLock lock(&mu_);
    const auto [receiver, sender] = *channel;
    const auto s = static_cast<size_t>(sender.value());
    if (!receiver_ || *receiver_ != receiver || s >= sender_keys_.size()) {
      reason = "no such channel in the current deployment";
    } else if (sender_keys_[s] != request.client_public_key) {
      reason = "the key is not that of the worker running source subtask " +
               std::to_string(sender.value());
    } else {
      return ZapDecision::Admit(
          PeerIdentity{Role::kWorker, "source-" + std::to_string(sender.value())}.ToUserId());
    }
  }
  return Refuse(request, std::move(reason));
}

ZapDecision DataPlaneAuthorizer::Refuse(const ZapRequest& request, std::string reason) {
  refused_.fetch_add(1, std::memory_order_relaxed);
  if (LogDecision log = log_limiter_.ShouldLog(request.address)) {
    KF_LOG_WARN("data connection refused peer={} channel={} key={} reason={} refused_so_far={}{}",
                request.address, request.domain, request.client_public_key, reason, refused(),
                SuppressedNote(log.suppressed));
  }
  return ZapDecision::Refuse(std::move(reason));
}

void DataPlaneAuthorizer::CountRefusedHandshakes(uint64_t n, const std::string& domain,
                                                 const std::string& endpoint) {
  if (n == 0) return;
  refused_.fetch_add(static_cast<int64_t>(n), std::memory_order_relaxed);
  if (LogDecision log = log_limiter_.ShouldLog("handshake/" + domain)) {
    KF_LOG_WARN(
        "data connection refused peer=unknown channel={} port={} reason=no CURVE handshake (a "
        "plain-text client, another security mechanism or not ZeroMQ; libzmq reports no peer "
        "address for it) refused_so_far={}{}",
        domain, endpoint, refused(), SuppressedNote(log.suppressed));
  }
}

}  // namespace keyflow
