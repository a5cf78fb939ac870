#include "mcp/client/server_log.h"

#include <algorithm>

#include "spdlog/spdlog.h"
#include "tools/runtime/utf8.h"

namespace toolexec::mcp {

void ServerLog::Write(absl::string_view what, absl::string_view line) {
  uint64_t resumed = 0;
  {
    absl::MutexLock lock(&mu_);
    const absl::Time now = absl::Now();
    tokens_ = std::min<double>(kServerLogBurst, tokens_ + absl::ToDoubleSeconds(now - refilled_) *
                                                              kServerLogLinesPerSecond);
    refilled_ = now;
    if (tokens_ < 1) {
      ++suppressed_;
      ++suppressed_total_;
      return;
    }
    tokens_ -= 1;
    resumed = suppressed_;
    suppressed_ = 0;
  }
  if (resumed > 0) {
    spdlog::warn("MCP server '{}': {} line(s) it wrote were not logged (over {} a second)",
                 server_name_, resumed, kServerLogLinesPerSecond);
  }
  const bool cut = line.size() > kServerLogLineBytes;
  if (cut) line = line.substr(0, Utf8SafePrefix(line, kServerLogLineBytes));
  const char* more = cut ? " [cut]" : "";
  if (what.empty()) {
    spdlog::warn("MCP server '{}': {}{}", server_name_, std::string(line), more);
  } else {
    spdlog::info("MCP server '{}' {}: {}{}", server_name_, std::string(what), std::string(line),
                 more);
  }
}

uint64_t ServerLog::suppressed_total() const {
  absl::MutexLock lock(&mu_);
  return suppressed_total_;
}

}  // namespace toolexec::mcp
