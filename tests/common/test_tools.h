// Tools for tests: a tool whose behaviour is a lambda, so each test states
// exactly what the tool does.
#ifndef TOOLEXEC_TESTS_COMMON_TEST_TOOLS_H_
#define TOOLEXEC_TESTS_COMMON_TEST_TOOLS_H_

#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "tools/runtime/json.h"
#include "tools/runtime/session.h"
#include "tools/runtime/tool.h"
#include "tools/runtime/tool_context.h"
#include "tools/runtime/tool_runner.h"

namespace toolexec::testing {

class FnTool final : public Tool {
 public:
  using Fn = std::function<absl::StatusOr<Json>(const JsonValue& args, ToolContext& ctx)>;

  FnTool(std::string name, std::string schema, Fn fn, bool needs_context = false)
      : FnTool(Spec(std::move(name), std::move(schema), needs_context), std::move(fn)) {}
  FnTool(ToolSpec spec, Fn fn) : Tool(std::move(spec)), fn_(std::move(fn)) {}

  absl::StatusOr<Json> Call(const JsonValue& args, ToolContext& ctx) const override {
    return fn_(args, ctx);
  }

 private:
  static ToolSpec Spec(std::string name, std::string schema, bool needs_context) {
    ToolSpec spec(name, "test tool " + name, std::move(schema));
    spec.needs_context = needs_context;
    return spec;
  }

  Fn fn_;
};

inline constexpr const char* kAnyObject = R"({"type":"object"})";

inline std::unique_ptr<Tool> MakeTool(std::string name, FnTool::Fn fn,
                                      std::string schema = kAnyObject,
                                      bool needs_context = false) {
  return std::make_unique<FnTool>(std::move(name), std::move(schema), std::move(fn),
                                  needs_context);
}

// Parses JSON text that a test knows is valid.
inline Json J(const std::string& text) {
  auto parsed = ParseJson(text);
  if (!parsed.ok()) throw std::runtime_error("bad test JSON: " + text);
  return std::move(*parsed);
}

// Collects a batch's results; Wait() returns once the batch is done.
class Collector final : public BatchObserver {
 public:
  void OnProgress(ProgressEvent) override {}
  void OnResult(ToolCallResult result) override { results.push_back(std::move(result)); }
  void OnBatchDone() override { done_.Notify(); }
  void Wait() { done_.WaitForNotification(); }
  std::vector<ToolCallResult> results;

 private:
  absl::Notification done_;
};

// A call with arguments as JSON text ("" = none).
inline CallRequest Call(const std::string& id, const std::string& name,
                        const std::string& args = "") {
  CallRequest c;
  c.id = id;
  c.name = name;
  c.args_json = args;
  return c;
}

// Runs one call (id "1") through `runner` and returns its result; a refused
// batch throws, which fails the test.
inline ToolCallResult RunOneCall(ToolRunner& runner, const std::string& name,
                                 const std::string& args_json,
                                 std::shared_ptr<Session> session = nullptr,
                                 std::optional<absl::Duration> timeout = std::nullopt,
                                 size_t model_content_max_chars = 0) {
  BatchRequest req;
  req.session = std::move(session);
  req.timeout = timeout;
  req.model_content_max_chars = model_content_max_chars;
  req.calls.push_back(CallRequest{.id = "1", .name = name, .args_json = args_json});
  auto r = runner.Run(std::move(req));
  if (!r.ok()) throw std::runtime_error(r.status().ToString());
  return std::move(r->at(0));
}

}  // namespace toolexec::testing

#endif  // TOOLEXEC_TESTS_COMMON_TEST_TOOLS_H_
