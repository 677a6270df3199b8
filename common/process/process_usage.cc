#include "common/process/process_usage.h"

#include <dirent.h>
#include <unistd.h>

#include <charconv>
#include <fstream>
#include <sstream>
#include <vector>

namespace keyflow {

namespace {

// Whitespace-separated fields of `text`.
std::vector<std::string_view> Fields(std::string_view text) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && (text[i] == ' ' || text[i] == '\n' || text[i] == '\t')) ++i;
    size_t start = i;
    while (i < text.size() && text[i] != ' ' && text[i] != '\n' && text[i] != '\t') ++i;
    if (i > start) out.push_back(text.substr(start, i - start));
  }
  return out;
}

Result<int64_t> ParseCount(std::string_view field, std::string_view what) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), v);
  if (ec != std::errc() || end != field.data() + field.size() || v < 0) {
    return Corruption(std::string(what) + " is not a non-negative integer: '" + std::string(field) +
                      "'");
  }
  return v;
}

Result<std::string> ReadSmallFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return IoError("cannot read " + path + ": is /proc mounted? (process usage needs Linux /proc)");
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

Result<CpuTicks> ParseProcStatCpuTicks(std::string_view stat) {
  size_t close = stat.rfind(')');
  if (close == std::string_view::npos) {
    return Corruption("/proc stat line has no ')' after the command name");
  }
  // After ')': field 3 (state) onwards; utime is field 14, stime field 15.
  std::vector<std::string_view> f = Fields(stat.substr(close + 1));
  constexpr size_t kUtime = 14 - 3, kStime = 15 - 3;
  if (f.size() <= kStime) {
    return Corruption("/proc stat line has " + std::to_string(f.size() + 2) +
                      " fields, expected at least 15");
  }
  CpuTicks t;
  KF_ASSIGN_OR_RETURN(t.user, ParseCount(f[kUtime], "utime"));
  KF_ASSIGN_OR_RETURN(t.system, ParseCount(f[kStime], "stime"));
  return t;
}

Result<int64_t> ParseStatmResidentPages(std::string_view statm) {
  std::vector<std::string_view> f = Fields(statm);
  if (f.size() < 2) {
    return Corruption("/proc statm line has " + std::to_string(f.size()) +
                      " fields, expected at least 2");
  }
  return ParseCount(f[1], "resident pages");
}

Result<ProcessUsage> ParseProcessUsage(std::string_view stat, std::string_view statm,
                                       int64_t ticks_per_second, int64_t page_size,
                                       int64_t open_fds) {
  KF_CHECK(ticks_per_second > 0);
  KF_CHECK(page_size > 0);
  KF_ASSIGN_OR_RETURN(CpuTicks ticks, ParseProcStatCpuTicks(stat));
  KF_ASSIGN_OR_RETURN(int64_t pages, ParseStatmResidentPages(statm));
  ProcessUsage u;
  u.rss_bytes = pages * page_size;
  u.cpu_user_ms = ticks.user * 1000 / ticks_per_second;
  u.cpu_system_ms = ticks.system * 1000 / ticks_per_second;
  u.open_fds = open_fds;
  return u;
}

Result<int64_t> CountOpenFds(const std::string& fd_dir) {
  DIR* dir = opendir(fd_dir.c_str());
  if (dir == nullptr) {
    return IoError("cannot list " + fd_dir +
                   ": is /proc mounted? (process usage needs Linux /proc)");
  }
  int64_t n = 0;
  while (const dirent* e = readdir(dir)) {
    if (e->d_name[0] != '.') ++n;
  }
  closedir(dir);
  // One of the entries is the descriptor opendir used for the listing itself.
  return n > 0 ? n - 1 : 0;
}

Result<ProcessUsage> ReadProcessUsage() {
  KF_ASSIGN_OR_RETURN(std::string stat, ReadSmallFile("/proc/self/stat"));
  KF_ASSIGN_OR_RETURN(std::string statm, ReadSmallFile("/proc/self/statm"));
  KF_ASSIGN_OR_RETURN(int64_t fds, CountOpenFds("/proc/self/fd"));
  static const int64_t ticks = sysconf(_SC_CLK_TCK);
  static const int64_t page = sysconf(_SC_PAGESIZE);
  return ParseProcessUsage(stat, statm, ticks > 0 ? ticks : 100, page > 0 ? page : 4096, fds);
}

}  // namespace keyflow
