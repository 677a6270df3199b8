// A valid job library for the loader's tests: one job per parameter type, and a function that
// counts how many of its instances are alive (to check when the library may be unloaded).
#include "common/record.h"
#include "worker/api/job_definition.h"
#include "worker/api/keyed_process_function.h"
#include "worker/api/output.h"

namespace {

class ConstantFunction final : public keyflow::KeyedFunction {
 public:
  explicit ConstantFunction(std::string line) : line_(std::move(line)) {}
  void ProcessElement(const keyflow::Record&, keyflow::Context&,
                      keyflow::Collector<keyflow::OutputRecord>& out) override {
    out.Collect(line_);
  }

 private:
  std::string line_;
};

// Emits {"key":K,"ts":T,"page":P} per record: which key and timestamp fields the runtime used,
// and whether the record's fields arrived.
class EchoFunction final : public keyflow::KeyedFunction {
 public:
  void ProcessElement(const keyflow::Record& r, keyflow::Context& ctx,
                      keyflow::Collector<keyflow::OutputRecord>& out) override {
    auto page = r.GetString("page");
    out.Collect(keyflow::JsonObject()
                    .Add("key", ctx.current_key(), keyflow::KeyType::kLong)
                    .Add("ts", r.timestamp.millis())
                    .Add("page", page.ok() ? std::string(*page) : page.status().message()));
  }
};

std::vector<keyflow::JobDefinition> Jobs() {
  using keyflow::ParamType;
  keyflow::JobDefinition all;
  all.name = "all-types";
  all.description = "emits its parameters once per record";
  all.params = {{"i", ParamType::kInt, "-3", "an int", {}},
                {"p", ParamType::kPositiveInt, "7", "a positive int", {}},
                {"d", ParamType::kDouble, "0.25", "a double", {}},
                {"b", ParamType::kBool, "true", "a bool", {}},
                {"s", ParamType::kString, "", "a string", {}},
                {"gap", ParamType::kDuration, "30min", "a duration", {}},
                {"mode", ParamType::kChoice, "fast", "a choice", {"fast", "slow"}}};
  all.key_field = "user";
  all.key_type = keyflow::KeyType::kLong;
  all.timestamp_field = "time";
  all.reads_fields = true;
  all.create = [](const keyflow::JobParams& p) {
    return std::make_unique<ConstantFunction>(
        std::to_string(p.GetInt("i")) + " " + std::to_string(p.GetInt("p")) + " " +
        std::to_string(p.GetDouble("d")) + " " + (p.GetBool("b") ? "yes" : "no") + " [" +
        p.GetString("s") + "] " + std::to_string(p.GetDuration("gap").millis()) + " " +
        p.GetString("mode"));
  };
  keyflow::JobDefinition none;
  none.name = "no-params";
  none.description = "takes no parameters";
  none.create = [](const keyflow::JobParams&) {
    return std::make_unique<ConstantFunction>("none");
  };
  keyflow::JobDefinition throws;
  throws.name = "create-throws";
  throws.description = "its create function throws";
  throws.create = [](const keyflow::JobParams&) -> std::unique_ptr<keyflow::KeyedFunction> {
    throw std::runtime_error("no such thing");
  };
  keyflow::JobDefinition null;
  null.name = "create-returns-null";
  null.description = "its create function returns null";
  null.create = [](const keyflow::JobParams&) { return std::unique_ptr<keyflow::KeyedFunction>(); };
  keyflow::JobDefinition echo;
  echo.name = "echo";
  echo.description = "emits key, timestamp and field page of every record";
  echo.key_field = "user";
  echo.key_type = keyflow::KeyType::kLong;
  echo.timestamp_field = "time";
  echo.reads_fields = true;
  echo.create = [](const keyflow::JobParams&) { return std::make_unique<EchoFunction>(); };
  return {all, none, throws, null, echo};
}

}  // namespace

KEYFLOW_JOB_LIBRARY(Jobs)
