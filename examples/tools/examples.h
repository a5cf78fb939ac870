// The example tools from the SDK docs, and the worked example of writing a
// custom C++ tool (see README). Each is one class in its own .cc file:
//
//   get_weather      a stateless, read-only tool returning an object
//   counter          a tool that needs a session (NeedsContext) and keeps its state [Context]
//   check_inventory  a tool with shared state of its own, guarded by a mutex
//   calculate_sum    a tool returning a non-object value (sent as {"result": v}, [Failures are results])
//   wait             a long-running tool that honours cancellation
//
// Thread safety: the runtime calls one instance of each tool from many threads
// at once (see tool.h). get_weather, counter, calculate_sum and wait hold no
// state; check_inventory guards its stock with a mutex.
#ifndef TOOLEXEC_EXAMPLES_TOOLS_EXAMPLES_H_
#define TOOLEXEC_EXAMPLES_TOOLS_EXAMPLES_H_

#include <cstdint>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "tools/runtime/json.h"
#include "tools/runtime/tool.h"
#include "tools/runtime/tool_registry.h"

namespace toolexec::examples {

// get_weather{city?: string} -> {"temperature": 22, "condition": "sunny",
// "city": <city>}. A canned answer (no network): the smallest useful tool.
// A missing city is reported as "Unknown".
class GetWeatherTool final : public Tool {
 public:
  GetWeatherTool();
  absl::StatusOr<Json> Call(const JsonValue& args, ToolContext& ctx) const override;
  // [Display]: "Weather in <city>".
  std::string display_title(const JsonValue& input) const override;
};

// counter{} -> {"count": n}: increments the session's state key "count"
// (absent counts as 0) and returns the new value. Needs a session [Context]: without
// one the runner fails the call with NO_CONTEXT before Call() runs. A "count"
// that holds something other than an integer is left alone and fails the call.
class CounterTool final : public Tool {
 public:
  CounterTool();
  absl::StatusOr<Json> Call(const JsonValue& args, ToolContext& ctx) const override;
};

// check_inventory{item: string} -> {"item": item, "count": n}. Reads a stock
// shared by every call (and every session); an unknown item has count 0.
// Starts with apples 10, bananas 5, oranges 0.
class CheckInventoryTool final : public Tool {
 public:
  CheckInventoryTool();

  absl::StatusOr<Json> Call(const JsonValue& args, ToolContext& ctx) const override;

  // Sets the stock of `item`. For the embedding program (or a test); may run
  // while calls are in flight, which is why the stock is guarded.
  void SetCount(absl::string_view item, int64_t count) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // Call() is const, so the lock it takes must be mutable.
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, int64_t> stock_ ABSL_GUARDED_BY(mu_);
};

// calculate_sum{numbers: number[]} -> "Sum: <total>", a string, which the
// runner sends as {"result": "Sum: 6"} [Failures are results]. Whole totals print without ".0".
class CalculateSumTool final : public Tool {
 public:
  CalculateSumTool();
  absl::StatusOr<Json> Call(const JsonValue& args, ToolContext& ctx) const override;
};

// wait{ms: integer in [0, 3600000], value?: any} -> {"waited_ms": ms,
// "value": value} (null when absent), after sleeping `ms`. The sleep ends
// early when the call is cancelled or times out, failing the call with
// Cancelled "wait cancelled after N ms".
class WaitTool final : public Tool {
 public:
  WaitTool();
  absl::StatusOr<Json> Call(const JsonValue& args, ToolContext& ctx) const override;
};

// Registers the five example tools with source "example", in this order:
// get_weather, counter, check_inventory, calculate_sum, wait.
// Fails (registering the ones before) on the first tool the registry refuses,
// e.g. AlreadyExists when a tool of the same name is already registered.
absl::Status RegisterExampleTools(ToolRegistry& registry);

}  // namespace toolexec::examples

#endif  // TOOLEXEC_EXAMPLES_TOOLS_EXAMPLES_H_
