#include "coordinator/source/continuous_file_split_enumerator.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "common/binary_io.h"
#include "common/logging/logging.h"

namespace keyflow {
namespace {

std::string ParentOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash);
}

std::string WithoutTrailingSlashes(std::string dir) {
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return dir;
}

}  // namespace

Result<std::unique_ptr<ContinuousFileSplitEnumerator>> ContinuousFileSplitEnumerator::Create(
    const InputSpec& input, const RestoredSplits* restored, DirectoryLister lister) {
  std::unique_ptr<ContinuousFileSplitEnumerator> e(new ContinuousFileSplitEnumerator());
  e->lister_ = std::move(lister);
  e->directory_ = input.monitored_directory();
  e->interval_ms_ = input.monitor_interval().millis();
  // The files the parse listed: new ones at Start (all of them when starting from scratch).
  for (const SourceSplit& split : input.splits()) e->listed_.push_back(split.path());
  if (restored != nullptr) {
    const std::string dir = WithoutTrailingSlashes(e->directory_);
    for (const auto& [id, bytes] : *restored) {
      BinaryReader r(bytes);
      KF_ASSIGN_OR_RETURN(SourceSplitState st, SourceSplitState::DecodeFrom(&r));
      if (st.split.kind() != SplitKind::kFile || ParentOf(st.split.path()) != dir) {
        return FailedPrecondition("split " + id + " of the checkpoint is " + st.split.ToString() +
                                  ", not a file of the monitored directory " + e->directory_ +
                                  ": restore with the same --input");
      }
      e->initial_.push_back(std::move(st));
    }
  }
  for (const SourceSplitState& st : e->initial_) {
    e->known_paths_.insert(st.split.path());
    e->next_id_ = std::max(e->next_id_, st.split.id().value() + 1);
  }
  return e;
}

Status ContinuousFileSplitEnumerator::Start(SplitEnumeratorContext& context) {
  AssignByIdModulo(context, std::move(initial_));
  initial_.clear();
  // A restored attempt also picks up the files that arrived since its checkpoint.
  AssignNew(context, std::move(listed_));
  listed_.clear();
  return Status::Ok();
}

void ContinuousFileSplitEnumerator::OnTick(SplitEnumeratorContext& context, int64_t now_ms) {
  if (next_discovery_ms_ < 0) next_discovery_ms_ = now_ms + interval_ms_;
  if (!listing_.valid()) {
    if (now_ms < next_discovery_ms_) return;
    listing_ = lister_(directory_);
  }
  if (listing_.wait_for(std::chrono::seconds(0)) != std::future_status::ready) return;
  Result<std::vector<std::string>> files = listing_.get();  // invalidates listing_
  next_discovery_ms_ = now_ms + interval_ms_;
  listing_error_ = files.ok() ? "" : files.status().message();
  if (!files.ok()) {
    KF_LOG_WARN("cannot list the monitored directory {}: {}; trying again in {} ms", directory_,
                files.status().message(), interval_ms_);
    return;
  }
  AssignNew(context, *std::move(files));
}

nlohmann::json ContinuousFileSplitEnumerator::StatusJson() const {
  return {{"kind", "monitor"},
          {"directory", directory_},
          {"interval_ms", interval_ms_},
          {"splits", known_paths_.size()},
          {"listing_error", listing_error_}};
}

void ContinuousFileSplitEnumerator::AssignNew(SplitEnumeratorContext& context,
                                              std::vector<std::string> files) {
  std::vector<SourceSplitState> found;
  for (std::string& path : files) {
    if (known_paths_.count(path) != 0) continue;
    known_paths_.insert(path);
    found.push_back({SourceSplit::File(SplitId(next_id_++), std::move(path)), {}});
  }
  if (!found.empty()) {
    KF_LOG_INFO("monitored directory {}: {} new file(s), {} known", directory_, found.size(),
                known_paths_.size());
  }
  AssignByIdModulo(context, std::move(found));
}

}  // namespace keyflow
