// Helpers for tests that drive the Engine (or its policy) without a transport.
#ifndef TOOLEXEC_TESTS_UNIT_ENGINE_TEST_UTIL_H_
#define TOOLEXEC_TESTS_UNIT_ENGINE_TEST_UTIL_H_

#include <string>
#include <utility>

#include "core/policy.h"
#include "tools/runtime/tool_runner.h"

namespace toolexec::testing {

inline CallRequest Call(const std::string& id, const std::string& name,
                        const std::string& args = "") {
  CallRequest c;
  c.id = id;
  c.name = name;
  c.args_json = args;
  return c;
}

inline PolicyRuleOptions Rule(std::string name, std::string tool, PolicyDecision d) {
  PolicyRuleOptions r;
  r.name = std::move(name);
  r.tool = std::move(tool);
  r.decision = d;
  return r;
}

}  // namespace toolexec::testing

#endif  // TOOLEXEC_TESTS_UNIT_ENGINE_TEST_UTIL_H_
