// HeadlessChromium: loads a page in Debian's `chromium --headless=new` for the dashboard tests
// (dashboard_test.cc) and scripts/dashboard-screenshot.sh's test, and returns the DOM after a
// virtual-time budget (--dump-dom) or writes a screenshot.
//
// Virtual time: Chromium runs the page's timers as fast as it can while no network fetch is
// pending, so a budget of 10 s at a 1 s poll interval is 10 polls in well under a second of real
// time. Each run is a child process in its own session (setsid), with its own temporary
// --user-data-dir; it is bounded by a real-time timeout, after which its whole process group is
// SIGKILLed. RAII: the group is killed and the profile removed also when a test fails half-way.
//
// Threading: one test thread.
#pragma once

#include <string>

#include "common/status.h"
#include "common/types.h"

namespace keyflow::test {

struct ChromiumRun {
  Duration virtual_time_budget = Duration::Seconds(5);
  Duration timeout = Duration::Seconds(90);  // real time, for the whole run
  int width = 1400;
  int height = 1000;
  // Set: write a PNG here (--screenshot) instead of dumping the DOM.
  std::string screenshot_path;
};

// True if `chromium` is on PATH.
bool ChromiumAvailable();

// The serialized DOM of `url` after run.virtual_time_budget (--dump-dom); "" for a screenshot
// run. `work_dir` (existing) gets the profile and chromium.log. Errors: chromium cannot start,
// exits non-zero (the message has the log's tail), or exceeds run.timeout.
Result<std::string> RunHeadlessChromium(const std::string& url, const std::string& work_dir,
                                        const ChromiumRun& run = {});

}  // namespace keyflow::test
