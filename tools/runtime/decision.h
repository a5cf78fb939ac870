// What a permission policy decides about a call, the one decision enum of
// the daemon: the policy's rules and profiles (core/policy.h), the metrics of
// its decisions (metrics.h) and the config's Decision all speak it.
#ifndef TOOLEXEC_TOOLS_RUNTIME_DECISION_H_
#define TOOLEXEC_TOOLS_RUNTIME_DECISION_H_

#include "absl/strings/string_view.h"

namespace toolexec {

// Mirrors toolexec.v1.Decision; declared from the most permissive to the
// strictest, so the stricter of two is the larger.
enum class PolicyDecision { kAllow, kAsk, kDeny };

// "allow", "ask" or "deny": a decision as the config, the audit log and the
// metrics' labels name it.
inline absl::string_view PolicyDecisionName(PolicyDecision d) {
  switch (d) {
    case PolicyDecision::kAllow:
      return "allow";
    case PolicyDecision::kAsk:
      return "ask";
    case PolicyDecision::kDeny:
      return "deny";
  }
  return "unknown";
}

}  // namespace toolexec

#endif  // TOOLEXEC_TOOLS_RUNTIME_DECISION_H_
