#include "common/protocol/control_messages.h"

#include <cereal/archives/binary.hpp>
#include <cereal/types/map.hpp>
#include <cereal/types/optional.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/variant.hpp>
#include <cereal/types/vector.hpp>
#include <cstring>
#include <sstream>

#include "common/protocol/bounded_binary_input_archive.h"

namespace keyflow {

std::string_view CheckpointTypeName(CheckpointType t) {
  switch (t) {
    case CheckpointType::kCheckpoint:
      return "checkpoint";
    case CheckpointType::kSavepoint:
      return "savepoint";
    case CheckpointType::kFinal:
      return "final";
  }
  return "?";
}

std::string EncodeControlMessage(const ControlMessage& msg) {
  std::ostringstream os(std::ios::binary);
  uint32_t version = kControlProtocolVersion;
  os.write(reinterpret_cast<const char*>(&version), 4);
  {
    cereal::BinaryOutputArchive ar(os);
    ar(msg);
  }
  return std::move(os).str();
}

Result<ControlMessage> DecodeControlMessage(std::string_view bytes, std::string_view peer) {
  if (bytes.size() < 4) {
    return Corruption("control message from " + std::string(peer) + " is too short (" +
                      std::to_string(bytes.size()) + " bytes)");
  }
  uint32_t version;
  std::memcpy(&version, bytes.data(), 4);
  if (version != kControlProtocolVersion) {
    return FailedPrecondition("peer " + std::string(peer) + " speaks control protocol version " +
                              std::to_string(version) + ", this process speaks version " +
                              std::to_string(kControlProtocolVersion) +
                              ": run the same keyflow version on all hosts");
  }
  if (bytes.size() > kMaxControlMessageBytes) {
    return Corruption("control message from " + std::string(peer) + " has " +
                      std::to_string(bytes.size()) + " bytes, more than the limit of " +
                      std::to_string(kMaxControlMessageBytes));
  }
  // cereal reports malformed input by throwing; this is the module edge that catches it. The
  // bounded archive checks every length field against the bytes left before allocating.
  try {
    BoundedBinaryInputArchive ar(bytes.substr(4));
    ControlMessage msg;
    ar(msg);
    if (ar.remaining() != 0) {
      return Corruption("malformed control message from " + std::string(peer) + ": " +
                        std::to_string(ar.remaining()) + " bytes after the " +
                        std::string(ControlMessageName(msg)) + " message");
    }
    return msg;
  } catch (const std::exception& e) {
    return Corruption("malformed control message from " + std::string(peer) + ": " + e.what());
  }
}

std::string_view ControlMessageName(const ControlMessage& msg) {
  static constexpr std::string_view kNames[] = {"RegisterWorker",
                                                "WorkerHeartbeat",
                                                "TaskDeployed",
                                                "TaskFinished",
                                                "TaskFailed",
                                                "TaskInputEnded",
                                                "TaskRunning",
                                                "AcknowledgeCheckpoint",
                                                "DeclineCheckpoint",
                                                "Registered",
                                                "DeployTask",
                                                "StartTask",
                                                "CoordinatorHeartbeat",
                                                "TriggerCheckpoint",
                                                "NotifyCheckpointComplete",
                                                "NotifyCheckpointAborted",
                                                "CancelTask",
                                                "RegisterAgain",
                                                "SubmitJob",
                                                "StatusRequest",
                                                "CancelJob",
                                                "StopJob",
                                                "CheckpointRequest",
                                                "ListCheckpointsRequest",
                                                "RescaleRequest",
                                                "Reply",
                                                "WorkerExiting",
                                                "FetchJobLibrary",
                                                "JobLibraryBlob",
                                                "ReloadKeys",
                                                "SetLogLevelRequest",
                                                "SetLogLevel",
                                                "WorkerExitReport",
                                                "AddSplits"};
  static_assert(std::size(kNames) == std::variant_size_v<ControlMessage>);
  return kNames[msg.index()];
}

}  // namespace keyflow
