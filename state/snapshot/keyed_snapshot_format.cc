#include "state/snapshot/keyed_snapshot_format.h"

#include <algorithm>
#include <cstring>

#include "common/check.h"
#include "common/file_io.h"
#include "common/format_version.h"
#include "common/hashing.h"

namespace keyflow {
namespace {

Status Broken(const std::string& name, const std::string& what) {
  return Corruption("snapshot " + name + " is corrupted or truncated: " + what);
}

}  // namespace

namespace {

// write_section(i, out) writes the data of sections[i].
void WriteBlock(KeyGroupId g, const std::vector<const SnapshotSection*>& sections,
                const std::function<void(size_t, BinaryWriter&)>& write_section, std::string* out) {
  size_t start = out->size();
  BinaryWriter w(out);
  w.I32(g.value());
  w.VarU64(sections.size());
  std::string scratch;
  for (size_t i = 0; i < sections.size(); ++i) {
    scratch.clear();
    BinaryWriter sw(&scratch);
    write_section(i, sw);
    w.U8(sections[i]->id);
    w.Bytes(scratch);
  }
  w.U64(Checksum64(out->data() + start, out->size() - start));
}

}  // namespace

void SerializeKeyGroupBlock(KeyGroupId g, const std::vector<const SnapshotSection*>& sections,
                            std::string* out) {
  WriteBlock(
      g, sections, [&](size_t i, BinaryWriter& w) { sections[i]->write(g, w); }, out);
}

void SerializeKeyGroupBlock(KeyGroupId g, const std::vector<const SnapshotSection*>& sections,
                            const std::vector<std::unique_ptr<KeyGroupCopy>>& copies,
                            std::string* out) {
  KF_CHECK(copies.size() == sections.size()) << copies.size() << " copies of " << sections.size();
  WriteBlock(
      g, sections, [&](size_t i, BinaryWriter& w) { copies[i]->Write(w); }, out);
}

KeyedSnapshotWriter::KeyedSnapshotWriter(int32_t max_parallelism, KeyType key_type,
                                         KeyGroupRange range,
                                         const std::vector<const SnapshotSection*>& sections,
                                         Sink sink)
    : sink_(std::move(sink)), file_checksum_(std::make_unique<StreamingChecksum>()) {
  info_.max_parallelism = max_parallelism;
  info_.key_type = key_type;
  info_.range = range;
  for (const SnapshotSection* s : sections) {
    info_.section_ids.push_back(s->id);
    info_.section_names.push_back(s->name);
  }
  next_ = range.start();
}

Status KeyedSnapshotWriter::Emit(std::string_view bytes) {
  position_ += bytes.size();
  file_checksum_->Update(bytes.data(), bytes.size());
  return sink_(bytes);
}

Status KeyedSnapshotWriter::Begin() {
  std::string h;
  BinaryWriter w(&h);
  w.Raw(kKeyedSnapshotMagic, 8);
  w.U32(info_.format_version);
  w.I32(info_.max_parallelism);
  w.U8(static_cast<uint8_t>(info_.key_type));
  w.I32(info_.range.start());
  w.I32(info_.range.end());
  w.VarU64(info_.section_ids.size());
  for (size_t i = 0; i < info_.section_ids.size(); ++i) {
    w.U8(info_.section_ids[i]);
    w.Bytes(info_.section_names[i]);
  }
  w.U64(Checksum64(h));
  return Emit(h);
}

Status KeyedSnapshotWriter::AppendKeyGroup(KeyGroupId g, std::string_view block,
                                           std::vector<uint64_t> counts) {
  KF_CHECK(g.value() >= next_ && g.value() <= info_.range.end())
      << "key group " << g.value() << " appended out of order or outside "
      << info_.range.ToString();
  KF_CHECK_EQ(counts.size(), info_.section_ids.size());
  info_.key_groups.push_back(KeyGroupEntry{g, position_, block.size(), std::move(counts)});
  next_ = g.value() + 1;
  return Emit(block);
}

Result<KeyedSnapshotInfo> KeyedSnapshotWriter::Finish() {
  uint64_t index_offset = position_;
  std::string idx;
  BinaryWriter w(&idx);
  w.VarU64(info_.key_groups.size());
  for (const KeyGroupEntry& e : info_.key_groups) {
    w.I32(e.key_group.value());
    w.U64(e.offset);
    w.U64(e.length);
    for (uint64_t c : e.counts) w.VarU64(c);
  }
  info_.index_checksum = Checksum64(idx);
  w.U64(info_.index_checksum);
  KF_RETURN_IF_ERROR(Emit(idx));
  std::string footer;
  BinaryWriter f(&footer);
  f.U64(index_offset);
  f.U64(idx.size());
  f.U64(Checksum64(footer));
  f.Raw(kKeyedSnapshotFooterMagic, 8);
  KF_RETURN_IF_ERROR(Emit(footer));
  info_.file_size = position_;
  info_.file_checksum = file_checksum_->Digest();
  return info_;
}

Result<KeyedSnapshotInfo> WriteKeyedSnapshot(int32_t max_parallelism, KeyType key_type,
                                             KeyGroupRange range,
                                             const std::vector<const SnapshotSection*>& sections,
                                             std::string* out) {
  KeyedSnapshotWriter writer(max_parallelism, key_type, range, sections, [out](std::string_view b) {
    out->append(b);
    return Status::Ok();
  });
  KF_RETURN_IF_ERROR(writer.Begin());
  std::string block;
  for (KeyGroupId g : range.key_groups()) {
    block.clear();
    SerializeKeyGroupBlock(g, sections, &block);
    std::vector<uint64_t> counts;
    counts.reserve(sections.size());
    for (const SnapshotSection* s : sections) counts.push_back(s->count(g));
    KF_RETURN_IF_ERROR(writer.AppendKeyGroup(g, block, std::move(counts)));
  }
  return writer.Finish();
}

Result<KeyedSnapshotReader> KeyedSnapshotReader::Open(const RandomAccessSource& source) {
  const std::string& name = source.name();
  uint64_t size = source.size();
  if (size < kKeyedSnapshotFooterSize) {
    return Broken(name, "it has " + std::to_string(size) + " bytes, less than a footer");
  }
  std::string footer;
  KF_RETURN_IF_ERROR(
      source.ReadAt(size - kKeyedSnapshotFooterSize, kKeyedSnapshotFooterSize, &footer));
  if (std::memcmp(footer.data() + 24, kKeyedSnapshotFooterMagic, 8) != 0) {
    return Broken(name, "no footer at the end (the file was truncated or is not a snapshot)");
  }
  BinaryReader fr(footer);
  uint64_t index_offset = fr.U64();
  uint64_t index_length = fr.U64();
  uint64_t footer_sum = fr.U64();
  if (footer_sum != Checksum64(footer.data(), 16)) return Broken(name, "footer checksum mismatch");
  if (index_offset > size - kKeyedSnapshotFooterSize ||
      index_length != size - kKeyedSnapshotFooterSize - index_offset) {
    return Broken(name, "index position does not match the file size");
  }

  // Header: read a generous prefix (headers are small), parse, verify.
  std::string head;
  KF_RETURN_IF_ERROR(
      source.ReadAt(0, static_cast<size_t>(std::min<uint64_t>(index_offset, 4096)), &head));
  if (head.size() < 8 || std::memcmp(head.data(), kKeyedSnapshotMagic, 8) != 0) {
    return Broken(name, "bad magic: this is not a keyflow keyed-state snapshot");
  }
  BinaryReader hr(std::string_view(head).substr(8));
  KeyedSnapshotInfo info;
  // The header's layout is the same in every version (state/README.md): the checksum is
  // verified before the version is believed, so a flipped version byte is Corruption.
  info.format_version = hr.U32();
  info.max_parallelism = hr.I32();
  uint8_t kt = hr.U8();
  int32_t start = hr.I32();
  int32_t end = hr.I32();
  uint64_t nsections = hr.Count(2);
  for (uint64_t i = 0; i < nsections && hr.ok(); ++i) {
    info.section_ids.push_back(hr.U8());
    info.section_names.emplace_back(hr.Bytes());
  }
  size_t header_len = 8 + (head.size() - 8 - hr.remaining());
  uint64_t header_sum = hr.U64();
  if (!hr.ok()) return Broken(name, "header is truncated");
  if (header_sum != Checksum64(head.data(), header_len)) {
    return Broken(name, "header checksum mismatch");
  }
  if (info.format_version < kOldestKeyedSnapshotFormatVersion ||
      info.format_version > kKeyedSnapshotFormatVersion) {
    return UnreadableFormatVersion("snapshot " + name, info.format_version,
                                   kOldestKeyedSnapshotFormatVersion, kKeyedSnapshotFormatVersion);
  }
  if (kt > static_cast<uint8_t>(KeyType::kLong) || info.max_parallelism <= 0 || start < 0 ||
      end < start || end >= info.max_parallelism) {
    return Broken(name, "header values out of range");
  }
  info.key_type = static_cast<KeyType>(kt);
  info.range = KeyGroupRange::Of(start, end);

  std::string idx;
  KF_RETURN_IF_ERROR(source.ReadAt(index_offset, index_length, &idx));
  if (idx.size() < 8) return Broken(name, "index is truncated");
  uint64_t idx_sum;
  std::memcpy(&idx_sum, idx.data() + idx.size() - 8, 8);
  if (idx_sum != Checksum64(idx.data(), idx.size() - 8)) {
    return Broken(name, "index checksum mismatch");
  }
  info.index_checksum = idx_sum;
  BinaryReader ir(std::string_view(idx.data(), idx.size() - 8));
  uint64_t prev_end = 8 + header_len;  // blocks follow the header contiguously
  // Versions 1 and 2 hold every key group of the range, in order; version 3 says which.
  const bool sparse = info.format_version >= 3;
  const uint64_t entries = sparse ? ir.Count(20) : static_cast<uint64_t>(info.range.size());
  if (entries > static_cast<uint64_t>(info.range.size())) {
    return Broken(name, "index has more entries than the range has key groups");
  }
  int32_t next = info.range.start();
  for (uint64_t n = 0; n < entries && ir.ok(); ++n) {
    KeyGroupEntry e;
    e.key_group = KeyGroupId(sparse ? ir.I32() : next);
    if (!ir.ok()) return Broken(name, "index is truncated");
    if (e.key_group.value() < next || e.key_group.value() > info.range.end()) {
      return Broken(name, "index entry of key group " + std::to_string(e.key_group.value()) +
                              " is out of order or outside " + info.range.ToString());
    }
    next = e.key_group.value() + 1;
    const KeyGroupId g = e.key_group;
    e.offset = ir.U64();
    e.length = ir.U64();
    for (uint64_t i = 0; i < nsections; ++i) e.counts.push_back(ir.VarU64());
    if (!ir.ok()) return Broken(name, "index is truncated");
    if (e.offset != prev_end || e.length > index_offset - e.offset) {
      return Broken(name, "index entry of key group " + std::to_string(g.value()) +
                              " points outside the data");
    }
    prev_end = e.offset + e.length;
    info.key_groups.push_back(std::move(e));
  }
  if (!ir.ok()) return Broken(name, "index is truncated");
  if (!ir.at_end() || prev_end != index_offset)
    return Broken(name, "index does not cover the data");
  info.file_size = size;
  return KeyedSnapshotReader(&source, std::move(info));
}

Status KeyedSnapshotReader::ReadKeyGroupBlock(KeyGroupId g, std::string* block) const {
  const std::string& name = source_->name();
  if (!info_.range.contains(g)) {
    return OutOfRange("snapshot " + name + " holds " + info_.range.ToString() + ", not key group " +
                      std::to_string(g.value()));
  }
  const KeyGroupEntry* found = info_.find(g);
  if (found == nullptr) {
    return NotFound("snapshot " + name + " holds no block of key group " +
                    std::to_string(g.value()) +
                    " (an incremental snapshot's file holds only the "
                    "key groups that changed)");
  }
  const KeyGroupEntry& e = *found;
  KF_RETURN_IF_ERROR(source_->ReadAt(e.offset, e.length, block));
  bytes_read_ += e.length;
  if (block->size() < 12)
    return Broken(name, "block of key group " + std::to_string(g.value()) + " is too short");
  uint64_t sum;
  std::memcpy(&sum, block->data() + block->size() - 8, 8);
  if (sum != Checksum64(block->data(), block->size() - 8)) {
    return Broken(name, "checksum mismatch in key group " + std::to_string(g.value()));
  }
  int32_t stored;
  std::memcpy(&stored, block->data(), 4);
  if (stored != g.value()) {
    return Broken(name, "unexpected key group in restore: block says " + std::to_string(stored) +
                            ", index says " + std::to_string(g.value()));
  }
  block->resize(block->size() - 8);
  return Status::Ok();
}

Status KeyedSnapshotReader::CheckSections(
    const std::vector<const SnapshotSection*>& sections) const {
  for (uint8_t id : info_.section_ids) {
    bool claimed = false;
    for (const SnapshotSection* s : sections) claimed |= (s->id == id);
    if (!claimed) {
      return FailedPrecondition("snapshot " + source_->name() + " contains a section (id " +
                                std::to_string(id) + ") that this job does not restore");
    }
  }
  return Status::Ok();
}

Status KeyedSnapshotReader::Restore(KeyGroupRange target,
                                    const std::vector<const SnapshotSection*>& sections) {
  KF_CHECK(info_.full()) << "a sparse snapshot is restored key group by key group";
  KF_RETURN_IF_ERROR(CheckSections(sections));
  std::string block;
  for (KeyGroupId g : info_.range.Intersection(target).key_groups()) {
    KF_RETURN_IF_ERROR(RestoreBlock(g, sections, &block));
  }
  return Status::Ok();
}

Status KeyedSnapshotReader::RestoreKeyGroup(KeyGroupId g,
                                            const std::vector<const SnapshotSection*>& sections) {
  KF_RETURN_IF_ERROR(CheckSections(sections));
  std::string block;
  return RestoreBlock(g, sections, &block);
}

Status KeyedSnapshotReader::RestoreBlock(KeyGroupId g,
                                         const std::vector<const SnapshotSection*>& sections,
                                         std::string* scratch) {
  const std::string& name = source_->name();
  std::string& block = *scratch;
  KF_RETURN_IF_ERROR(ReadKeyGroupBlock(g, &block));
  BinaryReader r(std::string_view(block).substr(4));
  uint64_t n = r.Count(2);
  for (uint64_t i = 0; i < n && r.ok(); ++i) {
    uint8_t id = r.U8();
    std::string_view bytes = r.Bytes();
    if (!r.ok()) break;
    const SnapshotSection* section = nullptr;
    for (const SnapshotSection* s : sections) {
      if (s->id == id) section = s;
    }
    if (section == nullptr) return Broken(name, "unknown section id " + std::to_string(id));
    BinaryReader sr(bytes);
    Status st = section->restore(g, sr);
    if (!st.ok()) {
      return st.WithContext("restoring " + section->name + " of key group " +
                            std::to_string(g.value()) + " from " + name);
    }
    // Bytes the participant did not read would be state silently dropped (e.g. a field a
    // newer writer added): refuse them.
    if (!sr.at_end()) {
      return Broken(name, std::to_string(sr.remaining()) + " bytes of the " + section->name +
                              " of key group " + std::to_string(g.value()) +
                              " were not read by its restore");
    }
  }
  if (!r.ok() || !r.at_end()) {
    return Broken(name, "block of key group " + std::to_string(g.value()) + " is malformed");
  }
  return Status::Ok();
}

const KeyGroupEntry* KeyedSnapshotInfo::find(KeyGroupId g) const {
  auto it = std::lower_bound(
      key_groups.begin(), key_groups.end(), g,
      [](const KeyGroupEntry& e, KeyGroupId id) { return e.key_group.value() < id.value(); });
  return it != key_groups.end() && it->key_group == g ? &*it : nullptr;
}

const KeyGroupEntry& KeyedSnapshotInfo::entry(KeyGroupId g) const {
  const KeyGroupEntry* e = find(g);
  KF_CHECK(e != nullptr) << "the snapshot holds no block of key group " << g.value();
  return *e;
}

}  // namespace keyflow
