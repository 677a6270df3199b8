// Builders shared by the checkpoint tests: valid metadata and acknowledgements for any (M, P).
#pragma once

#include <string>

#include "checkpoint/checkpoint_metadata.h"
#include "checkpoint/checkpoint_storage.h"
#include "common/key_group_assignment.h"

namespace keyflow::ckpt_test {

// Block length of key group g in the synthetic snapshot files: distinct per key group.
inline uint64_t TestBlockLength(int32_t g) {
  return 10 + 3 * static_cast<uint64_t>(g);
}

// A handle for `range` whose blocks follow a 16-byte header, with keys = g + 1 and
// timers = 2 * g per key group g.
inline KeyGroupsStateHandle TestHandle(const std::string& path, const KeyGroupRange& range) {
  KeyGroupsStateHandle h;
  h.path = path;
  h.range = range;
  uint64_t offset = 16;
  for (KeyGroupId g : range.key_groups()) {
    h.offsets.push_back(offset);
    h.lengths.push_back(TestBlockLength(g.value()));
    h.keys.push_back(static_cast<uint64_t>(g.value()) + 1);
    h.timers.push_back(2 * static_cast<uint64_t>(g.value()));
    offset += TestBlockLength(g.value());
  }
  h.size = offset + 32;  // index and footer
  h.checksum = 0x1000u + static_cast<uint64_t>(range.start());
  return h;
}

// A key-group-incremental handle for `range`: key group g's block is 1 byte at offset 0 of
// files[index of g in range % files.size()]; keys and timers as TestHandle. Precondition: files
// non-empty, each at least 1 byte.
inline KeyGroupsStateHandle TestIncrementalHandle(const KeyGroupRange& range,
                                                  std::vector<SharedStateFile> files) {
  KeyGroupsStateHandle h = TestHandle("", range);
  h.path.clear();
  for (size_t k = 0; k < h.offsets.size(); ++k) {
    h.offsets[k] = 0;
    h.lengths[k] = 1;
    h.block_file.push_back(static_cast<uint32_t>(k % files.size()));
  }
  h.size = files.back().size;
  h.checksum = files.back().checksum;
  h.shared_files = std::move(files);
  return h;
}

// A native RocksDB handle for `range` with the given SST files and one private MANIFEST of 64
// bytes at "subtask-<i>-db/MANIFEST-000001".
inline IncrementalKeyedStateHandle TestNativeHandle(int32_t subtask, const KeyGroupRange& range,
                                                    std::vector<SharedStateFile> ssts) {
  IncrementalKeyedStateHandle n;
  n.backend = "rocksdb";
  n.backend_id = "backend-" + std::to_string(subtask);
  n.range = range;
  n.shared_files = std::move(ssts);
  n.private_files = {{"subtask-" + std::to_string(subtask) + "-db/MANIFEST-000001", 64, 0x64}};
  n.total_keys = 10;
  return n;
}

inline JobSpec TestSpec(int32_t max_parallelism, int32_t parallelism) {
  JobSpec spec;
  spec.job_name = "count-window";
  spec.params = {{"count", "500"}, {"timeout", "12h"}};
  spec.input = "gen:events=1000,keys=10,splits=4,seed=7";
  spec.output_dir = "/data/out";
  spec.parallelism = parallelism;
  spec.max_parallelism = max_parallelism;
  spec.checkpoint_interval_ms = 1000;
  return spec;
}

// Valid metadata of checkpoint `id` for (M, P), one state file per subtask.
inline CheckpointMetadata TestMetadata(int32_t max_parallelism, int32_t parallelism,
                                       int64_t id = 1) {
  CheckpointMetadata m;
  m.job_id = "count-window-1";
  m.id = CheckpointId(id);
  m.timestamp_ms = 1'700'000'000'000;
  m.completed_ms = 1'700'000'000'250;
  m.attempt = AttemptNumber(1);
  m.spec = TestSpec(max_parallelism, parallelism);
  auto ranges = CreateKeyGroupPartitions(max_parallelism, parallelism);
  for (int32_t i = 0; i < parallelism; ++i) {
    m.subtasks.push_back(SubtaskCheckpointState{
        SubtaskIndex(i), TestHandle(CheckpointStorage::SubtaskStateFileName(SubtaskIndex(i)),
                                    ranges[static_cast<size_t>(i)])});
  }
  m.split_positions = {{"split-0", "120"}, {"split-1", "7"}};
  m.sink_committables = {"pending-0-1", "pending-1-1"};
  return m;
}

}  // namespace keyflow::ckpt_test
