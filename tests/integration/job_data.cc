#include "tests/integration/job_data.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>

#include "tests/integration/child_process.h"
#include "tests/testutil/status_matchers.h"

namespace keyflow::test {
namespace {

int64_t FloorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if (a % b != 0 && a < 0) --q;
  return q;
}

Result<int64_t> IntField(const nlohmann::json& line, const char* name) {
  auto it = line.find(name);
  if (it == line.end() || !it->is_number_integer()) {
    return InvalidArgument(std::string("output line without integer \"") + name +
                           "\": " + line.dump());
  }
  return it->get<int64_t>();
}

Result<std::string> StringField(const nlohmann::json& line, const char* name) {
  auto it = line.find(name);
  if (it == line.end() || !it->is_string()) {
    return InvalidArgument(std::string("output line without string \"") + name +
                           "\": " + line.dump());
  }
  return it->get<std::string>();
}

std::string CountWindowLine(const std::string& key, int64_t count, int64_t start, int64_t time,
                            const char* cause) {
  return key + "|" + std::to_string(count) + "|" + std::to_string(start) + "|" +
         std::to_string(time) + "|" + cause;
}

}  // namespace

Result<JsonLinesInput> WriteJsonLinesInput(const std::string& dir, const JsonLinesInputOptions& o) {
  JsonLinesInput input;
  std::mt19937_64 rng(o.seed);
  const int keys_per_file = o.hot_keys_per_file + o.cold_keys_per_file;
  for (int f = 0; f < o.files; ++f) {
    char name[32];
    std::snprintf(name, sizeof(name), "part-%02d.jsonl", f);
    std::string path = dir + "/" + name;
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    if (!out) return IoError("cannot create " + path);
    std::uniform_real_distribution<double> coin(0.0, 1.0);
    std::uniform_int_distribution<int> hot(0, o.hot_keys_per_file - 1);
    std::uniform_int_distribution<int> cold(o.hot_keys_per_file, keys_per_file - 1);
    std::uniform_int_distribution<int64_t> jitter(0, o.max_disorder_ms - 1);
    const int64_t file_start = o.start_ms + f * o.span_ms_per_file;
    std::string line;
    for (int64_t j = 0; j < o.records_per_file; ++j) {
      int local = coin(rng) < o.hot_share ? hot(rng) : cold(rng);
      std::string key = "user-" + std::to_string(static_cast<int64_t>(local) * o.files + f);
      int64_t ts = file_start + j * o.span_ms_per_file / o.records_per_file + jitter(rng);
      line = "{\"uid\":\"" + key + "\",\"ts\":" + std::to_string(ts) +
             ",\"seq\":" + std::to_string(j) + "}\n";
      out << line;
      input.records[key].push_back(ts);
      ++input.total_records;
    }
    out.close();
    if (!out) return IoError("cannot write " + path);
    input.files.push_back(path);
  }
  return input;
}

std::vector<std::string> ReferenceCountWindow(const KeyedTimestamps& input, int64_t count,
                                              int64_t timeout_ms) {
  std::vector<std::string> out;
  for (const auto& [key, timestamps] : input) {
    bool open = false;
    int64_t n = 0, start = 0, deadline = 0;
    for (int64_t ts : timestamps) {
      if (open && ts >= deadline) {
        out.push_back(CountWindowLine(key, n, start, deadline, "timeout"));
        open = false;
      }
      if (!open) {
        open = true;
        n = 0;
        start = ts;
        deadline = ts + timeout_ms;
      }
      if (++n >= count) {
        out.push_back(CountWindowLine(key, n, start, ts, "count"));
        open = false;
      }
    }
    if (open) out.push_back(CountWindowLine(key, n, start, deadline, "timeout"));
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> ReferenceTumblingCount(const KeyedTimestamps& input, int64_t size_ms) {
  std::vector<std::string> out;
  for (const auto& [key, timestamps] : input) {
    std::map<int64_t, int64_t> windows;
    for (int64_t ts : timestamps) ++windows[FloorDiv(ts, size_ms) * size_ms];
    for (const auto& [start, n] : windows) {
      out.push_back(key + "|" + std::to_string(start) + "|" + std::to_string(start + size_ms) +
                    "|" + std::to_string(n));
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

Result<std::string> CanonicalCountWindow(const nlohmann::json& line) {
  KF_ASSIGN_OR_RETURN(std::string key, StringField(line, "key"));
  KF_ASSIGN_OR_RETURN(int64_t count, IntField(line, "count"));
  KF_ASSIGN_OR_RETURN(int64_t start, IntField(line, "start"));
  KF_ASSIGN_OR_RETURN(int64_t time, IntField(line, "time"));
  KF_ASSIGN_OR_RETURN(std::string cause, StringField(line, "cause"));
  return CountWindowLine(key, count, start, time, cause.c_str());
}

Result<std::string> CanonicalTumblingCount(const nlohmann::json& line) {
  KF_ASSIGN_OR_RETURN(std::string key, StringField(line, "key"));
  KF_ASSIGN_OR_RETURN(int64_t start, IntField(line, "window_start"));
  KF_ASSIGN_OR_RETURN(int64_t end, IntField(line, "window_end"));
  KF_ASSIGN_OR_RETURN(int64_t count, IntField(line, "count"));
  return key + "|" + std::to_string(start) + "|" + std::to_string(end) + "|" +
         std::to_string(count);
}

Result<JobOutput> ReadJobOutput(const std::string& dir) {
  namespace fs = std::filesystem;
  JobOutput output;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    std::string name = e.path().filename().string();
    if (name.empty() || name[0] == '.' || name[0] == '_' || !e.is_regular_file()) continue;
    output.files.push_back(e.path().string());
  }
  if (ec) return IoError("cannot list " + dir + ": " + ec.message());
  std::sort(output.files.begin(), output.files.end());
  for (const std::string& path : output.files) {
    std::ifstream in(path);
    std::string text;
    int64_t line_number = 0;
    while (std::getline(in, text)) {
      ++line_number;
      if (text.empty()) continue;
      nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
      if (!j.is_object()) {
        return Corruption(path + ":" + std::to_string(line_number) +
                          ": not a JSON object: " + text);
      }
      output.lines.push_back(std::move(j));
    }
  }
  return output;
}

std::map<std::string, int64_t> CountsPerKey(const std::vector<nlohmann::json>& lines) {
  std::map<std::string, int64_t> counts;
  for (const nlohmann::json& l : lines) {
    counts[l.value("key", std::string())] += l.value("count", int64_t{0});
  }
  return counts;
}

std::map<std::string, int64_t> RecordsPerKey(const KeyedTimestamps& input) {
  std::map<std::string, int64_t> counts;
  for (const auto& [key, timestamps] : input) {
    counts[key] = static_cast<int64_t>(timestamps.size());
  }
  return counts;
}

::testing::AssertionResult SameLines(const std::vector<std::string>& actual,
                                     const std::vector<std::string>& expected) {
  std::vector<std::string> missing, extra;
  std::set_difference(expected.begin(), expected.end(), actual.begin(), actual.end(),
                      std::back_inserter(missing));
  std::set_difference(actual.begin(), actual.end(), expected.begin(), expected.end(),
                      std::back_inserter(extra));
  if (missing.empty() && extra.empty()) return ::testing::AssertionSuccess();
  auto first = [](const std::vector<std::string>& v) {
    std::string s;
    for (size_t i = 0; i < v.size() && i < 5; ++i) s += "\n    " + v[i];
    return s;
  };
  return ::testing::AssertionFailure()
         << actual.size() << " lines, expected " << expected.size() << ": " << missing.size()
         << " expected lines missing, e.g." << first(missing) << "\n  " << extra.size()
         << " unexpected lines, e.g." << first(extra);
}

void ExpectSameLines(const std::vector<std::string>& actual,
                     const std::vector<std::string>& expected, const std::string& what) {
  EXPECT_TRUE(SameLines(actual, expected)) << what;
}

void ExpectCountWindowOutput(const std::string& dir, const std::vector<std::string>& expected,
                             const std::string& what) {
  auto actual = CanonicalCountWindowOutput(dir);
  ASSERT_OK(actual);
  ExpectSameLines(*actual, expected, what);
}

std::vector<std::string> CountWindowRunArgs(const std::string& input, const std::string& output,
                                            int64_t count, int64_t timeout_ms,
                                            std::vector<std::string> extra) {
  std::vector<std::string> args = {"run",
                                   "--job",
                                   "count-window",
                                   "--param",
                                   "time=event",
                                   "--param",
                                   "count=" + std::to_string(count),
                                   "--param",
                                   "timeout=" + std::to_string(timeout_ms) + "ms",
                                   "--input",
                                   input,
                                   "--output",
                                   output};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

std::map<std::string, std::string> CommittedFiles(const std::string& dir) {
  std::map<std::string, std::string> files;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.empty() || name[0] == '.' || name[0] == '_') continue;
    files[name] = ReadFileOrEmpty(e.path().string());
  }
  return files;
}

void ExpectCommittedFilesKept(const std::map<std::string, std::string>& committed,
                              const std::string& dir) {
  const std::map<std::string, std::string> after = CommittedFiles(dir);
  for (const auto& [name, content] : committed) {
    auto it = after.find(name);
    if (it == after.end()) {
      ADD_FAILURE() << "committed file " << name << " of " << dir << " was deleted";
    } else {
      EXPECT_EQ(it->second, content)
          << "committed file " << name << " of " << dir << " was changed";
    }
  }
}

Result<std::vector<std::string>> CanonicalCountWindowOutput(const std::string& dir) {
  KF_ASSIGN_OR_RETURN(JobOutput out, ReadJobOutput(dir));
  std::vector<std::string> lines;
  for (const nlohmann::json& line : out.lines) {
    KF_ASSIGN_OR_RETURN(std::string c, CanonicalCountWindow(line));
    lines.push_back(std::move(c));
  }
  std::sort(lines.begin(), lines.end());
  return lines;
}

std::vector<std::string> ClosedByCount(const std::vector<std::string>& reference) {
  std::vector<std::string> out;
  for (const std::string& line : reference) {
    if (line.size() > 6 && line.compare(line.size() - 6, 6, "|count") == 0) out.push_back(line);
  }
  return out;
}

Result<std::string> JoinedColumns(const nlohmann::json& line,
                                  const std::vector<std::string>& fields) {
  std::string joined;
  for (const std::string& f : fields) {
    if (!line.contains(f)) return InvalidArgument("no \"" + f + "\" in " + line.dump());
    const nlohmann::json& v = line[f];
    joined += (joined.empty() ? "" : "|") + (v.is_string() ? v.get<std::string>() : v.dump());
  }
  return joined;
}

Result<std::vector<std::string>> OutputColumns(const std::string& dir,
                                               const std::vector<std::string>& fields) {
  KF_ASSIGN_OR_RETURN(JobOutput out, ReadJobOutput(dir));
  std::vector<std::string> lines;
  lines.reserve(out.lines.size());
  for (const nlohmann::json& line : out.lines) {
    KF_ASSIGN_OR_RETURN(std::string joined, JoinedColumns(line, fields));
    lines.push_back(std::move(joined));
  }
  std::sort(lines.begin(), lines.end());
  return lines;
}

}  // namespace keyflow::test
