#include "coordinator/worker_registry.h"

#include <algorithm>
#include <set>

namespace keyflow {

std::string WorkerInfo::Describe() const {
  return "worker " + std::to_string(id.value()) + " (slot " + std::to_string(slot) + ", host " +
         hostname + ", pid " + std::to_string(pid) + ")";
}

namespace {

std::string SlotHeldRefusal(const WorkerInfo& holder, int64_t now_ms) {
  return "slot " + std::to_string(holder.slot) + " is already held by " + holder.Describe() +
         ", which sent a heartbeat " + std::to_string(now_ms - holder.last_heartbeat_ms) +
         " ms ago: stop that worker first, or start this one with another --slot (or without "
         "--slot to get a free one)";
}

}  // namespace

bool WorkerRegistry::Predecessor(const WorkerInfo& holder, const std::string& peer_address,
                                 const RegisterWorker& msg, int64_t now_ms) const {
  if (now_ms - holder.last_heartbeat_ms > stale_after_ms_) return true;
  bool same_address =
      peer_address.empty() || holder.peer_address.empty() || peer_address == holder.peer_address;
  return msg.previous_pid != 0 && msg.previous_pid == holder.pid &&
         msg.hostname == holder.hostname && same_address;
}

WorkerRegistry::Registration WorkerRegistry::Register(const std::string& identity,
                                                      const std::optional<PeerIdentity>& peer,
                                                      const std::string& peer_address,
                                                      const RegisterWorker& msg, int64_t now_ms) {
  Registration r;
  r.id = WorkerId(0);
  r.slot = msg.slot;
  // The same socket registering again (its registration reply was lost): keep its id.
  for (auto& [id, w] : workers_) {
    if (w.identity == identity && w.peer == peer) {
      w.last_heartbeat_ms = now_ms;
      r.id = id;
      r.slot = w.slot;
      r.again = true;
      return r;
    }
  }
  if (peer) {
    // One slot per worker key: a live worker with this key keeps it, unless this is its respawn.
    for (auto it = workers_.begin(); it != workers_.end(); ++it) {
      const WorkerInfo& holder = it->second;
      if (holder.peer != peer) continue;
      if (!Predecessor(holder, peer_address, msg, now_ms)) {
        // A second process for the same slot (and key) gets the slot's sentence.
        r.refused = holder.slot == msg.slot
                        ? SlotHeldRefusal(holder, now_ms)
                        : "worker key " + peer->name + " is already in use by " +
                              holder.Describe() + ", which sent a heartbeat " +
                              std::to_string(now_ms - holder.last_heartbeat_ms) +
                              " ms ago: each worker needs its own key (`keyflow keys add-worker "
                              "NAME`); stop that worker first or start this one with another "
                              "--key-name";
        return r;
      }
      r.replaced = holder;
      workers_.erase(it);
      break;
    }
  }
  int32_t slot = msg.slot;
  if (slot >= 0) {
    for (auto it = workers_.begin(); it != workers_.end(); ++it) {
      const WorkerInfo& holder = it->second;
      if (holder.slot != slot) continue;
      // On a secure cluster the holder has another worker key (the key's own old worker was
      // handled above): it is never taken over, the newcomer waits for the holder's heartbeat
      // timeout. On an insecure cluster only an evidently gone holder is replaced.
      if (peer || !Predecessor(holder, peer_address, msg, now_ms)) {
        r.refused = SlotHeldRefusal(holder, now_ms);
        return r;
      }
      r.replaced = holder;
      workers_.erase(it);
      break;
    }
  } else {
    std::set<int32_t> used;
    for (const auto& [id, w] : workers_) used.insert(w.slot);
    slot = 0;
    while (used.count(slot)) ++slot;
  }
  WorkerInfo w;
  w.id = WorkerId(next_id_++);
  w.identity = identity;
  w.peer = peer;
  w.peer_address = peer_address;
  w.hostname = msg.hostname;
  w.pid = msg.pid;
  w.data_host = msg.data_host;
  w.public_key = msg.public_key;
  w.slot = slot;
  w.registered_ms = now_ms;
  w.last_heartbeat_ms = now_ms;
  r.id = w.id;
  r.slot = slot;
  workers_.emplace(w.id, std::move(w));
  return r;
}

bool WorkerRegistry::Heartbeat(WorkerId id, AttemptNumber attempt, const SubtaskMetrics& m,
                               int64_t now_ms, const ProcessUsage& usage) {
  auto it = workers_.find(id);
  if (it == workers_.end()) return false;
  WorkerInfo& w = it->second;
  int64_t dt = now_ms - w.last_heartbeat_ms;
  if (dt > 0 && attempt == w.attempt) {
    auto rate = [dt](int64_t now, int64_t before) {
      return static_cast<double>(std::max<int64_t>(0, now - before)) * 1000.0 /
             static_cast<double>(dt);
    };
    constexpr double kAlpha = 0.3;  // smoothing of the rates over heartbeats
    w.records_in_rate =
        kAlpha * rate(m.records_in, w.metrics.records_in) + (1 - kAlpha) * w.records_in_rate;
    w.records_processed_rate = kAlpha * rate(m.records_processed, w.metrics.records_processed) +
                               (1 - kAlpha) * w.records_processed_rate;
  } else if (attempt != w.attempt) {
    w.records_in_rate = w.records_processed_rate = 0;
  }
  if (dt > 0 && w.usage.rss_bytes > 0 && usage.rss_bytes > 0) {
    int64_t cpu_ms =
        (usage.cpu_user_ms + usage.cpu_system_ms) - (w.usage.cpu_user_ms + w.usage.cpu_system_ms);
    w.cpu_percent =
        100.0 * static_cast<double>(std::max<int64_t>(0, cpu_ms)) / static_cast<double>(dt);
  }
  w.usage = usage;
  w.last_heartbeat_ms = now_ms;
  w.attempt = attempt;
  w.metrics = m;
  return true;
}

std::vector<WorkerInfo> WorkerRegistry::RemoveTimedOut(
    int64_t now_ms, const std::function<bool(WorkerId)>& deploying, int64_t deploying_timeout_ms) {
  std::vector<WorkerInfo> lost;
  for (auto it = workers_.begin(); it != workers_.end();) {
    if (now_ms - it->second.last_heartbeat_ms >
        TimeoutFor(it->first, deploying, deploying_timeout_ms)) {
      lost.push_back(std::move(it->second));
      it = workers_.erase(it);
    } else {
      ++it;
    }
  }
  return lost;
}

std::optional<WorkerInfo> WorkerRegistry::Remove(WorkerId id) {
  auto it = workers_.find(id);
  if (it == workers_.end()) return std::nullopt;
  WorkerInfo w = std::move(it->second);
  workers_.erase(it);
  return w;
}

const WorkerInfo* WorkerRegistry::Find(WorkerId id) const {
  auto it = workers_.find(id);
  return it == workers_.end() ? nullptr : &it->second;
}

const WorkerInfo* WorkerRegistry::FindByPeer(const PeerIdentity& peer) const {
  for (const auto& [id, w] : workers_) {
    if (w.peer == peer) return &w;
  }
  return nullptr;
}

const WorkerInfo* WorkerRegistry::FindByIdentity(const std::string& identity) const {
  for (const auto& [id, w] : workers_) {
    if (w.identity == identity) return &w;
  }
  return nullptr;
}

std::vector<const WorkerInfo*> WorkerRegistry::BySlot() const {
  std::vector<const WorkerInfo*> out;
  for (const auto& [id, w] : workers_) out.push_back(&w);
  std::sort(out.begin(), out.end(), [](auto* a, auto* b) { return a->slot < b->slot; });
  return out;
}

}  // namespace keyflow
