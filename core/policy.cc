// Policies as the config gives them: the names of decisions and answers,
// checking and compiling rules and profiles at start-up, the engine built
// from them (the built-in profiles), and the chain each session and call is
// judged by.
#include "core/policy.h"

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/random/random.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "core/policy_internal.h"
#include "tools/process/environment.h"
#include "tools/runtime/timer_queue.h"
#include "tools/workspace/glob.h"

namespace toolexec {

absl::string_view PermissionAnswerName(PermissionAnswer answer) {
  switch (answer) {
    case PermissionAnswer::kAllowOnce:
      return "allow_once";
    case PermissionAnswer::kAllowSession:
      return "allow_session";
    case PermissionAnswer::kDeny:
      return "deny";
  }
  return "unknown";
}

std::string PolicyVerdict::Explain() const {
  if (rule.empty()) return absl::StrCat("the default decision of policy '", policy, "'");
  std::string out = absl::StrCat("rule '", rule, "' of policy '", policy, "'");
  if (!note.empty()) absl::StrAppend(&out, " (", note, ")");
  return out;
}

std::string PolicyVerdict::DecidedBy() const {
  if (rule.empty()) return absl::StrCat("policy ", policy, ": default decision");
  return absl::StrCat("policy ", policy, ": rule ", rule);
}

// ---- Policy ----

namespace {

bool IsBuiltinProfile(absl::string_view name) {
  return name == kProfileDefault || name == kProfileAllowAll || name == kProfileReadOnly ||
         name == kProfileWorkspaceOnly;
}

absl::Status CheckCommandConditions(absl::string_view where, const PolicyRuleOptions& r) {
  if (!r.command_pattern.empty()) {
    if (auto p = CommandPattern::Parse(r.command_pattern); !p.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": command_pattern: ", p.status().message()));
    }
  }
  if (r.allow_code_env.empty()) return absl::OkStatus();
  if (r.decision != PolicyDecision::kAllow || r.command_pattern.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        where, ": allow_code_env belongs on an allow rule with a command_pattern (it names the "
               "variables the commands it covers may set)"));
  }
  for (const std::string& name : r.allow_code_env) {
    if (!command::IsCodeVariable(name)) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, ": allow_code_env: '", name,
          "' is not a variable that makes code run; setting it needs no permission"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckRule(absl::string_view policy, const PolicyRuleOptions& r) {
  const std::string where =
      absl::StrCat("policy '", policy, "': rule '", r.name.empty() ? "(unnamed)" : r.name, "'");
  if (r.name.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("policy '", policy, "': a rule has no name; name every rule (denials and "
                                          "questions quote it)"));
  }
  if (r.tool.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, " has no tool; give a tool name, \"<server>/*\" or \"*\""));
  }
  absl::string_view head = r.tool;
  if (absl::EndsWith(head, "/*")) head.remove_suffix(2);
  if (r.tool != "*" && (head.empty() || absl::StrContains(head, '*') ||
                        absl::StrContains(head, '/'))) {
    return absl::InvalidArgumentError(absl::StrCat(
        where, ": tool \"", r.tool, "\" is neither a tool name, \"<server>/*\" nor \"*\""));
  }
  if (!r.path_glob.empty()) {
    if (auto g = fs::ParseUserGlob(r.path_glob); !g.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": path_glob: ", g.status().message()));
    }
  }
  if (absl::Status s = CheckCommandConditions(where, r); !s.ok()) return s;
  return absl::OkStatus();
}

absl::Status CheckProfileOptions(const PolicyProfileOptions& p) {
  for (const PolicyRuleOptions& r : p.rules) {
    if (absl::Status s = CheckRule(p.name, r); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidatePolicyOptions(const PolicyOptions& options) {
  PolicyProfileOptions base{std::string(kProfileDefault), options.default_decision,
                            options.rules};
  if (absl::Status s = CheckProfileOptions(base); !s.ok()) return s;
  std::set<std::string> names;
  for (const PolicyProfileOptions& p : options.profiles) {
    if (p.name.empty()) return absl::InvalidArgumentError("a policy profile has no name");
    if (IsBuiltinProfile(p.name)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "policy profile '", p.name, "' is built in; give yours another name (built in: ",
          kProfileDefault, ", ", kProfileAllowAll, ", ", kProfileReadOnly, ", ",
          kProfileWorkspaceOnly, ")"));
    }
    if (!names.insert(p.name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("policy profile '", p.name, "' is declared twice"));
    }
    if (absl::Status s = CheckProfileOptions(p); !s.ok()) return s;
  }
  if (options.ask_timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("policy.ask_timeout_ms must be positive");
  }
  return absl::OkStatus();
}

Policy::~Policy() = default;

absl::StatusOr<std::shared_ptr<const Policy>> Policy::Create(
    const PolicyProfileOptions& options) {
  if (absl::Status s = CheckProfileOptions(options); !s.ok()) return s;
  std::shared_ptr<Policy> p(new Policy());
  p->name_ = options.name;
  p->default_decision_ = options.default_decision.value_or(PolicyDecision::kAllow);
  for (const PolicyRuleOptions& r : options.rules) {
    Rule rule;
    rule.options = r;
    if (r.tool == "*") {
      rule.bucket = Bucket::kGlobal;
    } else if (absl::EndsWith(r.tool, "/*")) {
      rule.bucket = Bucket::kPrefix;
      rule.server = r.tool.substr(0, r.tool.size() - 2);
    } else {
      rule.bucket = Bucket::kSpecific;
    }
    if (!r.path_glob.empty()) {
      auto g = fs::ParseUserGlob(r.path_glob);
      if (!g.ok()) return g.status();
      std::vector<fs::GlobPattern> patterns{*std::move(g)};
      auto set = fs::GlobSet::Create(std::move(patterns), /*skip_invalid=*/false);
      if (!set.ok()) {
        return absl::InvalidArgumentError(absl::StrCat("policy '", options.name, "': rule '",
                                                       r.name, "': path_glob: ",
                                                       set.status().message()));
      }
      rule.glob = *std::move(set);
    }
    if (!r.command_pattern.empty()) {
      auto pattern = CommandPattern::Parse(r.command_pattern);
      if (!pattern.ok()) return pattern.status();
      rule.command = *std::move(pattern);
    }
    p->has_path_rules_ |= rule.glob != nullptr || r.outside_workspace;
    p->rules_.push_back(std::move(rule));
  }
  p->allow_read_only_tools_ = options.allow_read_only_tools;
  p->allows_everything_ = p->rules_.empty() && !p->allow_read_only_tools_ &&
                          p->default_decision_ == PolicyDecision::kAllow;
  return std::shared_ptr<const Policy>(std::move(p));
}

// ---- PolicyEngine ----

namespace {

// Appends `policy` unless the chain has it already (a call passes each once).
void AddToChain(PolicyChain& chain, std::shared_ptr<const Policy> policy) {
  if (std::find(chain.begin(), chain.end(), policy) == chain.end()) {
    chain.push_back(std::move(policy));
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<PolicyEngine>> PolicyEngine::Create(
    PolicyOptions options, const ToolRegistry* registry, std::string default_workspace,
    std::shared_ptr<MetricsSink> metrics) {
  if (absl::Status s = ValidatePolicyOptions(options); !s.ok()) return s;
  auto shared = std::make_shared<Shared>();
  shared->registry = registry;
  if (!default_workspace.empty()) {
    shared->roots.push_back(NormalizePath(default_workspace));
    std::string real = ResolvePath(shared->roots.front());
    if (real != shared->roots.front()) shared->roots.push_back(std::move(real));
  }
  shared->ask_timeout = options.ask_timeout;
  shared->id_prefix = absl::BitGen()();
  shared->metrics = std::move(metrics);

  std::vector<PolicyProfileOptions> all;
  all.push_back({std::string(kProfileDefault), options.default_decision, options.rules});
  all.push_back({std::string(kProfileAllowAll), PolicyDecision::kAllow, {}});
  PolicyProfileOptions read_only{std::string(kProfileReadOnly), PolicyDecision::kDeny, {}};
  read_only.allow_read_only_tools = true;
  all.push_back(std::move(read_only));
  PolicyRuleOptions outside;
  outside.name = "path outside the workspace";
  outside.tool = "*";
  outside.decision = PolicyDecision::kDeny;
  outside.outside_workspace = true;
  all.push_back({std::string(kProfileWorkspaceOnly), PolicyDecision::kAllow, {outside}});
  for (auto& p : options.profiles) all.push_back(std::move(p));
  for (const PolicyProfileOptions& p : all) {
    auto policy = Policy::Create(p);
    if (!policy.ok()) return policy.status();
    shared->profiles.emplace(p.name, *std::move(policy));
  }
  shared->default_policy = shared->profiles.at(std::string(kProfileDefault));
  return std::unique_ptr<PolicyEngine>(new PolicyEngine(std::move(shared)));
}

PolicyEngine::~PolicyEngine() {
  CancelAll();
  std::unique_ptr<TimerQueue> timers;
  {
    absl::MutexLock lock(&shared_->mu);
    timers = std::move(shared_->timers);
  }
  timers.reset();  // joins its thread (outside the lock: a callback may take it)
  shared_->work.Shutdown();
}

absl::Status PolicyEngine::CheckProfile(const std::string& name) const {
  return shared_->Profile(name).status();
}

absl::StatusOr<PolicyChain> PolicyEngine::ChainForSession(const std::string& parent_session_id,
                                                          const std::string& requested) const {
  PolicyChain chain;
  if (!parent_session_id.empty()) {
    absl::MutexLock lock(&shared_->mu);
    auto it = shared_->sessions.find(parent_session_id);
    if (it != shared_->sessions.end()) chain = it->second.chain;
  }
  if (requested.empty()) return chain;
  auto p = shared_->Profile(requested);
  if (!p.ok()) return p.status();
  AddToChain(chain, *std::move(p));
  return chain;
}

void PolicyEngine::AttachSession(const std::shared_ptr<Session>& session, PolicyChain chain) {
  absl::MutexLock lock(&shared_->mu);
  auto& sessions = shared_->sessions;
  // Forget closed sessions now and then (amortized over the opens).
  if (sessions.size() >= 2 * shared_->sessions_at_prune + 64) {
    for (auto it = sessions.begin(); it != sessions.end();) {
      if (it->second.session.expired()) {
        sessions.erase(it++);
      } else {
        ++it;
      }
    }
    shared_->sessions_at_prune = sessions.size();
  }
  Shared::SessionEntry entry;
  entry.session = session;
  entry.chain = std::move(chain);
  sessions[session->id()] = std::move(entry);
}

void PolicyEngine::DetachSession(const std::string& session_id) {
  std::vector<std::shared_ptr<PendingAsk>> asks;
  {
    absl::MutexLock lock(&shared_->mu);
    shared_->sessions.erase(session_id);
    for (const auto& [id, ask] : shared_->asks) {
      if (ask->session_id == session_id) asks.push_back(ask);
    }
  }
  for (const auto& ask : asks) ask->Cancel();
}

absl::StatusOr<PolicyChain> PolicyEngine::ChainOf(const std::string& caller_profile,
                                                  const Session* session,
                                                  std::shared_ptr<GrantSet>* grants) const {
  // The config's policy, the caller's profile as its credential has it now,
  // then the session's own (see the header comment).
  PolicyChain chain{shared_->default_policy};
  if (!caller_profile.empty()) {
    auto p = shared_->Profile(caller_profile);
    if (!p.ok()) return p.status();
    AddToChain(chain, *std::move(p));
  }
  if (session != nullptr) {
    absl::MutexLock lock(&shared_->mu);
    auto it = shared_->sessions.find(session->id());
    if (it != shared_->sessions.end()) {
      for (const auto& p : it->second.chain) AddToChain(chain, p);
      *grants = it->second.grants;
    }
  }
  return chain;
}

}  // namespace toolexec
