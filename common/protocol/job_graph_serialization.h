// Wire and checkpoint-metadata encoding of a JobGraph (worker/api/job_graph.h), as part of a
// JobSpec: cereal functions found by argument-dependent lookup. Versioned like JobSpec (a new
// field is appended under `if (version >= N)` and the class version raised); decoded enums are
// checked, and the graph as a whole is checked by ValidateJobGraph where a spec is accepted.
#pragma once

#include <cereal/cereal.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/vector.hpp>
#include <cstdint>
#include <string>

#include "worker/api/job_graph.h"

namespace keyflow {
namespace job_graph_wire {

// Throws (cereal's way of reporting malformed input) unless `value` <= `last`.
template <typename Enum>
void CheckEnum(Enum value, Enum last, const char* what) {
  if (static_cast<uint8_t>(value) > static_cast<uint8_t>(last)) {
    throw cereal::Exception(std::string("the job graph has an unknown ") + what + " " +
                            std::to_string(static_cast<int>(value)));
  }
}

}  // namespace job_graph_wire

template <class Archive>
void serialize(Archive& ar, OperatorNode& n) {
  ar(n.id, n.uid, n.kind, n.binding, n.parallelism, n.side_outputs, n.chain);
  if constexpr (Archive::is_loading::value) {
    job_graph_wire::CheckEnum(n.kind, OperatorKind::kSink, "operator kind");
  }
}

template <class Archive>
void serialize(Archive& ar, StreamEdge& e) {
  ar(e.from, e.to, e.input, e.partitioning, e.key_field, e.key_type, e.side_output);
  if constexpr (Archive::is_loading::value) {
    job_graph_wire::CheckEnum(e.partitioning, Partitioning::kRebalance, "partitioning");
    job_graph_wire::CheckEnum(e.key_type, KeyType::kLong, "key type");
  }
}

template <class Archive>
void serialize(Archive& ar, OperatorChain& c) {
  ar(c.operators, c.parallelism);
}

template <class Archive>
void serialize(Archive& ar, JobGraph& g, const std::uint32_t /*version*/) {
  ar(g.operators, g.edges, g.chains, g.max_parallelism);
}

}  // namespace keyflow

CEREAL_CLASS_VERSION(keyflow::JobGraph, 1);
