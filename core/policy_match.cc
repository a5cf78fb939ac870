// Judging one call's facts against the policies: which rule of a policy
// matches (its tool, path, command and domain conditions), the strictest
// verdict of a chain, and which files a walk leaves out.
#include <algorithm>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/clock.h"
#include "core/permissions.h"
#include "core/policy.h"
#include "core/policy_internal.h"
#include "tools/process/command_line.h"

namespace toolexec {

namespace {

// Where `path` (absolute, normalized) lies: relative to the workspace that
// holds it, or "" when none does.
std::optional<std::string> InsideWorkspace(const std::string& path,
                                           const std::vector<std::string>& workspaces) {
  for (const std::string& root : workspaces) {
    if (!PathCovers(root, /*grant_recursive=*/true, path, /*path_recursive=*/false)) continue;
    std::string rel = path.size() > root.size() ? path.substr(root.size()) : "";
    while (!rel.empty() && rel.front() == '/') rel.erase(0, 1);
    return rel.empty() ? "." : rel;
  }
  return std::nullopt;
}

// The built-in tools that run a model's bash command lines: run_command and
// the persistent shell's bash and shell. The policy treats them as one tool,
// so a rule naming any of them judges them all by the same command rules
// (and none is a way around a rule written for another).
bool IsShellTool(absl::string_view name) {
  return name == "run_command" || name == "bash" || name == "shell";
}

bool AnyNeed(const CallFacts& call, PermissionRequirement::Kind kind,
             const std::function<bool(const PermissionRequirement&)>& test) {
  for (const PermissionRequirement& n : call.needs) {
    if (n.kind == kind && test(n)) return true;
  }
  return false;
}

// A path condition of a rule: an allow rule's must hold for EVERY path of
// the call (a call with none is not allowed by it), a deny or ask rule's for
// ANY, so a call that touches one path the rule does not allow is not
// allowed by it.
bool PathCondition(const CallFacts& call, PolicyDecision decision,
                   const std::function<bool(const PermissionRequirement&)>& test) {
  using Kind = PermissionRequirement::Kind;
  if (decision != PolicyDecision::kAllow) return AnyNeed(call, Kind::kPath, test);
  if (!AnyNeed(call, Kind::kPath, [](const PermissionRequirement&) { return true; })) return false;
  return !AnyNeed(call, Kind::kPath,
                  [&](const PermissionRequirement& n) { return !test(n); });
}

}  // namespace

std::string GlobTarget(const std::string& path, const CallFacts& call) {
  std::optional<std::string> rel = InsideWorkspace(path, call.roots);
  if (!rel.has_value() && call.roots.empty() && !call.workspaces.empty()) {
    rel = InsideWorkspace(path, {call.workspaces.front()});
  }
  if (rel.has_value()) return *rel;
  return path.size() > 1 ? path.substr(1) : ".";
}

PolicyVerdict Policy::Evaluate(const CallFacts& call) const {
  PolicyVerdict verdict;
  verdict.policy = name_;
  verdict.decision = default_decision_;
  if (allow_read_only_tools_ && call.read_only) {
    verdict.decision = PolicyDecision::kAllow;
    verdict.rule = "read-only tool";
    return verdict;
  }
  const Rule* best = nullptr;
  std::string best_note;
  using Kind = PermissionRequirement::Kind;
  auto applies = [&](const Rule& rule) {
    switch (rule.bucket) {
      case Bucket::kSpecific:
        return rule.options.tool == call.tool ||
               (call.server_name.empty() && IsShellTool(call.tool) &&
                IsShellTool(rule.options.tool));
      case Bucket::kPrefix:
        return call.server_name == rule.server;
      case Bucket::kGlobal:
        return true;
    }
    return false;
  };
  // The call's command lines, analysed at the first rule that asks. A
  // variable that makes code run, which an allow rule of this policy lets
  // the line set (allow_code_env), is vouched for: deny and ask rules no
  // longer take the line for one that may run anything because of it.
  std::optional<std::vector<CommandNeed>> commands;
  auto analyse_commands = [&] {
    commands.emplace();
    for (const PermissionRequirement& n : call.needs) {
      if (n.kind != Kind::kCommand) continue;
      CommandNeed need = AnalyzeCommandNeed(n);
      for (const Rule& rule : rules_) {
        const PolicyRuleOptions& r = rule.options;
        if (r.allow_code_env.empty() || !applies(rule) ||
            !CommandCovers({&*rule.command}, need, r.allow_code_env)) {
          continue;
        }
        auto& vars = need.code_variables;
        vars.erase(std::remove_if(vars.begin(), vars.end(),
                                  [&](const std::string& v) {
                                    return std::find(r.allow_code_env.begin(),
                                                     r.allow_code_env.end(),
                                                     v) != r.allow_code_env.end();
                                  }),
                   vars.end());
      }
      commands->push_back(std::move(need));
    }
  };
  for (const Rule& rule : rules_) {
    const PolicyRuleOptions& r = rule.options;
    if (!applies(rule)) continue;
    if (best != nullptr && rule.bucket > best->bucket) continue;
    if (rule.glob != nullptr &&
        !PathCondition(call, r.decision, [&](const PermissionRequirement& n) {
          return rule.glob->Match(GlobTarget(n.value, call), /*is_dir=*/false) != nullptr;
        })) {
      continue;
    }
    std::string note;
    if (rule.command.has_value()) {
      if (!commands.has_value()) analyse_commands();
      if (commands->empty()) continue;
      if (r.decision == PolicyDecision::kAllow) {
        // Every command of every line is covered.
        if (!std::all_of(commands->begin(), commands->end(), [&](const CommandNeed& n) {
              return CommandCovers({&*rule.command}, n, r.allow_code_env);
            })) {
          continue;
        }
      } else {
        const CommandNeed* hit = nullptr;
        for (const CommandNeed& n : *commands) {
          if (CommandMayMatch(*rule.command, n)) {
            hit = &n;
            break;
          }
        }
        if (hit == nullptr) continue;
        if (!rule.command->matches_everything() &&
            std::none_of(hit->line.commands.begin(), hit->line.commands.end(),
                         [&](const command::SimpleCommand& c) {
                           return rule.command->MayMatch(c);
                         })) {
          note = CommandNeedCaveat(*hit);
        }
      }
    }
    if (!r.domain.empty() && !AnyNeed(call, Kind::kDomain, [&](const PermissionRequirement& n) {
          return DomainCovers(r.domain, n.value);
        })) {
      continue;
    }
    if (r.outside_workspace &&
        !PathCondition(call, r.decision, [&](const PermissionRequirement& n) {
          return !InsideWorkspace(n.value, call.workspaces).has_value();
        })) {
      continue;
    }
    // A more specific bucket wins; within one, the stricter decision.
    if (best == nullptr || rule.bucket < best->bucket || r.decision > best->options.decision) {
      best = &rule;
      best_note = std::move(note);
    }
  }
  if (best != nullptr) {
    verdict.decision = best->options.decision;
    verdict.rule = best->options.name;
    verdict.note = std::move(best_note);
    verdict.path_rule = best->glob != nullptr || best->options.outside_workspace;
  }
  return verdict;
}

PolicyVerdict EvaluateChain(const PolicyChain& chain, const CallFacts& call) {
  PolicyVerdict out;
  bool first = true;
  for (const auto& p : chain) {
    PolicyVerdict v = p->Evaluate(call);
    if (first || v.decision > out.decision) out = std::move(v);
    first = false;
  }
  return out;
}

bool LeftOutByPolicy(const PolicyChain& chain, const CallFacts& call, GrantSet* grants,
                     const std::string& path) {
  CallFacts file = call;
  PermissionRequirement need;
  need.kind = PermissionRequirement::Kind::kPath;
  need.value = path;
  need.level = PermissionLevel::kRead;
  file.needs = {need};
  bool asked = false;
  for (const auto& p : chain) {
    if (!p->has_path_rules()) continue;
    PolicyVerdict v = p->Evaluate(file);
    if (!v.path_rule) continue;
    if (v.decision == PolicyDecision::kDeny) return true;
    asked |= v.decision == PolicyDecision::kAsk;
  }
  return asked && (grants == nullptr || !grants->Covers(need, absl::Now()));
}

}  // namespace toolexec
