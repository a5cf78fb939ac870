// Helpers for tests that drive the Engine without a transport (Call and
// Collector are in tests/common/test_tools.h).
#ifndef TOOLEXEC_TESTS_UNIT_ENGINE_TEST_UTIL_H_
#define TOOLEXEC_TESTS_UNIT_ENGINE_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "absl/synchronization/notification.h"
#include "core/engine.h"
#include "core/policy.h"
#include "server/tool_catalogue.h"
#include "tests/common/test_tools.h"
#include "tools/runtime/tool_runner.h"

namespace toolexec::testing {

// The catalogue options with the example tools.
inline ToolCatalogueOptions WithExampleTools() {
  ToolCatalogueOptions tools;
  tools.example_tools = true;
  return tools;
}

inline PolicyRuleOptions Rule(std::string name, std::string tool, PolicyDecision d) {
  PolicyRuleOptions r;
  r.name = std::move(name);
  r.tool = std::move(tool);
  r.decision = d;
  return r;
}

// A rule with a path_glob.
inline PolicyRuleOptions PathRule(std::string name, std::string tool, PolicyDecision d,
                                  std::string glob) {
  PolicyRuleOptions r = Rule(std::move(name), std::move(tool), d);
  r.path_glob = std::move(glob);
  return r;
}

// Closes `session` and waits for the engine's answer, which must be OK.
inline void CloseSessionAndWait(Engine& engine, const CallerIdentity& caller,
                                const std::string& session) {
  absl::Notification closed;
  engine.CloseSession(caller, session, MergeOptions(), [&](absl::StatusOr<MergeResult> r) {
    EXPECT_TRUE(r.ok()) << r.status();
    closed.Notify();
  });
  closed.WaitForNotification();
}

}  // namespace toolexec::testing

#endif  // TOOLEXEC_TESTS_UNIT_ENGINE_TEST_UTIL_H_
