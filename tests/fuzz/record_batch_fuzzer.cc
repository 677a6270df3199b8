// Fuzz target: the RECORDS frame payload (worker/shuffle/record_batch_builder.h,
// DecodeRecordBatch), the bytes a peer worker sends for every batch of records.
//
// Input: mode byte (unused, kept for a uniform corpus layout), then the payload.
// Properties: decoding never crashes or over-allocates; a failed decode leaves no records; a
// decoded batch rebuilt with RecordBatchBuilder decodes to the same records; the field tapes of
// a decoded batch are safe to read (ToJson walks every value).
#include <cstdint>
#include <string>
#include <vector>

#include "common/record_fields.h"
#include "tests/fuzz/fuzz_util.h"
#include "worker/shuffle/record_batch_builder.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace keyflow;
  fuzz::FuzzInput in = fuzz::FuzzInput::From(data, size);
  std::vector<RecordView> records;
  Status s = DecodeRecordBatch(in.bytes, "fuzz channel", &records);
  if (!s.ok()) {
    KF_CHECK(records.empty());
    KF_CHECK(s.code() == StatusCode::kCorruption) << s.ToString();
    return 0;
  }
  RecordBatchBuilder builder;
  for (const RecordView& r : records) {
    KF_CHECK_GE(r.key_group.value(), 0);
    builder.Append(r.key, r.key_group, r.timestamp, r.payload, r.fields);
    const FieldValue root = FieldValue::Root(r.fields);
    KF_CHECK(root.is_missing() == r.fields.empty());
    (void)root.ToJson();
  }
  std::string frame;
  builder.FinishInto(SubtaskIndex(0), AttemptNumber(0), 0, &frame);
  Result<DecodedFrame> decoded = DecodeFrame(frame, "fuzz channel");
  KF_CHECK(decoded.ok()) << decoded.status().ToString();
  std::vector<RecordView> again;
  s = DecodeRecordBatch(decoded->payload, "fuzz channel", &again);
  KF_CHECK(s.ok()) << s.ToString();
  KF_CHECK_EQ(again.size(), records.size());
  for (size_t i = 0; i < records.size(); ++i) {
    KF_CHECK(again[i].key == records[i].key);
    KF_CHECK(again[i].key_group == records[i].key_group);
    KF_CHECK(again[i].timestamp == records[i].timestamp);
    KF_CHECK(again[i].payload == records[i].payload);
    KF_CHECK(again[i].fields == records[i].fields);
    // The record as the keyed task materialises it.
    Record r = records[i].ToRecord();
    KF_CHECK(r.key.bytes() == records[i].key);
  }
  return 0;
}
