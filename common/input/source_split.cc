#include "common/input/source_split.h"

#include <utility>

#include "common/check.h"

namespace keyflow {
namespace {

constexpr uint8_t kFinishedFlag = 1;  // SourceSplitState flags

constexpr uint8_t kSplitFormatVersion = 1;

}  // namespace

std::string_view SplitKindName(SplitKind kind) {
  switch (kind) {
    case SplitKind::kFile:
      return "file";
    case SplitKind::kGenerator:
      return "generator";
    case SplitKind::kKafka:
      return "kafka";
    case SplitKind::kConnector:
      return "connector";
  }
  return "?";
}

SourceSplit SourceSplit::File(SplitId id, std::string path) {
  SourceSplit s;
  s.id_ = id;
  s.kind_ = SplitKind::kFile;
  s.path_ = std::move(path);
  return s;
}

SourceSplit SourceSplit::Generator(SplitId id, int32_t generator_index) {
  KF_CHECK_GE(generator_index, 0);
  SourceSplit s;
  s.id_ = id;
  s.kind_ = SplitKind::kGenerator;
  s.generator_index_ = generator_index;
  return s;
}

SourceSplit SourceSplit::KafkaPartition(SplitId id, std::string topic, int32_t partition,
                                        int64_t stop_offset) {
  KF_CHECK(!topic.empty());
  KF_CHECK_GE(partition, 0);
  KF_CHECK_GE(stop_offset, kNoStopOffset);
  SourceSplit s;
  s.id_ = id;
  s.kind_ = SplitKind::kKafka;
  s.path_ = std::move(topic);
  s.generator_index_ = partition;
  s.stop_offset_ = stop_offset;
  return s;
}

SourceSplit SourceSplit::Connector(SplitId id, std::string split) {
  KF_CHECK(!split.empty());
  SourceSplit s;
  s.id_ = id;
  s.kind_ = SplitKind::kConnector;
  s.path_ = std::move(split);
  return s;
}

const std::string& SourceSplit::connector_split() const {
  KF_CHECK(kind_ == SplitKind::kConnector)
      << "connector_split() of a " << SplitKindName(kind_) << " split";
  return path_;
}

const std::string& SourceSplit::topic() const {
  KF_CHECK(kind_ == SplitKind::kKafka) << "topic() of a " << SplitKindName(kind_) << " split";
  return path_;
}

int32_t SourceSplit::partition() const {
  KF_CHECK(kind_ == SplitKind::kKafka) << "partition() of a " << SplitKindName(kind_) << " split";
  return generator_index_;
}

int64_t SourceSplit::stop_offset() const {
  KF_CHECK(kind_ == SplitKind::kKafka) << "stop_offset() of a " << SplitKindName(kind_) << " split";
  return stop_offset_;
}

const std::string& SourceSplit::path() const {
  KF_CHECK(kind_ == SplitKind::kFile) << "path() of a " << SplitKindName(kind_) << " split";
  return path_;
}

int32_t SourceSplit::generator_index() const {
  KF_CHECK(kind_ == SplitKind::kGenerator)
      << "generator_index() of a " << SplitKindName(kind_) << " split";
  return generator_index_;
}

std::string SourceSplit::ToString() const {
  std::string s(SplitKindName(kind_));
  s += " split ";
  s += std::to_string(id_.value());
  if (kind_ == SplitKind::kFile || kind_ == SplitKind::kConnector) {
    s += " (";
    s += path_;
    s += ")";
  } else if (kind_ == SplitKind::kKafka) {
    s += " (" + path_ + "-" + std::to_string(generator_index_) + ")";
  }
  return s;
}

void SourceSplit::EncodeTo(BinaryWriter* out) const {
  out->U8(kSplitFormatVersion);
  out->U8(static_cast<uint8_t>(kind_));
  out->I32(id_.value());
  if (kind_ == SplitKind::kFile || kind_ == SplitKind::kConnector) {
    out->Bytes(path_);
  } else if (kind_ == SplitKind::kGenerator) {
    out->I32(generator_index_);
  } else {
    out->Bytes(path_);
    out->I32(generator_index_);
    out->I64(stop_offset_);
  }
}

Result<SourceSplit> SourceSplit::DecodeFrom(BinaryReader* in) {
  uint8_t version = in->U8();
  uint8_t kind = in->U8();
  SplitId id(in->I32());
  KF_RETURN_IF_ERROR(in->status("source split"));
  if (version != kSplitFormatVersion) {
    return Corruption("source split has format version " + std::to_string(version) +
                      ", this build reads version " + std::to_string(kSplitFormatVersion));
  }
  if (id.value() < 0) {
    return Corruption("source split has a negative id " + std::to_string(id.value()));
  }
  if (kind == static_cast<uint8_t>(SplitKind::kFile)) {
    std::string path(in->Bytes());
    KF_RETURN_IF_ERROR(in->status("source split"));
    return File(id, std::move(path));
  }
  if (kind == static_cast<uint8_t>(SplitKind::kGenerator)) {
    int32_t index = in->I32();
    KF_RETURN_IF_ERROR(in->status("source split"));
    if (index < 0) {
      return Corruption("generator split has a negative index " + std::to_string(index));
    }
    return Generator(id, index);
  }
  if (kind == static_cast<uint8_t>(SplitKind::kKafka)) {
    std::string topic(in->Bytes());
    int32_t partition = in->I32();
    int64_t stop = in->I64();
    KF_RETURN_IF_ERROR(in->status("source split"));
    if (topic.empty() || partition < 0 || stop < kNoStopOffset) {
      return Corruption("kafka split " + std::to_string(id.value()) + " is invalid (topic '" +
                        topic + "', partition " + std::to_string(partition) + ", stop offset " +
                        std::to_string(stop) + ")");
    }
    return KafkaPartition(id, std::move(topic), partition, stop);
  }
  if (kind == static_cast<uint8_t>(SplitKind::kConnector)) {
    std::string split(in->Bytes());
    KF_RETURN_IF_ERROR(in->status("source split"));
    if (split.empty()) {
      return Corruption("connector split " + std::to_string(id.value()) + " is empty");
    }
    return Connector(id, std::move(split));
  }
  return Corruption("source split has unknown kind " + std::to_string(kind));
}

SplitPosition SplitPosition::InFile(int64_t byte_offset, int64_t next_line_number) {
  KF_CHECK_GE(byte_offset, 0);
  KF_CHECK_GE(next_line_number, 1);
  SplitPosition p;
  p.offset_ = byte_offset;
  p.lines_ = next_line_number - 1;
  return p;
}

SplitPosition SplitPosition::InGenerator(int64_t next_index) {
  KF_CHECK_GE(next_index, 0);
  SplitPosition p;
  p.offset_ = next_index;
  return p;
}

SplitPosition SplitPosition::InKafka(int64_t next_offset) {
  KF_CHECK_GE(next_offset, 0);
  SplitPosition p;
  p.offset_ = next_offset;
  return p;
}

SplitPosition SplitPosition::InConnector(int64_t records, std::string position) {
  KF_CHECK_GE(records, 0);
  SplitPosition p;
  p.offset_ = records;
  p.connector_ = std::move(position);
  return p;
}

std::string SplitPosition::ToString() const {
  return "offset " + std::to_string(offset_) + ", line " + std::to_string(lines_ + 1);
}

void SplitPosition::EncodeTo(BinaryWriter* out) const {
  out->VarU64(static_cast<uint64_t>(offset_));
  out->VarU64(static_cast<uint64_t>(lines_));
}

Result<SplitPosition> SplitPosition::DecodeFrom(BinaryReader* in) {
  uint64_t offset = in->VarU64();
  uint64_t lines = in->VarU64();
  KF_RETURN_IF_ERROR(in->status("split position"));
  constexpr uint64_t kMax = static_cast<uint64_t>(INT64_MAX);
  if (offset > kMax || lines > kMax - 1) {
    return Corruption("split position is out of range (offset " + std::to_string(offset) +
                      ", lines " + std::to_string(lines) + ")");
  }
  SplitPosition p;
  p.offset_ = static_cast<int64_t>(offset);
  p.lines_ = static_cast<int64_t>(lines);
  return p;
}

void SourceSplitState::EncodeTo(BinaryWriter* out) const {
  if (finished) {
    out->U8(kFlagsMarker);
    out->U8(kFinishedFlag);
  }
  split.EncodeTo(out);
  position.EncodeTo(out);
  if (split.kind() == SplitKind::kConnector) out->Bytes(position.connector_position());
}

Result<SourceSplitState> SourceSplitState::DecodeFrom(BinaryReader* in) {
  bool finished = false;
  BinaryReader peek = *in;
  if (peek.U8() == kFlagsMarker) {
    in->U8();
    const uint8_t flags = in->U8();
    KF_RETURN_IF_ERROR(in->status("split state"));
    if ((flags & ~kFinishedFlag) != 0) {
      return Corruption("split state has unknown flags " + std::to_string(flags));
    }
    finished = (flags & kFinishedFlag) != 0;
  }
  KF_ASSIGN_OR_RETURN(SourceSplit split, SourceSplit::DecodeFrom(in));
  KF_ASSIGN_OR_RETURN(SplitPosition position, SplitPosition::DecodeFrom(in));
  if (split.kind() == SplitKind::kConnector) {
    std::string opaque(in->Bytes());
    KF_RETURN_IF_ERROR(in->status("connector split position"));
    position = SplitPosition::InConnector(position.next_event_index(), std::move(opaque));
  }
  return SourceSplitState{std::move(split), std::move(position), finished};
}

}  // namespace keyflow
