// Deciding a batch at run time: each call's needs (its tool's requirements,
// paths made absolute and followed through symbolic links), the chain's
// verdict, refusals and accounting, and parking the batch when it asks; and
// judging a write the daemon makes outside any batch (JudgeWrite).
#include <algorithm>
#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "core/policy.h"
#include "core/policy_internal.h"
#include "spdlog/spdlog.h"
#include "tools/runtime/json.h"
#include "tools/runtime/timer_queue.h"
#include "tools/workspace/confined.h"

namespace toolexec {

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
      shared_->Count(PolicyDecision::kDeny, PermissionDecidedBy::kError);
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
      shared_->Count(PolicyDecision::kDeny, by);
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
      shared_->Count(PolicyDecision::kAllow, by);
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
      shared_->Count(PolicyDecision::kAllow, PermissionDecidedBy::kGrant);
    } else {
      asked_calls.push_back(i);
      shared_->Count(PolicyDecision::kAsk, by);
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
