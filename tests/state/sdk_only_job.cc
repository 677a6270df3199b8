// Compiled like a job library: only SDK headers. The #error below is the compile-time proof that
// none of them pulls in the heap backend (state/heap/*).
#include "tests/state/sdk_only_job.h"

#include <algorithm>
#include <map>
#include <memory>
#include <vector>

#include "state/keyed_state.h"
#include "worker/api/keyed_process_function.h"

#if defined(KEYFLOW_STATE_HEAP_INCLUDED)
#error "an SDK header includes the heap state backend (state/heap/*): job libraries must not"
#endif

namespace keyflow::sdk_test {
namespace {

class Average final : public AggregateFunction<int64_t, std::pair<int64_t, int64_t>, double> {
 public:
  std::pair<int64_t, int64_t> CreateAccumulator() const override { return {0, 0}; }
  void Add(const int64_t& v, std::pair<int64_t, int64_t>& acc) const override {
    acc.first += v;
    acc.second += 1;
  }
  double GetResult(const std::pair<int64_t, int64_t>& acc) const override {
    return static_cast<double>(acc.first) / static_cast<double>(acc.second);
  }
};

}  // namespace

void Visit::Write(BinaryWriter& out) const {
  out.Bytes(page);
  out.I64(time);
}
bool Visit::Read(BinaryReader& in) {
  page = std::string(in.Bytes());
  time = in.I64();
  return in.ok();
}

void Window::Write(BinaryWriter& out) const {
  out.I64(count);
  out.I64(start);
  out.I64(deadline);
}
bool Window::Read(BinaryReader& in) {
  count = in.I64();
  start = in.I64();
  deadline = in.I64();
  return in.ok();
}

Status RegisterStates(RuntimeContext& runtime, SessionStates* s) {
  KF_ASSIGN_OR_RETURN(s->count, runtime.GetState(ValueStateDescriptor<int64_t>("count", 0)));
  KF_ASSIGN_OR_RETURN(s->last, runtime.GetState(ValueStateDescriptor<Visit>("last")));
  KF_ASSIGN_OR_RETURN(s->window, runtime.GetState(ValueStateDescriptor<Window>("window")));
  s->window->SetCurrentNamespace(Namespace(7));
  KF_ASSIGN_OR_RETURN(s->pages, runtime.GetListState(ListStateDescriptor<std::string>("pages")));
  KF_ASSIGN_OR_RETURN(s->per_page,
                      runtime.GetMapState(MapStateDescriptor<std::string, int64_t>("per-page")));
  KF_ASSIGN_OR_RETURN(
      s->max_time,
      runtime.GetReducingState(ReducingStateDescriptor<int64_t>(
          "max-time", [](const int64_t& a, const int64_t& b) { return std::max(a, b); })));
  KF_ASSIGN_OR_RETURN(s->avg_time,
                      runtime.GetAggregatingState(
                          AggregatingStateDescriptor<int64_t, std::pair<int64_t, int64_t>, double>(
                              "avg-time", std::make_shared<Average>())));
  return Status::Ok();
}

void OnVisit(SessionStates& s, const std::string& page, int64_t time) {
  s.count->Update(*s.count->Value() + 1);
  s.last->Update(Visit{page, time});
  Window w = s.window->Value().value_or(Window{0, time, time + 100});
  ++w.count;
  s.window->Update(w);
  s.pages->Add(page);
  const int64_t* n = s.per_page->Get(page);
  s.per_page->Put(page, n == nullptr ? 1 : *n + 1);
  s.max_time->Add(time);
  s.avg_time->Add(time);
}

void Forget(SessionStates& s, const std::string& page, bool clear_pages) {
  s.per_page->Remove(page);
  if (clear_pages) s.pages->Update({});
}

std::string Describe(const SessionStates& s) {
  std::string out = "count=" + std::to_string(*s.count->Value());
  if (auto last = s.last->Value()) out += " last=" + last->page + "@" + std::to_string(last->time);
  if (auto w = s.window->Value()) {
    out += " window=" + std::to_string(w->count) + "/" + std::to_string(w->start) + "-" +
           std::to_string(w->deadline);
  }
  out += " pages=";
  for (const std::string& p : s.pages->Get()) out += p + ",";
  std::map<std::string, int64_t> sorted(s.per_page->Entries().begin(), s.per_page->Entries().end());
  out += " per-page=";
  for (const auto& [p, n] : sorted) out += p + ":" + std::to_string(n) + ",";
  if (s.per_page->IsEmpty()) out += "(empty)";
  if (auto m = s.max_time->Get()) out += " max=" + std::to_string(*m);
  if (auto a = s.avg_time->Get()) out += " avg=" + std::to_string(*a);
  return out;
}

}  // namespace keyflow::sdk_test
