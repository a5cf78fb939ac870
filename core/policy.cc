#include "core/policy.h"

#include <algorithm>
#include <exception>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/random/random.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "spdlog/spdlog.h"
#include "tools/process/environment.h"
#include "tools/workspace/confined.h"
#include "tools/workspace/glob.h"
#include "tools/runtime/executor.h"
#include "tools/runtime/model_content.h"
#include "tools/runtime/timer_queue.h"

namespace toolexec {

absl::string_view PolicyDecisionName(PolicyDecision d) {
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

enum class Bucket { kSpecific = 0, kPrefix = 1, kGlobal = 2 };

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

struct Policy::Rule {
  PolicyRuleOptions options;
  Bucket bucket = Bucket::kGlobal;
  std::string server;  // kPrefix: the server name
  std::unique_ptr<fs::GlobSet> glob;
  std::optional<CommandPattern> command;
};

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

// What a path_glob is matched against: `path` (absolute, normalized)
// relative to the daemon's workspace root when inside it, else the absolute
// path without its leading '/'.
std::string GlobTarget(const std::string& path, const CallFacts& call) {
  std::optional<std::string> rel = InsideWorkspace(path, call.roots);
  if (!rel.has_value() && call.roots.empty() && !call.workspaces.empty()) {
    rel = InsideWorkspace(path, {call.workspaces.front()});
  }
  if (rel.has_value()) return *rel;
  return path.size() > 1 ? path.substr(1) : ".";
}

}  // namespace

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

// ---- PolicyEngine ----

namespace {

// Appends `policy` unless the chain has it already (a call passes each once).
void AddToChain(PolicyChain& chain, std::shared_ptr<const Policy> policy) {
  if (std::find(chain.begin(), chain.end(), policy) == chain.end()) {
    chain.push_back(std::move(policy));
  }
}

}  // namespace

struct PolicyEngine::Shared {
  const ToolRegistry* registry = nullptr;
  // The daemon's workspace root as configured and, when it differs, as the
  // kernel names it (CallFacts::roots); calls without a session work there.
  std::vector<std::string> roots;
  absl::Duration ask_timeout;
  std::map<std::string, std::shared_ptr<const Policy>> profiles;
  std::shared_ptr<const Policy> default_policy;
  uint64_t id_prefix = 0;
  std::shared_ptr<MetricsSink> metrics;  // may be null

  void Count(PermissionDecision d, PermissionDecidedBy by) const {
    if (metrics != nullptr) metrics->PermissionDecided(d, by);
  }

  struct SessionEntry {
    std::weak_ptr<Session> session;
    PolicyChain chain;
    std::shared_ptr<GrantSet> grants = std::make_shared<GrantSet>();
  };

  absl::Mutex mu;
  absl::flat_hash_map<std::string, SessionEntry> sessions ABSL_GUARDED_BY(mu);
  size_t sessions_at_prune ABSL_GUARDED_BY(mu) = 0;
  absl::flat_hash_map<std::string, std::shared_ptr<PendingAsk>> asks ABSL_GUARDED_BY(mu);
  uint64_t next_id ABSL_GUARDED_BY(mu) = 1;
  // Started with the first question: most daemons never ask.
  std::unique_ptr<TimerQueue> timers ABSL_GUARDED_BY(mu);
  // Timeouts resolve here, not on the timer thread.
  Executor work{Executor::Options{/*min_threads=*/0, /*max_threads=*/2}};

  absl::StatusOr<std::shared_ptr<const Policy>> Profile(const std::string& name) const {
    auto it = profiles.find(name);
    if (it != profiles.end()) return it->second;
    std::vector<std::string> known;
    for (const auto& [n, p] : profiles) known.push_back(n);
    return absl::InvalidArgumentError(absl::StrCat("unknown policy profile '", name,
                                                   "'; the profiles are: ",
                                                   absl::StrJoin(known, ", ")));
  }

  void Forget(const std::vector<std::string>& request_ids) {
    absl::MutexLock lock(&mu);
    for (const auto& id : request_ids) asks.erase(id);
  }

  void CancelTimer(TimerQueue::TimerId id) {
    absl::MutexLock lock(&mu);
    if (timers != nullptr && id != 0) timers->Cancel(id);
  }
};

// A batch waiting for answers; see the header comment.
class PolicyEngine::PendingAsk final : public BatchHandle,
                                       public std::enable_shared_from_this<PendingAsk> {
 public:
  PendingAsk(std::shared_ptr<Shared> shared, BatchRequest batch, BatchObserver* observer,
             StartFn start, std::shared_ptr<GrantSet> grants)
      : session_id(batch.session != nullptr ? batch.session->id() : ""),
        shared_(std::move(shared)),
        batch_(std::move(batch)),
        observer_(observer),
        start_(std::move(start)),
        grants_(std::move(grants)) {}

  void AddRequest(const std::string& id, PermissionRequirement target) {
    absl::MutexLock lock(&mu_);
    waiting_.emplace(id, std::move(target));
    request_ids_.push_back(id);
  }
  void SetTimer(TimerQueue::TimerId id) {
    absl::MutexLock lock(&mu_);
    timer_ = id;
  }

  void Cancel() override {
    std::shared_ptr<BatchHandle> inner;
    {
      absl::MutexLock lock(&mu_);
      if (resolved_) {
        if (inner_ == nullptr) {
          cancel_after_start_ = true;
          return;
        }
        inner = inner_;
      }
    }
    if (inner != nullptr) return inner->Cancel();
    Resolve(ToolError(ErrorCode::kCancelled,
                      "the batch was cancelled while it waited for a permission answer"),
            Outcome::kCancelled);
  }

  void ResultsReleased(size_t count) override {
    std::shared_ptr<BatchHandle> inner;
    {
      absl::MutexLock lock(&mu_);
      if (inner_ == nullptr) {
        released_before_start_ += count;
        return;
      }
      inner = inner_;
    }
    inner->ResultsReleased(count);
  }

  absl::Status Answer(const std::string& request_id, PermissionAnswer answer,
                      const std::string& reason) {
    bool all_allowed = false;
    {
      absl::MutexLock lock(&mu_);
      auto it = waiting_.find(request_id);
      if (resolved_ || it == waiting_.end()) {
        return absl::NotFoundError(absl::StrCat("permission request '", request_id,
                                                "' is not pending (answered, timed out or "
                                                "cancelled)"));
      }
      if (answer == PermissionAnswer::kAllowSession && grants_ != nullptr) {
        grants_->Add(PermissionGrant{it->second});
      }
      waiting_.erase(it);
      all_allowed = waiting_.empty();
    }
    observer_->OnPermissionAnswer(request_id, PermissionAnswerName(answer), reason);
    if (answer == PermissionAnswer::kDeny) {
      std::string message = "Permission denied by user";
      if (!reason.empty()) absl::StrAppend(&message, ": ", reason);
      Resolve(ToolError(ErrorCode::kDenied, message), Outcome::kDeniedByUser);
    } else if (all_allowed) {
      Resolve(absl::OkStatus(), Outcome::kAllowedByUser);
    }
    return absl::OkStatus();
  }

  // How the wait ended.
  enum class Outcome { kAllowedByUser, kDeniedByUser, kTimedOut, kCancelled };

  // Starts the batch: as decided when `refusal` is OK, otherwise with every
  // call refused. Exactly once. Accounts for the asked calls (see
  // Accounting in policy.h).
  void Resolve(absl::Status refusal, Outcome outcome) {
    BatchRequest batch;
    StartFn start;
    TimerQueue::TimerId timer = 0;
    std::vector<std::string> unanswered;
    {
      absl::MutexLock lock(&mu_);
      if (resolved_) return;
      resolved_ = true;
      batch = std::move(batch_);
      start = std::move(start_);
      timer = timer_;
      if (outcome == Outcome::kTimedOut) {
        for (const auto& [id, target] : waiting_) unanswered.push_back(id);
      }
    }
    for (const std::string& id : unanswered) observer_->OnPermissionAnswer(id, "timeout", "");
    shared_->Forget(request_ids_);
    shared_->CancelTimer(timer);
    if (outcome != Outcome::kCancelled) {
      const bool timed_out = outcome == Outcome::kTimedOut;
      const char* by = timed_out ? "timeout" : "user";
      const PermissionDecision decision = outcome == Outcome::kAllowedByUser
                                              ? PermissionDecision::kAllow
                                              : PermissionDecision::kDeny;
      for (uint32_t i : asked_calls_) {
        if (i < batch.calls.size()) batch.calls[i].decided_by = by;
        shared_->Count(decision,
                       timed_out ? PermissionDecidedBy::kTimeout : PermissionDecidedBy::kUser);
      }
      // A denial refuses every call of the batch: they name it too.
      if (!refusal.ok()) {
        for (CallRequest& c : batch.calls) c.decided_by = by;
      }
    }
    if (!refusal.ok()) {
      for (CallRequest& c : batch.calls) c.refusal = refusal;
    }
    auto handle = start(std::move(batch), observer_);
    if (!handle.ok()) return FailWithoutRunner(handle.status());
    size_t released = 0;
    bool cancel = false;
    {
      absl::MutexLock lock(&mu_);
      inner_ = *handle;
      released = released_before_start_;
      cancel = cancel_after_start_;
    }
    if (released > 0) (*handle)->ResultsReleased(released);
    if (cancel) (*handle)->Cancel();
  }

 private:
  // The runner refused the batch after it had been announced (it was shut
  // down meanwhile, or is full): every call still gets its result.
  void FailWithoutRunner(const absl::Status& status) {
    spdlog::warn("a batch that waited for a permission answer could not start: {}",
                 status.ToString());
    const size_t n = call_names_.size();
    for (size_t i = 0; i < n; ++i) {
      ToolCallResult r;
      r.index = static_cast<uint32_t>(i);
      r.id = call_ids_[i];
      r.name = call_names_[i];
      r.status = ResultStatus::kError;
      std::string message = absl::StrCat("the batch could not start: ", status.message());
      r.payload = MakeObject();
      r.payload.AddMember("error", JsonValue(message, r.payload.GetAllocator()),
                          r.payload.GetAllocator());
      r.error_message = message;
      r.error = ToolCallError{message, r.name, "", ErrorCode::kServerUnavailable};
      r.compact_summary = absl::StrCat("[", r.name, ": error]");
      r.model_content =
          FailureModelContent(ErrorCode::kServerUnavailable, r.name, message,
                              kDefaultModelContentChars);
      if (i + 1 < n) {
        observer_->OnResult(std::move(r));
      } else {
        observer_->OnLastResult(std::move(r));
      }
    }
  }

 public:
  const std::string session_id;  // "" = none
  // The caller whose batch asks; only it may answer. Set before the ask is
  // published in Shared::asks, never changed after.
  std::string caller_name_;
  // Kept for FailWithoutRunner (the batch itself moves into the runner).
  std::vector<std::string> call_ids_;
  std::vector<std::string> call_names_;
  std::vector<std::string> request_ids_;
  // The calls whose needs are asked about (their index in the batch).
  std::vector<uint32_t> asked_calls_;

 private:
  const std::shared_ptr<Shared> shared_;
  absl::Mutex mu_;
  bool resolved_ ABSL_GUARDED_BY(mu_) = false;
  BatchRequest batch_ ABSL_GUARDED_BY(mu_);
  BatchObserver* const observer_;
  StartFn start_ ABSL_GUARDED_BY(mu_);
  const std::shared_ptr<GrantSet> grants_;
  std::map<std::string, PermissionRequirement> waiting_ ABSL_GUARDED_BY(mu_);
  TimerQueue::TimerId timer_ ABSL_GUARDED_BY(mu_) = 0;
  std::shared_ptr<BatchHandle> inner_ ABSL_GUARDED_BY(mu_);
  size_t released_before_start_ ABSL_GUARDED_BY(mu_) = 0;
  bool cancel_after_start_ ABSL_GUARDED_BY(mu_) = false;
};

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

size_t PolicyEngine::pending_asks() const {
  absl::MutexLock lock(&shared_->mu);
  std::set<const PendingAsk*> distinct;
  for (const auto& [id, ask] : shared_->asks) distinct.insert(ask.get());
  return distinct.size();
}

void PolicyEngine::CancelAll() {
  std::vector<std::shared_ptr<PendingAsk>> asks;
  {
    absl::MutexLock lock(&shared_->mu);
    for (const auto& [id, ask] : shared_->asks) asks.push_back(ask);
  }
  for (const auto& ask : asks) ask->Cancel();
}

absl::Status PolicyEngine::Respond(const std::string& caller_name, const std::string& request_id,
                                   PermissionAnswer answer, const std::string& reason) {
  std::shared_ptr<PendingAsk> ask;
  {
    absl::MutexLock lock(&shared_->mu);
    auto it = shared_->asks.find(request_id);
    if (it != shared_->asks.end()) ask = it->second;
  }
  // Another caller's question is as unknown to this one as its sessions.
  if (ask == nullptr || ask->caller_name_ != caller_name) {
    return absl::NotFoundError(absl::StrCat(
        "permission request '", request_id,
        "' is not pending (answered, timed out, cancelled, or never sent by this daemon)"));
  }
  return ask->Answer(request_id, answer, reason);
}

namespace {

// The call's arguments as JSON: parsed from args_json once here (and handed
// to the runner parsed), or null when the runner will refuse them anyway.
const JsonValue* ParsedArgs(CallRequest& call) {
  const bool has_text = !absl::StripAsciiWhitespace(call.args_json).empty();
  if (call.args.has_value()) return has_text ? nullptr : &*call.args;
  if (!call.args_error.ok()) return nullptr;
  if (!has_text) {
    call.args = MakeObject();
    call.args_json.clear();
    return &*call.args;
  }
  auto parsed = ParseJson(call.args_json);
  if (!parsed.ok()) return nullptr;
  call.args = *std::move(parsed);
  call.args_json.clear();
  return &*call.args;
}

std::string Describe(const PermissionRequirement& target, const std::vector<std::string>& tools,
                     const std::vector<std::string>& values) {
  std::string out = absl::StrCat(absl::StrJoin(tools, ", "), " needs ",
                                 PermissionLevelName(target.level), " permission on ",
                                 PermissionKindName(target.kind), " ", target.value);
  if (target.recursive) absl::StrAppend(&out, " (and everything beneath it)");
  // Every one: what is not shown must not run on the answer.
  absl::StrAppend(&out, ": ", absl::StrJoin(values, "; "));
  return out;
}

}  // namespace

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

absl::Status PolicyEngine::JudgeWrite(const std::string& caller_profile,
                                      const std::shared_ptr<Session>& session,
                                      const std::string& tool,
                                      const std::vector<std::string>& paths) const {
  std::shared_ptr<GrantSet> grants;
  absl::StatusOr<PolicyChain> chain_or = ChainOf(caller_profile, session.get(), &grants);
  if (!chain_or.ok()) return chain_or.status();
  const PolicyChain& chain = *chain_or;
  if (std::all_of(chain.begin(), chain.end(), [](const auto& p) { return p->allows_everything(); })) {
    return absl::OkStatus();
  }
  CallFacts facts;
  facts.tool = tool;
  if (session != nullptr) {
    for (const auto& w : session->workspaces()) facts.workspaces.push_back(w->path());
  }
  if (facts.workspaces.empty()) facts.workspaces = shared_->roots;
  facts.roots = shared_->roots;
  for (const std::string& path : paths) {
    for (PermissionRequirement& n : PathPermission(NormalizePath(path), PermissionLevel::kWrite)) {
      facts.needs.push_back(std::move(n));
    }
  }
  const PolicyVerdict verdict = EvaluateChain(chain, facts);
  if (verdict.decision == PolicyDecision::kAllow) return absl::OkStatus();
  if (verdict.decision == PolicyDecision::kDeny) {
    return absl::PermissionDeniedError(absl::StrCat(tool, " is denied by ", verdict.Explain()));
  }
  const absl::Time now = absl::Now();
  for (const PermissionRequirement& n : facts.needs) {
    if (grants == nullptr || !grants->Covers(n, now)) {
      return absl::PermissionDeniedError(absl::StrCat(
          tool, " would write ", n.value, ", which ", verdict.Explain(),
          " asks about, and nobody can be asked outside a batch: grant it to the session "
          "(answer ALLOW_SESSION once) or allow it in the policy"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<BatchHandle>> PolicyEngine::StartBatch(
    const std::string& caller_name, const std::string& caller_profile, BatchRequest batch, BatchObserver* observer,
    StartFn start) {
  std::shared_ptr<GrantSet> grants;
  absl::StatusOr<PolicyChain> chain_or = ChainOf(caller_profile, batch.session.get(), &grants);
  if (!chain_or.ok()) return chain_or.status();
  const PolicyChain chain = *std::move(chain_or);
  if (std::all_of(chain.begin(), chain.end(),
                  [](const auto& p) { return p->allows_everything(); })) {
    return start(std::move(batch), observer);  // nothing to decide
  }

  std::vector<std::string> workspaces;
  if (batch.session != nullptr) {
    for (const auto& w : batch.session->workspaces()) workspaces.push_back(w->path());
  }
  if (workspaces.empty()) workspaces = shared_->roots;
  std::vector<std::string> chain_names;
  for (const auto& p : chain) chain_names.push_back(p->name());

  // Needs to ask about, with the call and verdict each came from.
  std::vector<PermissionRequirement> asked;
  std::vector<uint32_t> asked_index;
  std::vector<std::string> asked_reason;
  std::vector<uint32_t> asked_calls;
  const absl::Time now = absl::Now();
  for (uint32_t i = 0; i < batch.calls.size(); ++i) {
    CallRequest& call = batch.calls[i];
    // The batch's own registry snapshot, which the runner uses too.
    const RegisteredTool* rt =
        (batch.tools != nullptr ? *batch.tools : *shared_->registry).Find(call.name);
    // What the runner refuses anyway (unknown tool, not enabled, run
    // elsewhere, unreadable arguments) is its to explain.
    if (rt == nullptr || rt->tool->spec().executor != ToolExecutor::kDaemon) continue;
    if (batch.session != nullptr && !batch.session->AllowsTool(*rt)) continue;
    const JsonValue* args = ParsedArgs(call);
    if (args == nullptr) continue;
    const Tool& tool = *rt->tool;
    CallFacts facts;
    facts.tool = call.name;
    facts.server_name = rt->server_name;
    facts.workspaces = workspaces;
    facts.roots = shared_->roots;
    facts.read_only = tool.spec().read_only;
    auto evaluation_error = [&](const std::string& detail) {
      call.refusal = ToolError(ErrorCode::kDenied,
                               absl::StrCat("policy '", absl::StrJoin(chain_names, "+"),
                                            "' could not evaluate the call", detail, "; denied"));
      call.decided_by =
          absl::StrCat("policy ", absl::StrJoin(chain_names, "+"), ": evaluation error");
      shared_->Count(PermissionDecision::kDeny, PermissionDecidedBy::kError);
    };
    try {
      if (!tool.handles_own_permissions()) facts.needs = tool.required_permissions(*args);
    } catch (const std::exception& e) {
      evaluation_error(absl::StrCat(" (its permissions could not be read: ", e.what(), ")"));
      continue;
    } catch (...) {
      evaluation_error("");
      continue;
    }
    if (facts.needs.empty() && !tool.handles_own_permissions()) {
      PermissionRequirement r;
      r.kind = PermissionRequirement::Kind::kTool;
      r.value = call.name;
      r.level = tool.spec().read_only ? PermissionLevel::kRead : PermissionLevel::kExecute;
      facts.needs.push_back(std::move(r));
    }
    // A path through a symbolic link is also the path it leads to: a need of
    // its own (rules and grants judge both) when the two differ relative to
    // the daemon's workspace root.
    std::vector<PermissionRequirement> resolved;
    for (PermissionRequirement& n : facts.needs) {
      if (n.kind != PermissionRequirement::Kind::kPath) continue;
      std::string value = n.value.empty() ? "." : n.value;
      if (value.front() != '/' && !workspaces.empty()) {
        value = absl::StrCat(workspaces.front(), "/", value);
      }
      n.value = NormalizePath(value);
      std::string real = ResolvePath(value);
      if (GlobTarget(real, facts) != GlobTarget(n.value, facts)) {
        resolved.push_back(n);
        resolved.back().value = std::move(real);
      }
    }
    const bool touches_paths =
        std::any_of(facts.needs.begin(), facts.needs.end(), [](const PermissionRequirement& n) {
          return n.kind == PermissionRequirement::Kind::kPath;
        });
    for (PermissionRequirement& r : resolved) facts.needs.push_back(std::move(r));
    PolicyVerdict verdict = EvaluateChain(chain, facts);
    call.decided_by = verdict.DecidedBy();
    const PermissionDecidedBy by =
        verdict.rule.empty() ? PermissionDecidedBy::kDefault : PermissionDecidedBy::kRule;
    if (verdict.decision == PolicyDecision::kDeny) {
      call.refusal = ToolError(ErrorCode::kDenied, absl::StrCat("denied by ", verdict.Explain()));
      shared_->Count(PermissionDecision::kDeny, by);
      continue;
    }
    // What a walk below its paths reads is judged file by file as it goes.
    if (touches_paths && std::any_of(chain.begin(), chain.end(), [](const auto& p) {
          return p->has_path_rules();
        })) {
      CallFacts walk = facts;
      walk.needs.clear();
      call.left_out_by_policy = [chain, walk = std::move(walk),
                                 grants](absl::string_view path) {
        return LeftOutByPolicy(chain, walk, grants.get(), NormalizePath(path));
      };
    }
    if (verdict.decision != PolicyDecision::kAsk) {
      shared_->Count(PermissionDecision::kAllow, by);
      continue;
    }
    const size_t asked_before = asked.size();
    for (PermissionRequirement& n : facts.needs) {
      if (grants != nullptr && grants->Covers(n, now)) continue;
      asked.push_back(std::move(n));
      asked_index.push_back(i);
      asked_reason.push_back(absl::StrCat("asked by ", verdict.Explain()));
    }
    if (asked.size() == asked_before) {  // the session's grants cover it
      call.decided_by = "grant";
      shared_->Count(PermissionDecision::kAllow, PermissionDecidedBy::kGrant);
    } else {
      asked_calls.push_back(i);
      shared_->Count(PermissionDecision::kAsk, by);
    }
  }
  if (asked.empty()) return start(std::move(batch), observer);

  // Ask: park the batch, register its requests, then announce them.
  std::shared_ptr<Session> session = batch.session;
  std::vector<std::string> call_ids, call_names;
  for (const CallRequest& c : batch.calls) {
    call_ids.push_back(c.id);
    call_names.push_back(c.name);
  }
  std::vector<std::string> tool_of_call = call_names;
  auto ask = std::make_shared<PendingAsk>(shared_, std::move(batch), observer, std::move(start),
                                          grants);
  ask->caller_name_ = caller_name;
  ask->call_ids_ = std::move(call_ids);
  ask->call_names_ = std::move(call_names);
  ask->asked_calls_ = std::move(asked_calls);
  std::vector<PermissionRequestEvent> events;
  for (SuggestedGrant& s : SuggestGrants(asked)) {
    PermissionRequestEvent e;
    std::vector<std::string> tools, values;
    for (size_t m : s.members) {
      const std::string& t = tool_of_call[asked_index[m]];
      if (std::find(tools.begin(), tools.end(), t) == tools.end()) tools.push_back(t);
      values.push_back(DescribeNeed(asked[m]));
    }
    e.index = asked_index[s.members.front()];
    e.tool_name = tool_of_call[e.index];
    e.reason = asked_reason[s.members.front()];
    e.description = Describe(s.target, tools, values);
    e.target = std::move(s.target);
    events.push_back(std::move(e));
  }
  {
    absl::MutexLock lock(&shared_->mu);
    for (PermissionRequestEvent& e : events) {
      e.request_id = absl::StrFormat("perm-%016x-%d", shared_->id_prefix, shared_->next_id++);
      shared_->asks.emplace(e.request_id, ask);
      ask->AddRequest(e.request_id, e.target);
    }
    if (shared_->timers == nullptr) shared_->timers = std::make_unique<TimerQueue>();
    std::weak_ptr<PendingAsk> weak = ask;
    const int64_t ms = absl::ToInt64Milliseconds(shared_->ask_timeout);
    std::shared_ptr<Shared> shared = shared_;
    ask->SetTimer(shared_->timers->Schedule(absl::Now() + shared_->ask_timeout, [weak, shared,
                                                                                  ms] {
      auto timed_out = [weak, ms] {
        if (auto a = weak.lock()) {
          a->Resolve(ToolError(ErrorCode::kDenied,
                               absl::StrCat("Permission denied: the permission request was not "
                                            "answered within ",
                                            ms, " ms (policy.ask_timeout_ms)")),
                     PendingAsk::Outcome::kTimedOut);
        }
      };
      if (!shared->work.Submit(timed_out).ok()) timed_out();
    }));
  }
  for (const PermissionRequestEvent& e : events) {
    spdlog::info("permission request {}: {} ({})", e.request_id, e.description, e.reason);
    observer->OnPermissionRequest(e);
    if (session != nullptr) session->NotifyPermissionRequest(e);
  }
  return std::shared_ptr<BatchHandle>(ask);
}

}  // namespace toolexec
