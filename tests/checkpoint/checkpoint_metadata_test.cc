#include "checkpoint/checkpoint_metadata.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "checkpoint/checksummed_envelope.h"
#include "common/binary_io.h"
#include "common/file_io.h"
#include "common/hashing.h"
#include "tests/checkpoint/checkpoint_test_util.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow {
namespace {

using ckpt_test::TestMetadata;

std::string GoldenPath(const std::string& name) {
  return std::string(KEYFLOW_SOURCE_DIR) + "/tests/checkpoint/testdata/" + name;
}

const std::string kGoldenPath = GoldenPath("metadata_v1.golden");
// The same metadata with a version-2 JobSpec blob (tolerable_checkpoint_failures appended): must
// still decode.
const std::string kJobSpecV2GoldenPath = GoldenPath("metadata_v1_jobspec_v2.golden");
// The same metadata as the current encoder writes it: format version 1 with a version-3 JobSpec
// blob (fail_on_input_change appended). metadata_v1.golden (JobSpec version 1) and
// metadata_v1_jobspec_v2.golden must still decode.
const std::string kJobSpecV3GoldenPath = GoldenPath("metadata_v1_jobspec_v3.golden");
const std::string kJobSpecV4GoldenPath = GoldenPath("metadata_v1_jobspec_v4.golden");
const std::string kJobSpecV5GoldenPath = GoldenPath("metadata_v1_jobspec_v5.golden");
const std::string kJobSpecV6GoldenPath = GoldenPath("metadata_v1_jobspec_v6.golden");
// Format version 2 (incremental checkpoints) with a version-7 JobSpec: must still decode.
const std::string kV2JobSpecV7GoldenPath = GoldenPath("metadata_v2_jobspec_v7.golden");
// Format version 2 with a version-8 JobSpec (connector_splits appended): must still decode.
const std::string kV2JobSpecV8GoldenPath = GoldenPath("metadata_v2_jobspec_v8.golden");
// Format version 2 with a version-9 JobSpec (a graph job's graph appended): what the encoder
// writes today. Every other golden file must still decode.
const std::string kCurrentGoldenPath = GoldenPath("metadata_v2.golden");

// What metadata_v1_jobspec_v6.golden's spec adds to GoldenMetadata(): the fields of JobSpec
// versions 2-6, the job library by its content hash among them.
void SetCurrentSpecFields(JobSpec* spec) {
  spec->tolerable_checkpoint_failures = 3;
  spec->fail_on_input_change = true;
  spec->job_library = JobLibraryRef{
      "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", "libsessions.so", 4096};
  spec->reads_fields = true;
  spec->fields = {"amount", "note"};
  spec->state_backend = "rocksdb";
  spec->state_dir = "/var/lib/keyflow/state";
  spec->latency_interval_ms = 500;
}

// Expects the lists of files `a` and `b` to agree in length and in each of `fields`.
template <typename File, typename... Fields>
void ExpectFilesEq(const std::vector<File>& a, const std::vector<File>& b, Fields... fields) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ([&] { EXPECT_EQ(a[i].*fields, b[i].*fields) << "file " << i; }(), ...);
  }
}

void ExpectSharedFilesEq(const std::vector<SharedStateFile>& a,
                         const std::vector<SharedStateFile>& b) {
  ExpectFilesEq(a, b, &SharedStateFile::name, &SharedStateFile::size, &SharedStateFile::checksum);
}

void ExpectNativeEq(const std::optional<IncrementalKeyedStateHandle>& a,
                    const std::optional<IncrementalKeyedStateHandle>& b) {
  ASSERT_EQ(a.has_value(), b.has_value());
  if (!a) return;
  EXPECT_EQ(a->backend, b->backend);
  EXPECT_EQ(a->format_version, b->format_version);
  EXPECT_EQ(a->backend_id, b->backend_id);
  EXPECT_EQ(a->range, b->range);
  ExpectSharedFilesEq(a->shared_files, b->shared_files);
  ExpectFilesEq(a->private_files, b->private_files, &PrivateStateFile::path,
                &PrivateStateFile::size, &PrivateStateFile::checksum);
  EXPECT_EQ(a->total_keys, b->total_keys);
}

void ExpectHandleEq(const KeyGroupsStateHandle& a, const KeyGroupsStateHandle& b) {
  ExpectSharedFilesEq(a.shared_files, b.shared_files);
  EXPECT_EQ(a.block_file, b.block_file);
  EXPECT_EQ(a.path, b.path);
  EXPECT_EQ(a.size, b.size);
  EXPECT_EQ(a.checksum, b.checksum);
  EXPECT_EQ(a.range, b.range);
  EXPECT_EQ(a.offsets, b.offsets);
  EXPECT_EQ(a.lengths, b.lengths);
  EXPECT_EQ(a.keys, b.keys);
  EXPECT_EQ(a.timers, b.timers);
}

void ExpectMetadataEq(const CheckpointMetadata& a, const CheckpointMetadata& b) {
  EXPECT_EQ(a.job_id, b.job_id);
  EXPECT_EQ(a.id, b.id);
  EXPECT_EQ(a.timestamp_ms, b.timestamp_ms);
  EXPECT_EQ(a.completed_ms, b.completed_ms);
  EXPECT_EQ(a.savepoint, b.savepoint);
  EXPECT_EQ(a.final, b.final);
  EXPECT_EQ(a.attempt, b.attempt);
  EXPECT_EQ(a.spec.job_name, b.spec.job_name);
  EXPECT_EQ(a.spec.params, b.spec.params);
  EXPECT_EQ(a.spec.input, b.spec.input);
  EXPECT_EQ(a.spec.output_dir, b.spec.output_dir);
  EXPECT_EQ(a.spec.parallelism, b.spec.parallelism);
  EXPECT_EQ(a.spec.max_parallelism, b.spec.max_parallelism);
  EXPECT_EQ(a.spec.key_type, b.spec.key_type);
  EXPECT_EQ(a.spec.checkpoint_interval_ms, b.spec.checkpoint_interval_ms);
  EXPECT_EQ(a.spec.restart_strategy, b.spec.restart_strategy);
  EXPECT_EQ(a.spec.connector_splits, b.spec.connector_splits);
  EXPECT_EQ(a.spec.graph, b.spec.graph);
  ASSERT_EQ(a.subtasks.size(), b.subtasks.size());
  for (size_t i = 0; i < a.subtasks.size(); ++i) {
    EXPECT_EQ(a.subtasks[i].subtask, b.subtasks[i].subtask);
    ExpectHandleEq(a.subtasks[i].keyed_state, b.subtasks[i].keyed_state);
    ExpectNativeEq(a.subtasks[i].native_state, b.subtasks[i].native_state);
    EXPECT_EQ(a.subtasks[i].written_bytes, b.subtasks[i].written_bytes);
  }
  EXPECT_EQ(a.split_positions, b.split_positions);
  EXPECT_EQ(a.sink_committables, b.sink_committables);
}

Result<CheckpointMetadata> DecodeGoldenFile(const std::string& path) {
  auto bytes = ReadFileToString(path);
  if (!bytes.ok()) return bytes.status();
  return CheckpointMetadata::Decode(*bytes, path);
}

// The metadata in tests/checkpoint/testdata/metadata_v1.golden. Never change it: the golden
// file proves that checkpoints written by format version 1 stay readable.
CheckpointMetadata GoldenMetadata() {
  CheckpointMetadata m = TestMetadata(/*max_parallelism=*/8, /*parallelism=*/2, /*id=*/42);
  m.job_id = "count-window-20240501T120000";
  m.savepoint = true;
  m.attempt = AttemptNumber(3);
  m.spec.key_type = KeyType::kLong;
  m.split_positions = {{"gen-0", "1500"}, {"gen-1", "\x01\x02"}};
  m.sink_committables = {"part-0-42.pending", "part-1-42.pending", ""};
  // Version 1 had no written bytes: a full checkpoint wrote its whole file.
  for (SubtaskCheckpointState& s : m.subtasks) s.written_bytes = s.keyed_state.size;
  return m;
}

// The metadata in tests/checkpoint/testdata/metadata_v2.golden (never change it): checkpoint 42
// of a RocksDB job with incremental checkpoints, M = 8, P = 2. Both subtasks' keyed state is
// native; subtask 0's timers are a key-group-incremental handle (key groups 0 and 2 in the file
// of checkpoint 41, 1 and 3 in the new file of checkpoint 42), subtask 1's a full file.
// A graph job's graph: source -> filter -> KeyBy(word) -> count -> sink.
JobGraph GoldenGraph() {
  JobGraph g;
  g.operators = {{0, "source-in", OperatorKind::kSource, "in", 0, {}, 0},
                 {1, "not-the", OperatorKind::kFilter, "", 0, {}, 0},
                 {2, "count", OperatorKind::kKeyedProcess, "", 0, {}, 1},
                 {3, "sink-out", OperatorKind::kSink, "out", 0, {}, 1}};
  g.edges = {{0, 1, 0, Partitioning::kForward, "", KeyType::kString, ""},
             {1, 2, 0, Partitioning::kHash, "word", KeyType::kString, ""},
             {2, 3, 0, Partitioning::kForward, "", KeyType::kString, ""}};
  g.chains = {{{0, 1}, 0}, {{2, 3}, 0}};
  return g;
}

CheckpointMetadata GoldenMetadataV2() {
  CheckpointMetadata m = GoldenMetadata();
  m.savepoint = false;
  SetCurrentSpecFields(&m.spec);
  m.spec.incremental_checkpoints = true;
  m.spec.connector_splits = {"shard-a", "shard-b"};
  m.spec.graph = GoldenGraph();
  KeyGroupsStateHandle& h0 = m.subtasks[0].keyed_state;
  h0.path = "";
  h0.shared_files = {{"b7e1-41-0.kgs", 120, 0xAAAA}, {"b7e1-42-0.kgs", 90, 0xBBBB}};
  h0.block_file = {0, 1, 0, 1};
  h0.offsets = {16, 16, 60, 40};
  h0.lengths = {10, 13, 16, 19};
  h0.size = 90;
  h0.checksum = 0xBBBB;
  m.subtasks[0].written_bytes = 90 + 4096;
  m.subtasks[1].written_bytes = 154;
  for (int i = 0; i < 2; ++i) {
    IncrementalKeyedStateHandle n;
    n.backend = "rocksdb";
    n.format_version = 1;
    n.backend_id = "4f1c0e52-9d7a-4c55-8a61-0d6e2f3b9a1" + std::to_string(i);
    n.range = m.subtasks[static_cast<size_t>(i)].keyed_state.range;
    n.shared_files = {{"sst-" + std::to_string(i) + "-000007.sst", 4096, 0x7007},
                      {"sst-" + std::to_string(i) + "-000009.sst", 2048, 0x9009}};
    n.private_files = {{"subtask-" + std::to_string(i) + "-db/MANIFEST-000011", 310, 0x11},
                       {"subtask-" + std::to_string(i) + "-db/CURRENT", 16, 0x22}};
    n.total_keys = 1000 + static_cast<uint64_t>(i);
    m.subtasks[static_cast<size_t>(i)].native_state = std::move(n);
  }
  return m;
}

TEST(CheckpointMetadata, RoundTripsEveryField) {
  CheckpointMetadata m = TestMetadata(128, 3, 9);
  m.final = true;
  m.spec.key_type = KeyType::kInt;
  m.spec.from_savepoint = "/old/savepoint-3";
  auto decoded = CheckpointMetadata::Decode(m.Encode(), "test");
  ASSERT_OK(decoded);
  ExpectMetadataEq(*decoded, m);
  EXPECT_EQ(decoded->spec.from_savepoint, "/old/savepoint-3");
  EXPECT_EQ(decoded->TypeName(), "final");
}

TEST(CheckpointMetadata, TypeNameAndTotalStateBytes) {
  CheckpointMetadata m = TestMetadata(8, 2);
  EXPECT_EQ(m.TypeName(), "checkpoint");
  m.savepoint = true;
  EXPECT_EQ(m.TypeName(), "savepoint");
  EXPECT_EQ(m.TotalStateBytes(), m.subtasks[0].keyed_state.size + m.subtasks[1].keyed_state.size);
  // Key groups 0-3: 16 + (10+13+16+19) + 32 = 106; 4-7: 16 + (22+25+28+31) + 32 = 154.
  EXPECT_EQ(m.TotalStateBytes(), 106u + 154u);
}

TEST(CheckpointMetadata, StartsWithMagicAndVersionAndEndsWithChecksumOfEverythingBefore) {
  std::string bytes = TestMetadata(8, 2).Encode();
  EXPECT_EQ(bytes.substr(0, 8), "KFCKPT01");
  BinaryReader r(std::string_view(bytes).substr(8));
  EXPECT_EQ(r.U32(), kCheckpointMetadataVersion);
  EXPECT_EQ(r.U64(), bytes.size() - kEnvelopeOverhead);
  BinaryReader tail(std::string_view(bytes).substr(bytes.size() - 8));
  EXPECT_EQ(tail.U64(), Checksum64(std::string_view(bytes).substr(0, bytes.size() - 8)));
}

TEST(CheckpointMetadataGolden, Version1FileStillDecodesToTheExactValues) {
  auto decoded = DecodeGoldenFile(kGoldenPath);
  ASSERT_OK(decoded);
  const CheckpointMetadata& m = *decoded;
  // Spelled out (not only compared with GoldenMetadata()) so that a change of the builders
  // cannot silently change what is asserted.
  EXPECT_EQ(m.job_id, "count-window-20240501T120000");
  EXPECT_EQ(m.id, CheckpointId(42));
  EXPECT_EQ(m.timestamp_ms, 1'700'000'000'000);
  EXPECT_EQ(m.completed_ms, 1'700'000'000'250);
  EXPECT_TRUE(m.savepoint);
  EXPECT_FALSE(m.final);
  EXPECT_EQ(m.attempt, AttemptNumber(3));
  EXPECT_EQ(m.spec.job_name, "count-window");
  EXPECT_EQ(m.spec.key_type, KeyType::kLong);
  EXPECT_EQ(m.max_parallelism(), 8);
  EXPECT_EQ(m.parallelism(), 2);
  ASSERT_EQ(m.subtasks.size(), 2u);
  const KeyGroupsStateHandle& h1 = m.subtasks[1].keyed_state;
  EXPECT_EQ(h1.path, "subtask-1.kgs");
  EXPECT_EQ(h1.range, KeyGroupRange::Of(4, 7));
  EXPECT_EQ(h1.offsets, (std::vector<uint64_t>{16, 38, 63, 91}));
  EXPECT_EQ(h1.lengths, (std::vector<uint64_t>{22, 25, 28, 31}));
  EXPECT_EQ(h1.keys, (std::vector<uint64_t>{5, 6, 7, 8}));
  EXPECT_EQ(h1.timers, (std::vector<uint64_t>{8, 10, 12, 14}));
  EXPECT_EQ(h1.size, 154u);
  EXPECT_EQ(h1.checksum, 0x1004u);
  EXPECT_EQ(m.split_positions.at("gen-1"), "\x01\x02");
  EXPECT_EQ(m.sink_committables.size(), 3u);
  EXPECT_EQ(m.spec.tolerable_checkpoint_failures, kDefaultTolerableCheckpointFailures)
      << "a field the old spec does not have gets its default";
  ExpectMetadataEq(m, GoldenMetadata());
}

TEST(CheckpointMetadataGolden, JobSpecVersion2FileDecodesWithTheNewFieldAtItsDefault) {
  auto decoded = DecodeGoldenFile(kJobSpecV2GoldenPath);
  ASSERT_OK(decoded);
  EXPECT_EQ(decoded->spec.tolerable_checkpoint_failures, 3);
  EXPECT_FALSE(decoded->spec.fail_on_input_change);
  ExpectMetadataEq(*decoded, GoldenMetadata());
}

TEST(CheckpointMetadataGolden, JobSpecVersion3FileDecodesWithTheDefaultJobLibrary) {
  auto decoded = DecodeGoldenFile(kJobSpecV3GoldenPath);
  ASSERT_OK(decoded);
  EXPECT_EQ(decoded->spec.tolerable_checkpoint_failures, 3);
  EXPECT_TRUE(decoded->spec.fail_on_input_change);
  EXPECT_TRUE(decoded->spec.job_library.is_default()) << "an older checkpoint: the built-in jobs";
  EXPECT_FALSE(decoded->spec.reads_fields);
  ExpectMetadataEq(*decoded, GoldenMetadata());
}

TEST(CheckpointMetadataGolden, JobSpecVersion4FileDecodesWithoutAProjection) {
  auto decoded = DecodeGoldenFile(kJobSpecV4GoldenPath);
  ASSERT_OK(decoded);
  EXPECT_TRUE(decoded->spec.reads_fields);
  EXPECT_EQ(decoded->spec.job_library.file_name, "libsessions.so");
  EXPECT_TRUE(decoded->spec.fields.empty()) << "an older checkpoint: every field";
  ExpectMetadataEq(*decoded, GoldenMetadata());
}

TEST(CheckpointMetadataGolden, JobSpecVersion5FileDecodesWithTheHeapBackendAndDefaultMarkers) {
  auto decoded = DecodeGoldenFile(kJobSpecV5GoldenPath);
  ASSERT_OK(decoded);
  EXPECT_EQ(decoded->spec.fields, (std::vector<std::string>{"amount", "note"}));
  EXPECT_EQ(decoded->spec.state_backend, "heap") << "an older checkpoint: the heap backend";
  EXPECT_EQ(decoded->spec.state_dir, "");
  EXPECT_EQ(decoded->spec.latency_interval_ms, 200);
  ExpectMetadataEq(*decoded, GoldenMetadata());
}

TEST(CheckpointMetadataGolden, JobSpecVersion6FileDecodesAsFullCheckpointsWithoutIncremental) {
  auto decoded = DecodeGoldenFile(kJobSpecV6GoldenPath);
  ASSERT_OK(decoded);
  EXPECT_EQ(decoded->spec.tolerable_checkpoint_failures, 3);
  EXPECT_TRUE(decoded->spec.fail_on_input_change);
  EXPECT_EQ(decoded->spec.job_library.sha256,
            "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08");
  EXPECT_EQ(decoded->spec.job_library.file_name, "libsessions.so");
  EXPECT_EQ(decoded->spec.job_library.size_bytes, 4096u);
  EXPECT_TRUE(decoded->spec.reads_fields);
  EXPECT_EQ(decoded->spec.fields, (std::vector<std::string>{"amount", "note"}));
  EXPECT_EQ(decoded->spec.state_backend, "rocksdb");
  EXPECT_EQ(decoded->spec.state_dir, "/var/lib/keyflow/state");
  EXPECT_EQ(decoded->spec.latency_interval_ms, 500);
  EXPECT_FALSE(decoded->spec.incremental_checkpoints) << "JobSpec version 6: full checkpoints";
  EXPECT_EQ(decoded->subtasks[1].written_bytes, 154u) << "format version 1: the full file";
  EXPECT_FALSE(decoded->subtasks[1].native_state.has_value());
  EXPECT_TRUE(decoded->SharedFiles().empty());
  ExpectMetadataEq(*decoded, GoldenMetadata());
}

TEST(CheckpointMetadataGolden, Version2FileDecodesToTheExactValues) {
  auto decoded = DecodeGoldenFile(kCurrentGoldenPath);
  ASSERT_OK(decoded);
  const CheckpointMetadata& m = *decoded;
  EXPECT_FALSE(m.savepoint);
  EXPECT_TRUE(m.spec.incremental_checkpoints);
  const KeyGroupsStateHandle& h0 = m.subtasks[0].keyed_state;
  EXPECT_EQ(h0.path, "");
  ASSERT_EQ(h0.shared_files.size(), 2u);
  EXPECT_EQ(h0.shared_files[0].name, "b7e1-41-0.kgs");
  EXPECT_EQ(h0.shared_files[0].size, 120u);
  EXPECT_EQ(h0.shared_files[0].checksum, 0xAAAAu);
  EXPECT_EQ(h0.shared_files[1].name, "b7e1-42-0.kgs");
  EXPECT_EQ(h0.block_file, (std::vector<uint32_t>{0, 1, 0, 1}));
  EXPECT_EQ(h0.offsets, (std::vector<uint64_t>{16, 16, 60, 40}));
  EXPECT_EQ(m.subtasks[0].written_bytes, 4186u);
  EXPECT_EQ(m.subtasks[1].written_bytes, 154u);
  EXPECT_EQ(m.subtasks[1].keyed_state.path, "subtask-1.kgs");
  const IncrementalKeyedStateHandle& n1 = m.subtasks[1].native_state.value();
  EXPECT_EQ(n1.backend, "rocksdb");
  EXPECT_EQ(n1.format_version, 1u);
  EXPECT_EQ(n1.backend_id, "4f1c0e52-9d7a-4c55-8a61-0d6e2f3b9a11");
  EXPECT_EQ(n1.range, KeyGroupRange::Of(4, 7));
  ASSERT_EQ(n1.shared_files.size(), 2u);
  EXPECT_EQ(n1.shared_files[1].name, "sst-1-000009.sst");
  EXPECT_EQ(n1.shared_files[1].size, 2048u);
  ASSERT_EQ(n1.private_files.size(), 2u);
  EXPECT_EQ(n1.private_files[0].path, "subtask-1-db/MANIFEST-000011");
  EXPECT_EQ(n1.private_files[0].size, 310u);
  EXPECT_EQ(n1.total_keys, 1001u);
  // Subtask 0: shared 120 + 90 + 4096 + 2048, private 310 + 16; subtask 1: file 154 + the same.
  EXPECT_EQ(m.TotalStateBytes(), (120u + 90 + 4096 + 2048 + 326) + (154u + 4096 + 2048 + 326));
  EXPECT_EQ(m.TotalWrittenBytes(), 4186u + 154u);
  EXPECT_EQ(m.SharedFiles().size(), 6u);
  ExpectMetadataEq(m, GoldenMetadataV2());
}

// A version-7 JobSpec (before connector_splits) decodes with none.
TEST(CheckpointMetadataGolden, Version2FileWithAVersion7JobSpecStillDecodes) {
  auto decoded = DecodeGoldenFile(kV2JobSpecV7GoldenPath);
  ASSERT_OK(decoded);
  EXPECT_TRUE(decoded->spec.connector_splits.empty());
  EXPECT_TRUE(decoded->spec.incremental_checkpoints);
  CheckpointMetadata expected = GoldenMetadataV2();
  expected.spec.connector_splits.clear();
  expected.spec.graph = JobGraph();
  ExpectMetadataEq(*decoded, expected);
}

// A version-8 JobSpec (before graphs) decodes as a single-function job.
TEST(CheckpointMetadataGolden, Version2FileWithAVersion8JobSpecStillDecodes) {
  auto decoded = DecodeGoldenFile(kV2JobSpecV8GoldenPath);
  ASSERT_OK(decoded);
  EXPECT_FALSE(decoded->spec.is_graph_job());
  CheckpointMetadata expected = GoldenMetadataV2();
  expected.spec.graph = JobGraph();
  ExpectMetadataEq(*decoded, expected);
}

TEST(CheckpointMetadataGolden, EncoderStillWritesTheCurrentBytes) {
  auto bytes = ReadFileToString(kCurrentGoldenPath);
  ASSERT_OK(bytes);
  // When this fails after an intended format change: bump kCheckpointMetadataVersion, keep a
  // decoder for version 1 and keep metadata_v1.golden; add metadata_v2.golden. After a new
  // JobSpec field: keep the old golden files decoding and add one for the new spec version.
  EXPECT_EQ(GoldenMetadataV2().Encode(), *bytes);
}

// Regenerates the golden file (only when the format version changes, see README):
//   checkpoint_tests --gtest_also_run_disabled_tests
//       --gtest_filter=CheckpointMetadataGolden.DISABLED_WriteGoldenFile
TEST(CheckpointMetadataGolden, DISABLED_WriteGoldenFile) {
  ASSERT_OK(WriteFileAtomically(kCurrentGoldenPath, GoldenMetadataV2().Encode()));
}

TEST(CheckpointMetadata, EveryTruncationIsCorruption) {
  const std::string bytes = GoldenMetadataV2().Encode();
  for (size_t n = 0; n < bytes.size(); ++n) {
    auto decoded = CheckpointMetadata::Decode(std::string_view(bytes).substr(0, n), "cut");
    ASSERT_FALSE(decoded.ok()) << "length " << n;
    EXPECT_EQ(decoded.status().code(), StatusCode::kCorruption)
        << "length " << n << ": " << decoded.status().ToString();
  }
}

TEST(CheckpointMetadata, EveryFlippedByteIsCorruption) {
  const std::string bytes = GoldenMetadataV2().Encode();
  for (size_t i = 0; i < bytes.size(); ++i) {
    for (uint8_t mask : {uint8_t{0x01}, uint8_t{0x80}, uint8_t{0xFF}}) {
      std::string bad = bytes;
      bad[i] = static_cast<char>(bad[i] ^ mask);
      auto decoded = CheckpointMetadata::Decode(bad, "flipped");
      ASSERT_FALSE(decoded.ok()) << "byte " << i << " mask " << int{mask};
      EXPECT_EQ(decoded.status().code(), StatusCode::kCorruption)
          << "byte " << i << ": " << decoded.status().ToString();
    }
  }
}

TEST(CheckpointMetadata, TrailingBytesAreCorruption) {
  std::string bytes = GoldenMetadata().Encode() + "x";
  auto decoded = CheckpointMetadata::Decode(bytes, "/x/_metadata");
  ASSERT_FALSE(decoded.ok());
  EXPECT_EQ(decoded.status().code(), StatusCode::kCorruption);
  EXPECT_NE(decoded.status().message().find("/x/_metadata"), std::string::npos);
}

TEST(CheckpointMetadata, IntactFileOfAnotherVersionIsFailedPrecondition) {
  std::string body = "whatever version 7 holds";
  auto decoded = CheckpointMetadata::Decode(
      EncodeChecksummedEnvelope(kCheckpointMetadataMagic, 7, body), "/x/_metadata");
  EXPECT_EQ(decoded.status(),
            FailedPrecondition("checkpoint metadata /x/_metadata was written in format version 7, "
                               "which this keyflow cannot read (it reads format versions 1 and "
                               "2); restore it with a keyflow that reads format version 7, or "
                               "from an earlier checkpoint or savepoint"));
}

// The checksum covers the version field and is checked first: a flipped version byte is
// Corruption, whichever version it then claims.
TEST(CheckpointMetadata, AFlippedVersionByteIsCorruptionNotAVersionSkew) {
  const std::string bytes = GoldenMetadata().Encode();
  for (size_t at = 8; at < 12; ++at) {
    for (int bit = 0; bit < 8; ++bit) {
      std::string flipped = bytes;
      flipped[at] = static_cast<char>(flipped[at] ^ (1 << bit));
      auto decoded = CheckpointMetadata::Decode(flipped, "/x/_metadata");
      ASSERT_FALSE(decoded.ok());
      EXPECT_EQ(decoded.status().code(), StatusCode::kCorruption) << at << " " << bit;
      EXPECT_THAT(decoded.status().message(), ::testing::HasSubstr("checksum mismatch"));
    }
  }
}

TEST(CheckpointMetadata, WrongMagicIsCorruption) {
  auto decoded = CheckpointMetadata::Decode(
      EncodeChecksummedEnvelope("KFJOBR01", kCheckpointMetadataVersion, ""), "/x/_metadata");
  ASSERT_FALSE(decoded.ok());
  EXPECT_EQ(decoded.status().code(), StatusCode::kCorruption);
  EXPECT_NE(decoded.status().message().find("bad magic"), std::string::npos);
}

// Bodies with a valid checksum but malformed content (what a buggy writer could produce):
// Corruption, no crash, no allocation beyond the input.
std::string BodyPrefix(const CheckpointMetadata& m, uint8_t flags = 0) {
  std::string body;
  BinaryWriter w(&body);
  w.Bytes(m.job_id);
  w.I64(m.id.value());
  w.I64(m.timestamp_ms);
  w.I64(m.completed_ms);
  w.U8(flags);
  w.I64(m.attempt.value());
  w.Bytes(EncodeJobSpecBlob(m.spec));
  return body;
}

Status DecodeBody(const std::string& body) {
  return CheckpointMetadata::Decode(
             EncodeChecksummedEnvelope(kCheckpointMetadataMagic, kCheckpointMetadataVersion, body),
             "crafted")
      .status();
}

TEST(CheckpointMetadata, HugeCountsInAVerifiedBodyAreCorruptionWithoutAllocating) {
  CheckpointMetadata m = TestMetadata(8, 2);
  std::string body = BodyPrefix(m);
  BinaryWriter w(&body);
  w.VarU64(uint64_t{1} << 60);  // subtasks
  EXPECT_EQ(DecodeBody(body).code(), StatusCode::kCorruption);

  body = BodyPrefix(m);
  BinaryWriter w2(&body);
  w2.VarU64(1);
  w2.I32(0);
  w2.Bytes("subtask-0.kgs");
  w2.U64(100);
  w2.U64(0);
  w2.I32(0);
  w2.I32(3);
  w2.VarU64(uint64_t{1} << 50);  // offsets
  EXPECT_EQ(DecodeBody(body).code(), StatusCode::kCorruption);
}

TEST(CheckpointMetadata, GarbageSpecBlobIsCorruption) {
  std::string body;
  BinaryWriter w(&body);
  w.Bytes("job");
  w.I64(1);
  w.I64(0);
  w.I64(0);
  w.U8(0);
  w.I64(0);
  w.Bytes(std::string("\xff\xff\xff\xff\xff\xff\xff\x7f", 8));  // a string of 2^63 bytes
  Status s = DecodeBody(body);
  EXPECT_EQ(s.code(), StatusCode::kCorruption) << s.ToString();
  EXPECT_NE(s.message().find("job spec"), std::string::npos) << s.ToString();
}

TEST(CheckpointMetadata, UnknownFlagsAreCorruption) {
  CheckpointMetadata m = TestMetadata(8, 2);
  Status s = DecodeBody(BodyPrefix(m, /*flags=*/4));
  EXPECT_EQ(s.code(), StatusCode::kCorruption) << s.ToString();
  EXPECT_NE(s.message().find("unknown flags 4"), std::string::npos) << s.ToString();
  // The same body with known flags fails later (no subtasks follow), not on the flags.
  s = DecodeBody(BodyPrefix(m, /*flags=*/1));
  EXPECT_EQ(s.code(), StatusCode::kCorruption) << s.ToString();
  EXPECT_EQ(s.message().find("unknown flags"), std::string::npos) << s.ToString();
}

TEST(CheckpointMetadata, ValidateNamesTheBrokenInvariant) {
  CheckpointMetadata m = TestMetadata(8, 2);
  EXPECT_OK(m.Validate());

  CheckpointMetadata bad = m;
  bad.id = CheckpointId(0);
  EXPECT_EQ(bad.Validate().code(), StatusCode::kInvalidArgument);

  bad = m;
  bad.subtasks.pop_back();
  EXPECT_NE(bad.Validate().message().find("1 subtask states"), std::string::npos);

  bad = m;
  bad.subtasks[1].keyed_state.range = KeyGroupRange::Of(3, 7);
  EXPECT_NE(bad.Validate().message().find("owns KeyGroupRange{start=4, end=7}"), std::string::npos)
      << bad.Validate().ToString();

  bad = m;
  bad.subtasks[0].keyed_state.timers.pop_back();
  EXPECT_NE(bad.Validate().message().find("one offset, length, key count and timer count"),
            std::string::npos);

  bad = m;
  bad.subtasks[0].keyed_state.path = "/abs/subtask-0.kgs";
  EXPECT_NE(bad.Validate().message().find("is absolute"), std::string::npos);

  bad = m;
  bad.subtasks[0].keyed_state.lengths[3] = 1000;
  EXPECT_NE(bad.Validate().message().find("key group 3 lies outside its file"), std::string::npos);

  bad = m;
  bad.spec.parallelism = 9;  // > max parallelism 8
  EXPECT_FALSE(bad.Validate().ok());
}

TEST(CheckpointMetadata, Version2RoundTripsIncrementalAndNativeHandles) {
  CheckpointMetadata m = GoldenMetadataV2();
  auto decoded = CheckpointMetadata::Decode(m.Encode(), "test");
  ASSERT_OK(decoded);
  ExpectMetadataEq(*decoded, m);
  // A metadata without native state (the heap with key-group-incremental snapshots).
  for (SubtaskCheckpointState& s : m.subtasks) s.native_state.reset();
  decoded = CheckpointMetadata::Decode(m.Encode(), "test");
  ASSERT_OK(decoded);
  ExpectMetadataEq(*decoded, m);
  EXPECT_EQ(decoded->TotalStateBytes(), 120u + 90 + 154);
  ASSERT_EQ(decoded->SharedFiles().size(), 2u);
  EXPECT_EQ(decoded->SharedFiles()[1].name, "b7e1-42-0.kgs");
}

TEST(CheckpointMetadata, SharedFileNamesArePlainNames) {
  for (const char* ok : {"a", "b7e1-42-0.kgs", "sst_000007.sst", "..x", "A.B-c_9"}) {
    EXPECT_TRUE(IsValidSharedFileName(ok)) << ok;
  }
  for (const char* bad : {"", ".", "..", "../x", "a/b", "/abs", "x y", "a\\b", "n\xc3\xa4me"}) {
    EXPECT_FALSE(IsValidSharedFileName(bad)) << bad;
  }
  EXPECT_FALSE(IsValidSharedFileName(std::string("a\0b", 3)));
}

// Validate of version-2 fields: each broken invariant is named.
TEST(CheckpointMetadata, ValidateRefusesBrokenIncrementalAndNativeHandles) {
  const CheckpointMetadata m = GoldenMetadataV2();
  ASSERT_OK(m.Validate());
  auto refused = [](const CheckpointMetadata& bad, const std::string& needle) {
    Status s = bad.Validate();
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
    EXPECT_NE(s.message().find(needle), std::string::npos) << s.ToString();
  };
  CheckpointMetadata bad = m;
  bad.subtasks[0].keyed_state.shared_files[1].name = "../x";
  refused(bad, "shared file name '../x' is not a plain file name");
  bad = m;
  bad.subtasks[0].keyed_state.shared_files[0].name = "dir/x.kgs";
  refused(bad, "'dir/x.kgs' is not a plain file name");
  bad = m;
  bad.subtasks[1].native_state->shared_files[0].name = "..";
  refused(bad, "subtask 1's native state's shared file name '..'");
  bad = m;
  bad.subtasks[1].native_state->private_files[0].path = "../x";
  refused(bad, "private file path '../x' has a '..' component");
  bad = m;
  bad.subtasks[1].native_state->private_files[0].path = "/etc/passwd";
  refused(bad, "is absolute");
  bad = m;
  bad.subtasks[0].keyed_state.block_file.pop_back();
  refused(bad, "subtask 0 must have one block file index per key group (4), has 3");
  bad = m;
  bad.subtasks[0].keyed_state.block_file.push_back(0);
  refused(bad, "one block file index per key group (4), has 5");
  bad = m;
  bad.subtasks[0].keyed_state.block_file[2] = 2;
  refused(bad, "key group 2 names shared file 2 but there are only 2");
  bad = m;
  bad.subtasks[0].keyed_state.lengths[3] = 51;  // offset 40 + 51 > 90
  refused(bad, "the block of key group 3 lies outside its shared file b7e1-42-0.kgs of 90 bytes");
  bad = m;
  bad.subtasks[0].keyed_state.path = "subtask-0.kgs";
  refused(bad, "names both a state file ('subtask-0.kgs') and shared files");
  bad = m;
  bad.subtasks[1].keyed_state.block_file = {0, 0, 0, 0};
  refused(bad, "subtask 1 has block file indexes but no shared files");
  bad = m;
  bad.subtasks[1].native_state->backend = "leveldb";
  refused(bad, "is of backend 'leveldb'");
  bad = m;
  bad.subtasks[1].native_state->range = KeyGroupRange::Of(0, 7);
  refused(bad, "subtask 1's native state covers");
  bad = m;
  bad.subtasks[1].native_state.reset();
  refused(bad, "either every subtask's keyed state is native or none is");
  bad = m;
  bad.subtasks[1].native_state->shared_files[0] = {"b7e1-41-0.kgs", 121, 0xAAAA};
  refused(bad, "shared file b7e1-41-0.kgs is named twice with different sizes");
  bad = m;
  bad.savepoint = true;
  refused(bad, "a savepoint must be self-contained");
  for (SubtaskCheckpointState& s : bad.subtasks) s.native_state.reset();
  refused(bad, "subtask 0 references shared files, but a savepoint must be self-contained");
}

TEST(CheckpointMetadata, DecodeRefusesAVersion2FileWithABrokenHandle) {
  CheckpointMetadata m = GoldenMetadataV2();
  // Encode() refuses invalid metadata; write the bytes of a valid one, then patch the name
  // (same length) and fix the checksum: what a buggy or hostile writer could produce.
  std::string bytes = m.Encode();
  const size_t at = bytes.find("b7e1-42-0.kgs");
  ASSERT_NE(at, std::string::npos);
  bytes.replace(at, 13, "../e1-42-0.kg");
  std::string body = bytes.substr(kEnvelopeHeaderSize, bytes.size() - kEnvelopeOverhead);
  auto decoded = CheckpointMetadata::Decode(
      EncodeChecksummedEnvelope(kCheckpointMetadataMagic, kCheckpointMetadataVersion, body), "x");
  ASSERT_FALSE(decoded.ok());
  EXPECT_EQ(decoded.status().code(), StatusCode::kCorruption);
  EXPECT_NE(decoded.status().message().find("'../e1-42-0.kg' is not a plain file name"),
            std::string::npos)
      << decoded.status().ToString();
}

}  // namespace
}  // namespace keyflow
