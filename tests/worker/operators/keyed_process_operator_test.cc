// KeyedProcessOperator through the test harness: output timestamps (Flink's
// TimestampedCollector) and failures of user code (Open's error, exceptions from every call).
#include "worker/operators/keyed_process_operator.h"

#include <gtest/gtest.h>

#include <stdexcept>

#include "tests/testutil/status_matchers.h"
#include "worker/testing/keyed_operator_test_harness.h"

namespace keyflow {
namespace {

using Records = std::vector<OutputRecord>;

// Emits one record per element and per timer, without a timestamp unless the element's key is
// "explicit"; registers an event-time timer at ts + 10 and a processing-time timer at ts + 100.
class EchoFunction final : public KeyedFunction {
 public:
  void ProcessElement(const Record& r, Context& ctx, Collector<OutputRecord>& out) override {
    if (r.key.bytes() == "explicit") {
      out.Collect(OutputRecord(std::string("explicit"), Timestamp(7)));
      return;
    }
    out.Collect(JsonObject().Add("element", r.timestamp.millis()));
    ctx.timer_service().RegisterEventTimeTimer(r.timestamp + Duration::Millis(10));
    ctx.timer_service().RegisterProcessingTimeTimer(r.timestamp + Duration::Millis(100));
  }
  void OnTimer(Timestamp t, OnTimerContext& ctx, Collector<OutputRecord>& out) override {
    out.Collect(JsonObject()
                    .Add("timer", t.millis())
                    .Add("domain", ctx.time_domain() == TimeDomain::kEventTime ? "event" : "proc"));
  }
  void EndInput(Context&, Collector<OutputRecord>& out) override {
    out.Collect(std::string("end"));
  }
};

OutputRecord At(std::string line, int64_t ts) {
  return OutputRecord(std::move(line), Timestamp(ts));
}

// As Flink's KeyedProcessOperatorTest (testEventTimeTimers / testProcessingTimeTimers): what an
// element or an event-time timer emits carries its time; what a processing-time timer emits
// carries none (Flink's onProcessingTime erases the collector's timestamp).
TEST(KeyedProcessOperatorOutput, RecordsGetTheElementsOrEventTimersTimeAndProcessingTimersNone) {
  KeyedOperatorTestHarness h(std::make_unique<EchoFunction>(), {});
  ASSERT_OK(h.Open());
  ASSERT_OK(h.ProcessElement("a", 1000));
  EXPECT_EQ(h.ExtractOutputRecords(), Records{At(R"({"element":1000})", 1000)});
  h.ProcessWatermark(1010);
  EXPECT_EQ(h.ExtractOutputRecords(), Records{At(R"({"timer":1010,"domain":"event"})", 1010)});
  h.SetProcessingTime(1100);
  Records processing_time = h.ExtractOutputRecords();
  EXPECT_EQ(processing_time, Records{OutputRecord(R"({"timer":1100,"domain":"proc"})")});
  ASSERT_EQ(processing_time.size(), 1u);
  EXPECT_FALSE(processing_time[0].timestamp.has_value());
  h.EndInput();
  EXPECT_EQ(h.ExtractOutputRecords(), Records{At("end", kMaxWatermark.millis())});
  EXPECT_EQ(h.op().records_out(), 4);
}

TEST(KeyedProcessOperatorOutput, ATimestampTheFunctionSetsIsKept) {
  KeyedOperatorTestHarness h(std::make_unique<EchoFunction>(), {});
  ASSERT_OK(h.Open());
  ASSERT_OK(h.ProcessElement("explicit", 1000));
  EXPECT_EQ(h.ExtractOutputRecords(), Records{At("explicit", 7)});
}

TEST(KeyedProcessOperatorOutput, ExtractOutputGivesTheLines) {
  KeyedOperatorTestHarness h(std::make_unique<EchoFunction>(), {});
  ASSERT_OK(h.Open());
  ASSERT_OK(h.ProcessElement("a", 5));
  EXPECT_EQ(h.ExtractOutput(), std::vector<std::string>{R"({"element":5})"});
  EXPECT_TRUE(h.ExtractOutputRecords().empty());
}

// Fails in the call named by `where` (by throwing `what`, or by Open's error); counts calls.
class FaultyFunction final : public KeyedFunction {
 public:
  enum class How { kRuntimeError, kInt, kOpenError };
  FaultyFunction(UserCall where, How how, int* calls) : where_(where), how_(how), calls_(calls) {}

  Status Open(RuntimeContext&) override {
    if (where_ == UserCall::kOpen && how_ == How::kOpenError) {
      return InvalidArgument("the lookup table /data/t.csv does not exist");
    }
    Maybe(UserCall::kOpen);
    return Status::Ok();
  }
  void ProcessElement(const Record& r, Context& ctx, Collector<OutputRecord>& out) override {
    ++*calls_;
    out.Collect(std::string("element"));
    ctx.timer_service().RegisterEventTimeTimer(r.timestamp);
    ctx.timer_service().RegisterProcessingTimeTimer(r.timestamp);
    Maybe(UserCall::kProcessElement);
  }
  void OnTimer(Timestamp, OnTimerContext&, Collector<OutputRecord>&) override {
    ++*calls_;
    Maybe(UserCall::kOnTimer);
  }
  void EndInput(Context&, Collector<OutputRecord>&) override {
    ++*calls_;
    Maybe(UserCall::kEndInput);
  }
  void Close() override { Maybe(UserCall::kClose); }

 private:
  void Maybe(UserCall call) {
    if (call != where_) return;
    if (how_ == How::kInt) throw 42;
    throw std::runtime_error("bad value in field 'amount'");
  }
  UserCall where_;
  How how_;
  int* calls_;
};

KeyedOperatorTestHarness::Options Named() {
  KeyedOperatorTestHarness::Options o;
  o.job_name = "sessions";
  o.library_name = "libsessions.so";
  return o;
}

class KeyedProcessOperatorFailures : public ::testing::Test {
 protected:
  // A harness around a function that fails in `where` as `how` and counts its calls in calls_.
  KeyedOperatorTestHarness& Faulty(UserCall where, FaultyFunction::How how,
                                   KeyedOperatorTestHarness::Options options = Named()) {
    harness_ = std::make_unique<KeyedOperatorTestHarness>(
        std::make_unique<FaultyFunction>(where, how, &calls_), std::move(options));
    return *harness_;
  }

  int calls_ = 0;
  std::unique_ptr<KeyedOperatorTestHarness> harness_;
};

TEST_F(KeyedProcessOperatorFailures, OpenReturningAnErrorNamesTheJobTheLibraryAndTheCall) {
  KeyedOperatorTestHarness& h = Faulty(UserCall::kOpen, FaultyFunction::How::kOpenError);
  Status s = h.Open();
  EXPECT_EQ(s, InvalidArgument("function of job 'sessions' (libsessions.so) failed in Open: the "
                               "lookup table /data/t.csv does not exist"));
  EXPECT_EQ(h.failure(), s);
  // No element reaches a function whose Open failed.
  EXPECT_EQ(h.ProcessElement("a", 1).message(), s.message());
  EXPECT_EQ(calls_, 0);
}

TEST_F(KeyedProcessOperatorFailures, OpenThrowingIsReportedWithTheExceptionType) {
  KeyedOperatorTestHarness& h = Faulty(UserCall::kOpen, FaultyFunction::How::kRuntimeError);
  EXPECT_EQ(h.Open(), Internal("function of job 'sessions' (libsessions.so) threw "
                               "std::runtime_error in Open: bad value in field 'amount'"));
}

TEST_F(KeyedProcessOperatorFailures, ProcessElementThrowingFailsAndTheFunctionIsNotCalledAgain) {
  KeyedOperatorTestHarness& h =
      Faulty(UserCall::kProcessElement, FaultyFunction::How::kRuntimeError);
  ASSERT_OK(h.Open());
  Status s = h.ProcessElement("a", 1);
  EXPECT_EQ(s.message(),
            "function of job 'sessions' (libsessions.so) threw std::runtime_error in "
            "ProcessElement: bad value in field 'amount'");
  EXPECT_EQ(h.failure(), s);
  EXPECT_EQ(h.ExtractOutput(), std::vector<std::string>{"element"});  // before it threw
  EXPECT_EQ(h.ProcessElement("b", 2), s);
  h.ProcessWatermark(100);  // the registered timers do not fire into a failed function
  h.SetProcessingTime(100);
  h.EndInput();
  EXPECT_EQ(calls_, 1);
  EXPECT_OK(h.Close());  // Close still runs, once
  EXPECT_OK(h.Close());
}

TEST_F(KeyedProcessOperatorFailures, ANonStandardExceptionIsNamedByItsType) {
  KeyedOperatorTestHarness& h = Faulty(UserCall::kProcessElement, FaultyFunction::How::kInt);
  ASSERT_OK(h.Open());
  EXPECT_EQ(h.ProcessElement("a", 1).message(),
            "function of job 'sessions' (libsessions.so) threw an exception of type int (not a "
            "std::exception) in ProcessElement");
}

TEST_F(KeyedProcessOperatorFailures, AnEventTimeTimerThrowingIsTheFailureAndTheListenerHearsIt) {
  KeyedOperatorTestHarness& h = Faulty(UserCall::kOnTimer, FaultyFunction::How::kRuntimeError);
  std::vector<std::string> heard;
  h.op().SetFailureListener([&](const Status& s) { heard.push_back(s.message()); });
  ASSERT_OK(h.Open());
  ASSERT_OK(h.ProcessElement("a", 1));
  ASSERT_OK(h.ProcessElement("b", 1));
  h.ProcessWatermark(1);  // two timers due: the first throws, the second is not called
  const std::string expected =
      "function of job 'sessions' (libsessions.so) threw std::runtime_error in OnTimer: bad "
      "value in field 'amount'";
  EXPECT_EQ(h.failure().message(), expected);
  EXPECT_EQ(heard, std::vector<std::string>{expected});
  EXPECT_EQ(calls_, 3);
  EXPECT_EQ(h.ProcessElement("c", 2).message(), expected);
}

TEST_F(KeyedProcessOperatorFailures, AProcessingTimeTimerThrowingIsTheFailure) {
  KeyedOperatorTestHarness& h = Faulty(UserCall::kOnTimer, FaultyFunction::How::kRuntimeError);
  ASSERT_OK(h.Open());
  ASSERT_OK(h.ProcessElement("a", 5));
  h.SetProcessingTime(5);
  EXPECT_EQ(h.failure().message(),
            "function of job 'sessions' (libsessions.so) threw std::runtime_error in OnTimer: bad "
            "value in field 'amount'");
}

TEST_F(KeyedProcessOperatorFailures, EndInputThrowingIsReturnedByTheOperator) {
  KeyedOperatorTestHarness& h = Faulty(UserCall::kEndInput, FaultyFunction::How::kRuntimeError);
  ASSERT_OK(h.Open());
  Status s = h.op().EndInput();
  EXPECT_EQ(s.message(),
            "function of job 'sessions' (libsessions.so) threw std::runtime_error in EndInput: "
            "bad value in field 'amount'");
  EXPECT_EQ(h.failure(), s);
}

TEST_F(KeyedProcessOperatorFailures, CloseThrowingIsReturnedByClose) {
  KeyedOperatorTestHarness& h = Faulty(UserCall::kClose, FaultyFunction::How::kRuntimeError);
  ASSERT_OK(h.Open());
  EXPECT_EQ(h.Close().message(),
            "function of job 'sessions' (libsessions.so) threw std::runtime_error in Close: bad "
            "value in field 'amount'");
}

TEST_F(KeyedProcessOperatorFailures, WithoutALibraryTheMessageNamesOnlyTheJob) {
  KeyedOperatorTestHarness& h = Faulty(UserCall::kOpen, FaultyFunction::How::kOpenError, {});
  EXPECT_EQ(h.Open().message(),
            "function of job 'test-job' failed in Open: the lookup table /data/t.csv does not "
            "exist");
}

}  // namespace
}  // namespace keyflow
