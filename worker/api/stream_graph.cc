#include "worker/api/stream_graph.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "common/record.h"
#include "worker/api/output.h"

namespace keyflow {

namespace {

// 1-64 characters of [a-z0-9], upper case letters if `upper`, and `punctuation`.
bool ValidName(std::string_view name, bool upper, std::string_view punctuation) {
  if (name.empty() || name.size() > 64) return false;
  return std::all_of(name.begin(), name.end(), [&](char c) {
    return (c >= 'a' && c <= 'z') || (upper && c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           punctuation.find(c) != std::string_view::npos;
  });
}

bool ValidUid(std::string_view uid) {
  return ValidName(uid, true, "._-");
}
bool ValidBinding(std::string_view name) {
  return ValidName(name, false, "_-");
}

std::string Quoted(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "'" : ", '") + n + "'";
  return out;
}

// "map 'only-bids'"
std::string Named(const OperatorNode& op) {
  return std::string(OperatorKindName(op.kind)) + " '" + op.uid + "'";
}

StreamEdge EdgeFrom(int32_t from, const std::string& side_output, int32_t input = 0) {
  StreamEdge e;
  e.from = from;
  e.input = input;
  e.side_output = side_output;
  return e;
}

StreamEdge HashEdgeFrom(int32_t from, const std::string& side_output, std::string field,
                        KeyType type, int32_t input = 0) {
  StreamEdge e = EdgeFrom(from, side_output, input);
  e.partitioning = Partitioning::kHash;
  e.key_field = std::move(field);
  e.key_type = type;
  return e;
}

}  // namespace

std::string_view OperatorKindName(OperatorKind kind) {
  switch (kind) {
    case OperatorKind::kSource:
      return "source";
    case OperatorKind::kMap:
      return "map";
    case OperatorKind::kFilter:
      return "filter";
    case OperatorKind::kFlatMap:
      return "flat-map";
    case OperatorKind::kKeyedProcess:
      return "keyed-process";
    case OperatorKind::kKeyedCoProcess:
      return "keyed-co-process";
    case OperatorKind::kUnion:
      return "union";
    case OperatorKind::kSink:
      return "sink";
  }
  return "unknown";
}

std::string_view PartitioningName(Partitioning p) {
  switch (p) {
    case Partitioning::kForward:
      return "forward";
    case Partitioning::kHash:
      return "hash";
    case Partitioning::kRebalance:
      return "rebalance";
  }
  return "unknown";
}

// --- JobGraph -------------------------------------------------------------------------------

const OperatorNode* JobGraph::Find(std::string_view uid) const {
  for (const OperatorNode& op : operators) {
    if (op.uid == uid) return &op;
  }
  return nullptr;
}

std::vector<const StreamEdge*> JobGraph::Inputs(int32_t id) const {
  std::vector<const StreamEdge*> out;
  for (const StreamEdge& e : edges) {
    if (e.to == id) out.push_back(&e);
  }
  return out;
}

std::vector<const StreamEdge*> JobGraph::Outputs(int32_t id) const {
  std::vector<const StreamEdge*> out;
  for (const StreamEdge& e : edges) {
    if (e.from == id) out.push_back(&e);
  }
  return out;
}

std::string JobGraph::Describe() const {
  std::string out;
  for (size_t c = 0; c < chains.size(); ++c) {
    out += "task " + std::to_string(c) + " [";
    for (size_t i = 0; i < chains[c].operators.size(); ++i) {
      const OperatorNode& op = operators.at(chains[c].operators[i]);
      out += (i == 0 ? "" : " -> ") + std::string(OperatorKindName(op.kind)) + " " + op.uid;
    }
    out += "] parallelism " +
           (chains[c].parallelism == 0 ? std::string("of the job")
                                       : std::to_string(chains[c].parallelism)) +
           "\n";
  }
  for (const StreamEdge& e : edges) {
    const OperatorNode& from = operators.at(e.from);
    const OperatorNode& to = operators.at(e.to);
    if (from.chain == to.chain) continue;
    out +=
        "  " + from.uid + (e.side_output.empty() ? "" : "[" + e.side_output + "]") + " =" +
        std::string(PartitioningName(e.partitioning)) +
        (e.key_field.empty() ? "" : "(" + e.key_field + ")") + "=> " + to.uid +
        (to.kind == OperatorKind::kKeyedCoProcess ? " input " + std::to_string(e.input + 1) : "") +
        "\n";
  }
  return out;
}

// --- DataStream and friends -----------------------------------------------------------------

DataStream DataStream::Stateless(OperatorKind kind, std::string uid, OperatorFunctions functions,
                                 bool has_function) const {
  if (!has_function) {
    builder_->Error(std::string(OperatorKindName(kind)) + " '" + uid + "' has no function");
  }
  return DataStream(builder_, builder_->Add(kind, std::move(uid), std::move(functions),
                                            {EdgeFrom(node_, side_output_)}));
}

DataStream DataStream::Map(std::string uid, MapFunction fn) const {
  const bool has_function = static_cast<bool>(fn);
  OperatorFunctions f;
  f.map = std::move(fn);
  return Stateless(OperatorKind::kMap, std::move(uid), std::move(f), has_function);
}

DataStream DataStream::Filter(std::string uid, FilterFunction fn) const {
  const bool has_function = static_cast<bool>(fn);
  OperatorFunctions f;
  f.filter = std::move(fn);
  return Stateless(OperatorKind::kFilter, std::move(uid), std::move(f), has_function);
}

DataStream DataStream::FlatMap(std::string uid, FlatMapFunction fn) const {
  const bool has_function = static_cast<bool>(fn);
  OperatorFunctions f;
  f.flat_map = std::move(fn);
  return Stateless(OperatorKind::kFlatMap, std::move(uid), std::move(f), has_function);
}

KeyedStream DataStream::KeyBy(std::string field, KeyType type) const {
  if (field.empty()) builder_->Error("KeyBy needs a field to key by (it was given \"\")");
  return KeyedStream(*this, std::move(field), type);
}

ConnectedStreams DataStream::Connect(const DataStream& other) const {
  if (other.builder_ != builder_) builder_->Error("Connect joins streams of two graphs");
  return ConnectedStreams(*this, other);
}

DataStream DataStream::Union(const DataStream& other) const {
  if (other.builder_ != builder_) {
    builder_->Error("Union joins streams of two graphs");
  } else if (other.node_ == node_ && other.side_output_ == side_output_) {
    builder_->Error("a stream of '" + builder_->nodes_.at(node_).op.uid +
                    "' is unioned with itself: every record would come twice");
  }
  return DataStream(builder_, builder_->Add(OperatorKind::kUnion, "", {},
                                            {EdgeFrom(node_, side_output_),
                                             EdgeFrom(other.node_, other.side_output_)}));
}

DataStream DataStream::GetSideOutput(const OutputTag& tag) const {
  const OperatorNode& op = builder_->nodes_.at(node_).op;
  const auto& declared = op.side_outputs;
  if (std::find(declared.begin(), declared.end(), tag.id) == declared.end()) {
    builder_->Error("GetSideOutput('" + tag.id + "') on " + Named(op) +
                    ", which declares no such side output: pass the tag to its Process()");
  }
  return DataStream(builder_, node_, tag.id);
}

DataStream DataStream::SetParallelism(int32_t parallelism) const {
  OperatorNode& op = builder_->nodes_.at(node_).op;
  if (!side_output_.empty()) {
    builder_->Error("SetParallelism on side output '" + side_output_ + "' of " + Named(op) +
                    ": set it on the operator");
  } else if (parallelism < 1) {
    builder_->Error("SetParallelism(" + std::to_string(parallelism) + ") on " + Named(op) +
                    ": a parallelism is at least 1");
  } else {
    op.parallelism = parallelism;
  }
  return *this;
}

void DataStream::Sink(std::string binding, std::string uid) const {
  if (!ValidBinding(binding)) {
    builder_->Error("sink output name '" + binding + "' is not valid: use 1-64 of [a-z0-9_-]");
  }
  if (uid.empty()) uid = "sink-" + binding;
  const int32_t id =
      builder_->Add(OperatorKind::kSink, std::move(uid), {}, {EdgeFrom(node_, side_output_)});
  builder_->nodes_.at(id).op.binding = std::move(binding);
}

DataStream KeyedStream::Process(std::string uid, KeyedFunctionFactory factory,
                                std::vector<OutputTag> side_outputs) const {
  StreamGraphBuilder* b = input_.builder_;
  if (!factory) b->Error("keyed-process '" + uid + "' has no function");
  OperatorFunctions f;
  f.process = std::move(factory);
  const int32_t id = b->Add(OperatorKind::kKeyedProcess, std::move(uid), std::move(f),
                            {HashEdgeFrom(input_.node_, input_.side_output_, field_, type_)});
  for (const OutputTag& tag : side_outputs) b->nodes_.at(id).op.side_outputs.push_back(tag.id);
  return DataStream(b, id);
}

ConnectedStreams::Keyed ConnectedStreams::KeyBy(std::string field1, std::string field2,
                                                KeyType type) const {
  if (field1.empty() || field2.empty()) {
    first_.builder_->Error("KeyBy of connected streams needs a field for each input");
  }
  return Keyed(*this, std::move(field1), std::move(field2), type);
}

DataStream ConnectedStreams::Keyed::Process(std::string uid, KeyedCoFunctionFactory factory,
                                            std::vector<OutputTag> side_outputs) const {
  StreamGraphBuilder* b = first_.builder_;
  if (!factory) b->Error("keyed-co-process '" + uid + "' has no function");
  OperatorFunctions f;
  f.co_process = std::move(factory);
  const int32_t id = b->Add(OperatorKind::kKeyedCoProcess, std::move(uid), std::move(f),
                            {HashEdgeFrom(first_.node_, first_.side_output_, field1_, type_, 0),
                             HashEdgeFrom(second_.node_, second_.side_output_, field2_, type_, 1)});
  for (const OutputTag& tag : side_outputs) b->nodes_.at(id).op.side_outputs.push_back(tag.id);
  return DataStream(b, id);
}

// --- StreamGraphBuilder ---------------------------------------------------------------------

DataStream StreamGraphBuilder::Source(std::string binding, std::string uid) {
  if (!ValidBinding(binding)) {
    Error("source input name '" + binding + "' is not valid: use 1-64 of [a-z0-9_-]");
  }
  if (uid.empty()) uid = "source-" + binding;
  const int32_t id = Add(OperatorKind::kSource, std::move(uid), {}, {});
  nodes_.at(id).op.binding = std::move(binding);
  return DataStream(this, id);
}

int32_t StreamGraphBuilder::Add(OperatorKind kind, std::string uid, OperatorFunctions functions,
                                std::vector<StreamEdge> inputs) {
  const auto id = static_cast<int32_t>(nodes_.size());
  if (kind == OperatorKind::kUnion) {
    uid = "union-" + std::to_string(id);
  } else if (!ValidUid(uid)) {
    Error("operator uid '" + uid + "' of a " + std::string(OperatorKindName(kind)) +
          " is not valid: use 1-64 of [A-Za-z0-9._-]");
  } else {
    for (const Node& n : nodes_) {
      if (n.op.uid == uid) {
        Error("two operators have the uid '" + uid +
              "': a uid names one operator (its state is kept under it)");
        break;
      }
    }
  }
  Node node;
  node.op.id = id;
  node.op.uid = std::move(uid);
  node.op.kind = kind;
  node.functions = std::move(functions);
  nodes_.push_back(std::move(node));
  for (StreamEdge& e : inputs) {
    e.to = id;
    edges_.push_back(std::move(e));
  }
  return id;
}

void StreamGraphBuilder::Error(std::string sentence) {
  errors_.push_back(std::move(sentence));
}

Status StreamGraphBuilder::CheckDangling() const {
  for (const Node& n : nodes_) {
    if (n.op.kind == OperatorKind::kSink) continue;
    bool main_read = false;
    bool side_read = false;
    for (const StreamEdge& e : edges_) {
      if (e.from != n.op.id) continue;
      (e.side_output.empty() ? main_read : side_read) = true;
    }
    if (!main_read && !side_read) {
      return InvalidArgument("the output of " + Named(n.op) +
                             " goes nowhere: add a Sink() behind it or remove it");
    }
  }
  return Status::Ok();
}

Status StreamGraphBuilder::CheckSideOutputs() const {
  for (const Node& n : nodes_) {
    for (const std::string& tag : n.op.side_outputs) {
      const bool read = std::any_of(edges_.begin(), edges_.end(), [&](const StreamEdge& e) {
        return e.from == n.op.id && e.side_output == tag;
      });
      if (!read) {
        return InvalidArgument("side output '" + tag + "' of " + Named(n.op) +
                               " is read by nobody: read it with GetSideOutput() and sink it, "
                               "or do not declare it");
      }
    }
  }
  return Status::Ok();
}

Status StreamGraphBuilder::CheckKeyFields(const StreamGraphOptions& options) const {
  if (options.declared_fields.empty()) return Status::Ok();
  for (const StreamEdge& e : edges_) {
    if (e.partitioning != Partitioning::kHash) continue;
    // Up through filters (they keep the fields as they are) to a source, if there is one.
    int32_t up = e.from;
    while (nodes_.at(up).op.kind == OperatorKind::kFilter) {
      auto in = std::find_if(edges_.begin(), edges_.end(),
                             [&](const StreamEdge& x) { return x.to == up; });
      up = in->from;
    }
    if (nodes_.at(up).op.kind != OperatorKind::kSource) continue;
    const auto& fields = options.declared_fields;
    if (std::find(fields.begin(), fields.end(), e.key_field) != fields.end()) continue;
    return InvalidArgument("KeyBy('" + e.key_field + "') before " + Named(nodes_.at(e.to).op) +
                           " keys by a field that source '" + nodes_.at(up).op.uid +
                           "' drops: the sources keep only the fields the job declares "
                           "(JobDefinition::fields: " +
                           Quoted(fields) + "): add '" + e.key_field + "'");
  }
  return Status::Ok();
}

void StreamGraphBuilder::Chain(JobGraph* graph) const {
  for (OperatorNode& op : graph->operators) {
    std::vector<const StreamEdge*> in = graph->Inputs(op.id);
    if (in.size() == 1 && in[0]->partitioning == Partitioning::kForward &&
        in[0]->side_output.empty() && graph->Outputs(in[0]->from).size() == 1) {
      op.chain = graph->operators.at(in[0]->from).chain;
      graph->chains.at(op.chain).operators.push_back(op.id);
      continue;
    }
    op.chain = static_cast<int32_t>(graph->chains.size());
    graph->chains.push_back(OperatorChain{{op.id}, op.parallelism});
  }
}

Result<JobGraph> StreamGraphBuilder::Build(const StreamGraphOptions& options) const {
  if (!errors_.empty()) return InvalidArgument(errors_.front());
  const auto count = [&](OperatorKind kind) {
    return std::count_if(nodes_.begin(), nodes_.end(),
                         [&](const Node& n) { return n.op.kind == kind; });
  };
  if (count(OperatorKind::kSource) == 0) {
    return InvalidArgument("the job's graph has no source: start it with Source()");
  }
  if (count(OperatorKind::kSink) == 0) {
    return InvalidArgument("the job's graph has no sink: end each stream with Sink()");
  }
  std::map<std::pair<OperatorKind, std::string>, std::string> bound;
  for (const Node& n : nodes_) {
    if (n.op.binding.empty()) continue;
    auto [it, fresh] = bound.emplace(std::make_pair(n.op.kind, n.op.binding), n.op.uid);
    if (!fresh) {
      return InvalidArgument(std::string(OperatorKindName(n.op.kind)) + "s '" + it->second +
                             "' and '" + n.op.uid + "' are both bound to '" + n.op.binding +
                             "': give each its own name");
    }
  }
  KF_RETURN_IF_ERROR(CheckSideOutputs());
  KF_RETURN_IF_ERROR(CheckDangling());
  KF_RETURN_IF_ERROR(CheckKeyFields(options));
  JobGraph graph;
  for (const Node& n : nodes_) {
    if (options.max_parallelism > 0 && n.op.parallelism > options.max_parallelism) {
      return InvalidArgument(Named(n.op) + " has parallelism " + std::to_string(n.op.parallelism) +
                             ", above the job's maximum " +
                             std::to_string(options.max_parallelism) + " (--max-parallelism)");
    }
    graph.operators.push_back(n.op);
  }
  graph.edges = edges_;
  for (StreamEdge& e : graph.edges) {
    if (e.partitioning == Partitioning::kHash) continue;
    const bool same =
        graph.operators.at(e.from).parallelism == graph.operators.at(e.to).parallelism;
    e.partitioning = same ? Partitioning::kForward : Partitioning::kRebalance;
  }
  Chain(&graph);
  KF_RETURN_IF_ERROR(ValidateJobGraph(graph));
  return graph;
}

// --- Validation of a graph from elsewhere ---------------------------------------------------

namespace {

Status CheckInputsOfKind(const JobGraph& graph, const OperatorNode& op) {
  std::vector<const StreamEdge*> in = graph.Inputs(op.id);
  const auto hash = [](const StreamEdge* e) { return e->partitioning == Partitioning::kHash; };
  const std::string who = "operator " + std::to_string(op.id) + " (" + Named(op) + ")";
  switch (op.kind) {
    case OperatorKind::kSource:
      if (!in.empty()) return InvalidArgument(who + " is a source but has inputs");
      break;
    case OperatorKind::kMap:
    case OperatorKind::kFilter:
    case OperatorKind::kFlatMap:
      if (in.size() != 1 || hash(in[0])) {
        return InvalidArgument(who + " needs exactly one input that is not keyed");
      }
      break;
    case OperatorKind::kKeyedProcess:
      if (in.size() != 1 || !hash(in[0])) {
        return InvalidArgument(who + " needs exactly one keyed (hash) input");
      }
      break;
    case OperatorKind::kKeyedCoProcess:
      if (in.size() != 2 || !hash(in[0]) || !hash(in[1]) || in[0]->input == in[1]->input) {
        return InvalidArgument(who + " needs two keyed (hash) inputs, input 1 and input 2");
      }
      break;
    case OperatorKind::kUnion:
      if (in.size() < 2 || std::any_of(in.begin(), in.end(), hash)) {
        return InvalidArgument(who + " needs two or more inputs that are not keyed");
      }
      break;
    case OperatorKind::kSink:
      if (in.empty()) return InvalidArgument(who + " is a sink without input");
      if (!graph.Outputs(op.id).empty()) return InvalidArgument(who + " is a sink with outputs");
      break;
  }
  for (const StreamEdge* e : in) {
    if (hash(e) && e->key_field.empty()) {
      return InvalidArgument(who + " has a keyed input without a key field");
    }
    if (e->input != 0 && op.kind != OperatorKind::kKeyedCoProcess) {
      return InvalidArgument(who + " has an input " + std::to_string(e->input + 1) +
                             " but only one input");
    }
  }
  return Status::Ok();
}

// Kahn's algorithm: every operator gets a place before all it feeds.
Status CheckAcyclic(const JobGraph& graph) {
  std::vector<int32_t> pending(graph.operators.size(), 0);
  for (const StreamEdge& e : graph.edges) ++pending[static_cast<size_t>(e.to)];
  std::vector<int32_t> ready;
  for (size_t i = 0; i < pending.size(); ++i) {
    if (pending[i] == 0) ready.push_back(static_cast<int32_t>(i));
  }
  size_t placed = 0;
  while (!ready.empty()) {
    const int32_t id = ready.back();
    ready.pop_back();
    ++placed;
    for (const StreamEdge& e : graph.edges) {
      if (e.from == id && --pending[static_cast<size_t>(e.to)] == 0) ready.push_back(e.to);
    }
  }
  if (placed == graph.operators.size()) return Status::Ok();
  for (size_t i = 0; i < pending.size(); ++i) {
    if (pending[i] > 0) {
      return InvalidArgument("the job's graph has a cycle through operator " + std::to_string(i) +
                             " ('" + graph.operators[i].uid + "'): records would flow forever");
    }
  }
  return InvalidArgument("the job's graph has a cycle");
}

Status CheckChains(const JobGraph& graph) {
  std::vector<int> seen(graph.operators.size(), 0);
  for (size_t c = 0; c < graph.chains.size(); ++c) {
    const std::vector<int32_t>& ops = graph.chains[c].operators;
    if (ops.empty()) return InvalidArgument("task " + std::to_string(c) + " has no operator");
    for (size_t i = 0; i < ops.size(); ++i) {
      if (ops[i] < 0 || static_cast<size_t>(ops[i]) >= graph.operators.size()) {
        return InvalidArgument("task " + std::to_string(c) + " names operator " +
                               std::to_string(ops[i]) + ", which does not exist");
      }
      ++seen[static_cast<size_t>(ops[i])];
      if (graph.operators[static_cast<size_t>(ops[i])].chain != static_cast<int32_t>(c)) {
        return InvalidArgument("operator " + std::to_string(ops[i]) + " is in task " +
                               std::to_string(c) + " but says it is in another");
      }
      if (i == 0) continue;
      std::vector<const StreamEdge*> in = graph.Inputs(ops[i]);
      if (in.size() != 1 || in[0]->from != ops[i - 1] ||
          in[0]->partitioning != Partitioning::kForward) {
        return InvalidArgument("operator " + std::to_string(ops[i]) + " is chained in task " +
                               std::to_string(c) +
                               " without a forward edge from the operator before it");
      }
    }
  }
  for (size_t i = 0; i < seen.size(); ++i) {
    if (seen[i] != 1) {
      return InvalidArgument("operator " + std::to_string(i) + " is in " + std::to_string(seen[i]) +
                             " tasks, not one");
    }
  }
  return Status::Ok();
}

}  // namespace

Status ValidateJobGraph(const JobGraph& graph) {
  const auto n = static_cast<int32_t>(graph.operators.size());
  std::set<std::string> uids;
  bool source = false;
  bool sink = false;
  for (int32_t i = 0; i < n; ++i) {
    const OperatorNode& op = graph.operators[static_cast<size_t>(i)];
    if (op.id != i) {
      return InvalidArgument("operator " + std::to_string(i) + " has id " + std::to_string(op.id));
    }
    if (!ValidUid(op.uid) || !uids.insert(op.uid).second) {
      return InvalidArgument("operator " + std::to_string(i) +
                             " has a missing, malformed or "
                             "repeated uid '" +
                             op.uid + "'");
    }
    if (op.parallelism < 0) {
      return InvalidArgument(Named(op) + " has a negative parallelism");
    }
    source |= op.kind == OperatorKind::kSource;
    sink |= op.kind == OperatorKind::kSink;
  }
  if (!source || !sink) return InvalidArgument("the job's graph needs a source and a sink");
  for (const StreamEdge& e : graph.edges) {
    if (e.from < 0 || e.from >= n || e.to < 0 || e.to >= n || e.from == e.to) {
      return InvalidArgument("an edge from operator " + std::to_string(e.from) + " to " +
                             std::to_string(e.to) + " does not join two operators");
    }
    if (!e.side_output.empty()) {
      const auto& tags = graph.operators[static_cast<size_t>(e.from)].side_outputs;
      if (std::find(tags.begin(), tags.end(), e.side_output) == tags.end()) {
        return InvalidArgument("an edge reads side output '" + e.side_output + "' of operator " +
                               std::to_string(e.from) + ", which does not declare it");
      }
    }
  }
  KF_RETURN_IF_ERROR(CheckAcyclic(graph));
  for (const OperatorNode& op : graph.operators) {
    KF_RETURN_IF_ERROR(CheckInputsOfKind(graph, op));
  }
  return CheckChains(graph);
}

JobGraph SingleFunctionGraph(const std::string& uid, const std::string& key_field,
                             KeyType key_type) {
  StreamGraphBuilder g;
  g.Source()
      .KeyBy(key_field, key_type)
      .Process(uid, [] { return std::unique_ptr<KeyedFunction>(); })
      .Sink();
  Result<JobGraph> graph = g.Build({});
  KF_CHECK(graph.ok()) << graph.status().ToString();
  return std::move(graph).value();
}

}  // namespace keyflow
