#include "worker/shuffle/record_batch_builder.h"

#include <cstring>
#include <limits>

#include "common/binary_io.h"
#include "common/record_fields.h"

namespace keyflow {
namespace {

constexpr size_t kCountOffset = kFrameHeaderSize;
constexpr size_t kRecordsOffset = kFrameHeaderSize + sizeof(uint32_t);
constexpr size_t kInitialCapacity = 64 * 1024;

}  // namespace

RecordBatchBuilder::RecordBatchBuilder() {
  buffer_.reserve(kInitialCapacity);
  Clear();
}

void RecordBatchBuilder::Clear() {
  buffer_.assign(kRecordsOffset, '\0');
  count_ = 0;
}

void RecordBatchBuilder::Append(const Record& record) {
  Append(record.key.bytes(), record.key_group, record.timestamp, record.payload, record.fields);
}

void RecordBatchBuilder::Append(std::string_view key, KeyGroupId key_group, Timestamp timestamp,
                                std::string_view payload, std::string_view fields) {
  KF_DCHECK(key_group.value() >= 0);
  KF_CHECK_LT(count_, std::numeric_limits<uint32_t>::max());
  BinaryWriter w(&buffer_);
  w.Bytes(key);
  w.VarU64(static_cast<uint32_t>(key_group.value()));
  w.I64(timestamp.millis());
  const bool has_fields = !fields.empty();
  w.VarU64((static_cast<uint64_t>(payload.size()) << 1) | (has_fields ? 1 : 0));
  w.Raw(payload.data(), payload.size());
  if (has_fields) w.Bytes(fields);
  ++count_;
}

void RecordBatchBuilder::FinishInto(SubtaskIndex sender, AttemptNumber attempt, uint64_t sequence,
                                    std::string* frame) {
  std::memcpy(buffer_.data() + kCountOffset, &count_, sizeof(count_));
  SealFrame(FrameHeader{FrameKind::kRecords, sender, attempt, sequence}, &buffer_);
  buffer_.swap(*frame);
  if (buffer_.capacity() < kInitialCapacity) buffer_.reserve(kInitialCapacity);
  Clear();
}

Status DecodeRecordBatch(std::string_view payload, std::string_view channel,
                         std::vector<RecordView>* out) {
  out->clear();
  auto corrupt = [&](const std::string& what) {
    return Corruption(std::string(channel) + ": malformed RECORDS frame: " + what);
  };
  BinaryReader r(payload);
  uint32_t count = r.U32();
  if (!r.ok()) return corrupt("no record count");
  if (count > r.remaining() / kMinEncodedRecordBytes) {
    return corrupt("record count " + std::to_string(count) + " cannot fit in " +
                   std::to_string(r.remaining()) + " bytes");
  }
  out->resize(count);
  for (uint32_t i = 0; i < count; ++i) {
    RecordView& v = (*out)[i];
    v.key = r.Bytes();
    uint64_t key_group = r.VarU64();
    v.timestamp = Timestamp(r.I64());
    const uint64_t payload_tag = r.VarU64();
    v.payload = r.Raw(payload_tag >> 1);
    v.fields = (payload_tag & 1) ? r.Bytes() : std::string_view();
    if (!r.ok()) {
      out->clear();
      return corrupt("record " + std::to_string(i) + " of " + std::to_string(count) +
                     " is truncated");
    }
    if (key_group > static_cast<uint64_t>(std::numeric_limits<int32_t>::max())) {
      out->clear();
      return corrupt("record " + std::to_string(i) + " has key group " + std::to_string(key_group) +
                     ", beyond any max parallelism");
    }
    v.key_group = KeyGroupId(static_cast<int32_t>(key_group));
    if (!v.fields.empty()) {
      if (Status s = ValidateFieldTape(v.fields); !s.ok()) {
        out->clear();
        return corrupt("record " + std::to_string(i) + " of " + std::to_string(count) + ": " +
                       s.message());
      }
    }
  }
  if (!r.at_end()) {
    out->clear();
    return corrupt(std::to_string(r.remaining()) + " bytes after the last record");
  }
  return Status::Ok();
}

}  // namespace keyflow
