#include "tools/runtime/metrics.h"

#include "tools/runtime/tool_runner.h"

namespace toolexec {

ProcessCountersData& ProcessCounters() {
  static auto* counters = new ProcessCountersData();  // never destroyed: read at exit
  return *counters;
}

}  // namespace toolexec
