#include "state/timers/internal_timer_service.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "common/key_group_assignment.h"

namespace keyflow {

namespace {

// Byte layout of one key group's timers: README.md, "Serialized format".
constexpr uint8_t kTimerFormatVersion = 1;
// i64 timestamp + at least a 1-byte key length + i64 namespace.
constexpr size_t kMinSerializedTimerBytes = 8 + 1 + 8;

constexpr size_t kMaxVarintBytes = 10;

// Unsigned LEB128 (BinaryWriter::VarU64) into p; returns the end.
char* PutVarint(char* p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = static_cast<char>((v & 0x7F) | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<char>(v);
  return p;
}

// Writes the `n` timers that for_each(fn) calls fn(const TimerEntry&) with: a queue of one key
// group, or a copy of one (KeyGroupCopy).
template <typename ForEachTimer>
void WriteDomain(size_t n, ForEachTimer&& for_each, BinaryWriter& out) {
  // Sorted (timestamp, pointer) pairs: the queue itself is not touched (it may be read
  // concurrently), and most comparisons are decided by the timestamp without following the
  // pointer.
  struct Item {
    int64_t timestamp;
    const TimerEntry* timer;
  };
  std::vector<Item> sorted;
  sorted.reserve(n);
  size_t key_bytes = 0;
  for_each([&](const TimerEntry& timer) {
    sorted.push_back({timer.timestamp.millis(), &timer});
    key_bytes += timer.key.size();
  });
  std::sort(sorted.begin(), sorted.end(), [](const Item& a, const Item& b) {
    if (a.timestamp != b.timestamp) return a.timestamp < b.timestamp;
    return TimerLess(*a.timer, *b.timer);
  });
  out.VarU64(sorted.size());
  // The timers are written in place (what BinaryWriter's I64, KeyBytes, I64 would append, one
  // bounds check for all instead of four appends per timer).
  std::string& buffer = *out.buffer();
  const size_t start = buffer.size();
  buffer.resize(start + sorted.size() * (8 + kMaxVarintBytes + 8) + key_bytes);
  char* p = buffer.data() + start;
  for (const Item& item : sorted) {
    const Key& key = item.timer->key;
    const int64_t ns = item.timer->ns.value();
    std::memcpy(p, &item.timestamp, 8);
    p = PutVarint(p + 8, key.size());
    std::memcpy(p, key.data(), key.size());
    p += key.size();
    std::memcpy(p, &ns, 8);
    p += 8;
  }
  buffer.resize(static_cast<size_t>(p - buffer.data()));
}

void WriteDomain(const TimerPriorityQueueSet& queue, BinaryWriter& out) {
  WriteDomain(
      queue.size(), [&](auto&& fn) { queue.ForEach(fn); }, out);
}

void WriteDomain(const std::vector<TimerEntry>& timers, BinaryWriter& out) {
  WriteDomain(
      timers.size(),
      [&](auto&& fn) {
        for (const TimerEntry& t : timers) fn(t);
      },
      out);
}

// CopyKeyGroup's result: both domains' timers of one key group, unsorted.
class TimersKeyGroupCopy final : public KeyGroupCopy {
 public:
  TimersKeyGroupCopy(const TimerPriorityQueueSet& event, const TimerPriorityQueueSet& processing) {
    Copy(event, &event_);
    Copy(processing, &processing_);
  }
  void Write(BinaryWriter& out) const override {
    out.U8(kTimerFormatVersion);
    WriteDomain(event_, out);
    WriteDomain(processing_, out);
  }
  uint64_t Count() const override { return event_.size() + processing_.size(); }

 private:
  static void Copy(const TimerPriorityQueueSet& queue, std::vector<TimerEntry>* out) {
    out->reserve(queue.size());
    queue.ForEach([&](const TimerEntry& t) { out->push_back(t); });
  }
  std::vector<TimerEntry> event_;
  std::vector<TimerEntry> processing_;
};

// OK iff `key` is a well-formed key of the context's key type that maps to `key_group`.
Status ValidateRestoredKey(const Key& key, const KeyContext& key_context, KeyGroupId key_group) {
  const KeyType type = key_context.key_type();
  if (type != KeyType::kString && key.size() != 8) {
    return Corruption("a timer key of type " + std::string(KeyTypeName(type)) + " has " +
                      std::to_string(key.size()) + " bytes instead of 8");
  }
  if (type == KeyType::kInt && (key.AsInt64() < INT32_MIN || key.AsInt64() > INT32_MAX)) {
    return Corruption("a timer key of type int holds " + std::to_string(key.AsInt64()) +
                      ", which does not fit in 32 bits");
  }
  int32_t hash;
  if (!JavaHashCode(key, type, &hash)) [[unlikely]] {  // invalid UTF-8: say where
    return Corruption(
        AssignToKeyGroup(key, type, key_context.max_parallelism()).status().message());
  }
  const KeyGroupId assigned = ComputeKeyGroupForKeyHash(hash, key_context.max_parallelism());
  if (assigned != key_group) {
    return Corruption("a timer key belongs to key group " + std::to_string(assigned.value()) +
                      ", not to the key group being restored");
  }
  return Status::Ok();
}

Status ReadDomain(BinaryReader& in, const KeyContext& key_context, KeyGroupId key_group,
                  std::vector<TimerEntry>* timers) {
  const uint64_t n = in.Count(kMinSerializedTimerBytes);
  KF_RETURN_IF_ERROR(in.status("timer count"));
  timers->reserve(n);
  for (uint64_t i = 0; i < n; ++i) {
    const Timestamp timestamp(in.I64());
    const std::string_view key_bytes = in.Bytes();
    const Namespace ns(in.I64());
    if (!in.ok()) [[unlikely]] {  // (the message is built only when needed: this loop is hot)
      return in.status("timer " + std::to_string(i) + " of " + std::to_string(n));
    }
    Key key = Key::FromBytes(key_bytes);
    KF_RETURN_IF_ERROR_CTX(ValidateRestoredKey(key, key_context, key_group),
                           "timer " + std::to_string(i) + " of " + std::to_string(n));
    timers->push_back(TimerEntry{timestamp, std::move(key), ns});
  }
  return Status::Ok();
}

}  // namespace

InternalTimerService::InternalTimerService(KeyContext& key_context,
                                           ProcessingTimeService& processing_time_service,
                                           Triggerable& target)
    : key_context_(key_context),
      processing_time_service_(processing_time_service),
      target_(target),
      processing_timers_(key_context.range()),
      event_timers_(key_context.range()) {}

InternalTimerService::~InternalTimerService() {
  if (has_physical_timer_) processing_time_service_.Cancel(physical_timer_id_);
}

TimerEntry InternalTimerService::CurrentKeyTimer(Namespace ns, Timestamp time) const {
  KF_CHECK(key_context_.has_current_key())
      << "timers belong to the current key: register or delete them only while a key is set "
         "(in processElement or a timer callback)";
  return TimerEntry{time, key_context_.current_key(), ns};
}

void InternalTimerService::RegisterProcessingTimeTimer(Namespace ns, Timestamp time) {
  const TimerEntry* old_head = processing_timers_.Peek();
  const bool had_head = old_head != nullptr;
  const Timestamp old_head_time = had_head ? old_head->timestamp : Timestamp();
  // Add() is true iff the timer was inserted and is now the head; Flink re-schedules only if,
  // in addition, it is strictly earlier than the old head (a tie keeps the physical timer).
  const bool is_new_head =
      processing_timers_.Add(key_context_.current_key_group(), CurrentKeyTimer(ns, time));
  if (is_new_head && (!had_head || time < old_head_time)) SchedulePhysicalTimer(time);
}

void InternalTimerService::RegisterEventTimeTimer(Namespace ns, Timestamp time) {
  event_timers_.Add(key_context_.current_key_group(), CurrentKeyTimer(ns, time));
}

void InternalTimerService::DeleteProcessingTimeTimer(Namespace ns, Timestamp time) {
  // Never re-schedules: an early wake-up finds nothing due and re-arms for the head.
  processing_timers_.Remove(key_context_.current_key_group(), CurrentKeyTimer(ns, time));
}

void InternalTimerService::DeleteEventTimeTimer(Namespace ns, Timestamp time) {
  event_timers_.Remove(key_context_.current_key_group(), CurrentKeyTimer(ns, time));
}

void InternalTimerService::AdvanceWatermark(Timestamp watermark) {
  KF_CHECK(!advancing_watermark_) << "AdvanceWatermark must not be called from a timer callback";
  KF_CHECK_GE(watermark, current_watermark_) << "watermarks never go back";
  current_watermark_ = watermark;  // first, so callbacks see the new watermark
  advancing_watermark_ = true;
  for (const TimerEntry* head = event_timers_.Peek();
       head != nullptr && head->timestamp <= watermark; head = event_timers_.Peek()) {
    KeyGroupId key_group;
    const TimerEntry timer = event_timers_.Poll(&key_group);
    SetKeyContextTo(timer, key_group);
    target_.OnEventTime(timer);
  }
  advancing_watermark_ = false;
}

void InternalTimerService::OnProcessingTime(Timestamp time) {
  // Cleared first: a callback that registers an earlier timer installs a new physical timer.
  has_physical_timer_ = false;
  for (const TimerEntry* head = processing_timers_.Peek();
       head != nullptr && head->timestamp <= time; head = processing_timers_.Peek()) {
    KeyGroupId key_group;
    const TimerEntry timer = processing_timers_.Poll(&key_group);
    SetKeyContextTo(timer, key_group);
    target_.OnProcessingTime(timer);
  }
  const TimerEntry* head = processing_timers_.Peek();
  if (head != nullptr && !has_physical_timer_) SchedulePhysicalTimer(head->timestamp);
}

void InternalTimerService::StartTimerService() {
  started_ = true;
  ArmForProcessingHead();
}

void InternalTimerService::ArmForProcessingHead() {
  const TimerEntry* head = processing_timers_.Peek();
  if (head == nullptr) return;
  if (has_physical_timer_ && physical_timer_time_ <= head->timestamp) return;
  SchedulePhysicalTimer(head->timestamp);
}

void InternalTimerService::SchedulePhysicalTimer(Timestamp time) {
  if (has_physical_timer_) processing_time_service_.Cancel(physical_timer_id_);
  physical_timer_id_ =
      processing_time_service_.Schedule(time, [this](Timestamp t) { OnProcessingTime(t); });
  physical_timer_time_ = time;
  has_physical_timer_ = true;
}

void InternalTimerService::SetKeyContextTo(const TimerEntry& timer, KeyGroupId key_group) {
  const Status status = key_context_.SetCurrentKey(timer.key, key_group);
  KF_CHECK(status.ok()) << "a timer's key must be settable: " << status.ToString();
}

void InternalTimerService::SerializeKeyGroup(KeyGroupId key_group, BinaryWriter& out) const {
  out.U8(kTimerFormatVersion);
  WriteDomain(event_timers_.KeyGroupQueue(key_group), out);
  WriteDomain(processing_timers_.KeyGroupQueue(key_group), out);
}

std::unique_ptr<KeyGroupCopy> InternalTimerService::CopyKeyGroup(KeyGroupId key_group) const {
  return std::make_unique<TimersKeyGroupCopy>(event_timers_.KeyGroupQueue(key_group),
                                              processing_timers_.KeyGroupQueue(key_group));
}

Status InternalTimerService::RestoreKeyGroup(KeyGroupId key_group, BinaryReader& in) {
  const KeyGroupRange& range = key_context_.range();
  if (!range.contains(key_group)) {
    return OutOfRange("Key Group " + std::to_string(key_group.value()) +
                      " does not belong to the local range " + range.ToString() +
                      "; restore only the key groups of this subtask's range");
  }
  const std::string what = "timers of key group " + std::to_string(key_group.value());
  const uint8_t version = in.U8();
  KF_RETURN_IF_ERROR(in.status(what));
  if (version != kTimerFormatVersion) {
    return Corruption(what + ": unknown format version " + std::to_string(version) +
                      " (this build reads version " + std::to_string(kTimerFormatVersion) + ")");
  }
  std::vector<TimerEntry> event_timers;
  std::vector<TimerEntry> processing_timers;
  KF_RETURN_IF_ERROR_CTX(ReadDomain(in, key_context_, key_group, &event_timers),
                         what + ", event time");
  KF_RETURN_IF_ERROR_CTX(ReadDomain(in, key_context_, key_group, &processing_timers),
                         what + ", processing time");
  event_timers_.AddAll(key_group, std::move(event_timers));
  processing_timers_.AddAll(key_group, std::move(processing_timers));
  if (started_) ArmForProcessingHead();
  return Status::Ok();
}

}  // namespace keyflow
