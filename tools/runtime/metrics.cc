#include "tools/runtime/metrics.h"

#include "tools/runtime/tool_runner.h"

namespace toolexec {

ProcessCountersData& ProcessCounters() {
  static auto* counters = new ProcessCountersData();  // never destroyed: read at exit
  return *counters;
}

absl::string_view ResultStatusLabel(ResultStatus status) {
  switch (status) {
    case ResultStatus::kSuccess:
      return "success";
    case ResultStatus::kError:
      return "error";
    case ResultStatus::kTimeout:
      return "timeout";
    case ResultStatus::kCancelled:
      return "cancelled";
    case ResultStatus::kDenied:
      return "denied";
  }
  return "error";
}

}  // namespace toolexec
