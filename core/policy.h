// Policies and asking [Deciding what runs]: which calls of a batch run, which are DENIED, and
// which wait for a person's answer.
//
// Design
// ------
// Who decides: the engine's StartBatch hands every batch to
// PolicyEngine::StartBatch before the runner sees it (and before hooks). The
// decision is made there, on the caller's thread (a gRPC thread), and is
// CPU work plus an lstat of each component of a path need (see "Paths"): per call, find the tool, read its requirements
// (Tool::required_permissions on the parsed arguments; a tool that declares
// none needs its own name; a tool that handles its own permissions is never
// asked about), and evaluate the session's policies. Nothing blocks.
//
// Policies: a call is judged by a chain of policies: the config's own policy
// ("default": its default decision and rules), always; then the caller's
// credential profile (CallerIdentity::profile) as the credential has it for
// this call (a token file reloaded since the session opened counts); then the
// session's own profiles: its parent's, then the one it asked for at
// OpenSession. A call's decision is the strictest of the chain's decisions
// (deny > ask > allow), so a profile (a credential's, a session's, a
// parent's) can narrow what the config lets run and never widen it:
// "allow_all" narrows nothing. The tools that run bash command lines
// (run_command, bash, shell) are one tool to the rules: a rule naming one of
// them applies to all three. Within one policy, rules naming the tool beat
// "<server>/*" rules beat "*" rules; within the winning bucket deny beats ask
// beats allow; no matching rule: the policy's default decision.
//
// Paths: a path need is made absolute (relative ones joined to the first
// workspace) and normalized; when the path goes through a symbolic link,
// where it leads (ResolvePath, which stats the file system) is a need of its
// own, so rules and grants judge both. path_glob is matched relative to the
// daemon's workspace root, whatever the session's (CallFacts::roots). An
// allow rule's path condition must hold for every path of the call, a deny's
// or ask's for any. A call with a path and a policy with path rules gets a
// filter (CallRequest::left_out_by_policy, LeftOutByPolicy) that its walk
// asks about each file it reaches.
//
// Outcomes per call: ALLOW runs; DENY completes the call as DENIED naming the
// rule and the policy (CallRequest::refusal), the other calls still run; ASK
// looks up the session's grants, and the needs no grant covers are asked.
// Any evaluation error (a tool's requirements throw) denies the call naming
// the policy (fail closed).
//
// Accounting: each decided call carries what decided it
// (CallRequest::decided_by, which the audit log writes): "policy <name>:
// rule <rule>", "policy <name>: default decision", "policy <names>:
// evaluation error", "grant" (an ask the session's grants covered), then,
// for a batch that asked, "user" (the answer; a deny names the user on
// every call of the batch) or "timeout". The same goes to the metrics
// sink, once per call when decided and once per asked call when the ask
// ends by an answer or a timeout (not when it is cancelled). A daemon whose
// policies can neither deny nor ask decides nothing: no accounting.
//
// How an ask waits: the uncovered needs of the whole batch are grouped into
// suggested grants (permissions.h), each sent as one PermissionRequest to the
// batch's observer (the ExecuteBatch stream) and to the session's watchers.
// The batch is then parked in a PendingAsk, which is the BatchHandle the
// caller holds: no call of the batch starts and no thread waits. It is
// resolved exactly once, by whichever comes first:
// - RespondPermission (any gRPC thread): ALLOW_SESSION keeps the grant for
//   the session; once every request of the batch is allowed the batch starts
//   on the runner, on that thread (Start never blocks). One DENY makes every
//   call of the batch DENIED ("Permission denied by user").
// - the ask timeout (a TimerQueue thread, handing the work to this module's
//   small executor): every call DENIED.
// - Cancel (the stream was cancelled or broke, the drain's grace ran out,
//   Stop, or the session closed): every call CANCELLED.
// A resolved batch always goes through the runner (refused calls never run,
// but their results are delivered in call order as any other), so the
// observer's contract is the runner's. After resolution the handle forwards
// Cancel and ResultsReleased to the runner's handle.
//
// Threads and ownership: PolicyEngine is owned by the engine and outlives the
// batches it parks only through shared_ptr (a PendingAsk holds a shared_ptr
// to the shared state it needs); its destructor cancels what is still
// pending. All methods are thread-safe.
#ifndef TOOLEXEC_CORE_POLICY_H_
#define TOOLEXEC_CORE_POLICY_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/permissions.h"
#include "tools/runtime/decision.h"
#include "tools/runtime/metrics.h"
#include "tools/runtime/session.h"
#include "tools/runtime/tool_registry.h"
#include "tools/runtime/tool_runner.h"

namespace toolexec {

// One rule: it matches a call when `tool` matches (the tool's name,
// "<server>/*" for an MCP server's tools, or "*") and every condition it sets
// holds for some need of the call.
struct PolicyRuleOptions {
  std::string name;
  std::string tool;
  PolicyDecision decision = PolicyDecision::kAllow;
  // The paths the call touches match this glob (find_file's syntax, without
  // '/' matching the name), each relative to the daemon's workspace root
  // (CallFacts::roots) when inside it, else absolute (with its leading '/'
  // dropped). An allow rule matches when EVERY path of the call matches; a
  // deny or ask rule when ANY does.
  std::string path_glob;
  // A command pattern (CommandPattern: "git *"). An allow rule matches a
  // call when the pattern covers every command need of it (CommandCovers:
  // every simple command each line runs); a deny or ask rule when it may
  // match some simple command (CommandMayMatch), which a line static
  // analysis cannot see through, or that sets a variable that makes code
  // run, always may (unless an allow rule of the same policy that covers
  // the line names that variable in its allow_code_env).
  std::string command_pattern;
  // A domain the call reaches matches (DomainCovers).
  std::string domain;
  // A path the call touches lies outside every workspace of the call (an
  // allow rule: every path it touches does).
  bool outside_workspace = false;
  // Allow rules with a command_pattern: the variables that make code run
  // (command::IsCodeVariable) that the call may set and still be covered.
  std::vector<std::string> allow_code_env;
};

struct PolicyProfileOptions {
  std::string name;
  std::optional<PolicyDecision> default_decision;  // unset = allow
  std::vector<PolicyRuleOptions> rules;
  // The built-in read_only profile: a tool the call's registry snapshot
  // declares read-only is allowed (rule "read-only tool"), any other gets the
  // default decision. Decided per call, so a name that later belongs to
  // another tool (an MCP server's list changed) is judged by that tool.
  bool allow_read_only_tools = false;
};

struct PolicyOptions {
  std::optional<PolicyDecision> default_decision;  // unset = allow
  std::vector<PolicyRuleOptions> rules;
  std::vector<PolicyProfileOptions> profiles;
  absl::Duration ask_timeout = absl::Seconds(60);
};

// Profiles every daemon has, beside "default" (the config's own policy).
inline constexpr absl::string_view kProfileDefault = "default";
inline constexpr absl::string_view kProfileAllowAll = "allow_all";
inline constexpr absl::string_view kProfileReadOnly = "read_only";
inline constexpr absl::string_view kProfileWorkspaceOnly = "workspace_only";

// Checks names, decisions and globs; InvalidArgument naming the rule or
// profile and what to change. PolicyEngine::Create runs it too.
absl::Status ValidatePolicyOptions(const PolicyOptions& options);

// What the person answered (mirrors toolexec.v1.PermissionDecision).
enum class PermissionAnswer { kAllowOnce, kAllowSession, kDeny };

// "allow_once", "allow_session" or "deny".
absl::string_view PermissionAnswerName(PermissionAnswer answer);

class Policy;
using PolicyChain = std::vector<std::shared_ptr<const Policy>>;

// One call's facts, as a policy sees them.
struct CallFacts {
  std::string tool;
  std::string server_name;
  // Paths normalized and absolute (relative ones joined to the first
  // workspace).
  std::vector<PermissionRequirement> needs;
  std::vector<std::string> workspaces;  // real paths of the call's roots
  // The daemon's workspace root (as configured and as the kernel names it):
  // what path_glob is relative to, whatever root a session chose. Empty: the
  // first of `workspaces`.
  std::vector<std::string> roots;
  bool read_only = false;               // the tool declares itself read-only
};

struct PolicyVerdict {
  PolicyDecision decision = PolicyDecision::kAllow;
  std::string policy;  // the policy that decided
  std::string rule;    // its rule, "" for its default decision
  // Why the rule matched when that is not plain (a command line it cannot
  // see through); "" otherwise.
  std::string note;
  // The rule has a path condition (path_glob or outside_workspace).
  bool path_rule = false;
  // Why, for a person: "rule 'x' of policy 'y'" or "the default decision of
  // policy 'y'".
  std::string Explain() const;
  // The same for the audit log: "policy y: rule x" or "policy y: default
  // decision".
  std::string DecidedBy() const;
};

// One compiled policy (a profile). Immutable, thread-safe.
class Policy final {
 public:
  static absl::StatusOr<std::shared_ptr<const Policy>> Create(const PolicyProfileOptions& options);
  ~Policy();
  const std::string& name() const { return name_; }
  // True when nothing can be denied or asked (no rules, default allow).
  bool allows_everything() const { return allows_everything_; }
  // Some rule has a path condition (path_glob or outside_workspace).
  bool has_path_rules() const { return has_path_rules_; }
  PolicyVerdict Evaluate(const CallFacts& call) const;

 private:
  struct Rule;
  Policy() = default;
  std::string name_;
  PolicyDecision default_decision_ = PolicyDecision::kAllow;
  std::vector<Rule> rules_;
  bool allows_everything_ = true;
  bool has_path_rules_ = false;
  bool allow_read_only_tools_ = false;
};

// The strictest verdict of `chain` for `call` (the config's policy when the
// chain is empty is the caller's job: pass it in the chain).
PolicyVerdict EvaluateChain(const PolicyChain& chain, const CallFacts& call);

// For a call that walks a tree (`call` without its needs): whether reading
// the file `path` (absolute, normalized) is kept from it, because a path rule
// of some policy of `chain` denies reading it, or asks about it and no grant
// of `grants` (may be null) covers it. The call as a whole was decided
// already, so its default decisions and rules without a path condition do
// not count here.
bool LeftOutByPolicy(const PolicyChain& chain, const CallFacts& call, GrantSet* grants,
                     const std::string& path);

class PolicyEngine final {
 public:
  // Starts a (possibly refused) batch on the runner.
  using StartFn = std::function<absl::StatusOr<std::shared_ptr<BatchHandle>>(BatchRequest,
                                                                               BatchObserver*)>;

  // `registry` must outlive the engine; read_only is built from its tools
  // that declare themselves read-only. `default_workspace`: where calls
  // without a session resolve relative paths.
  // `metrics` (may be null) is told of every decision and of each ask's
  // outcome (MetricsSink::PermissionDecided).
  static absl::StatusOr<std::unique_ptr<PolicyEngine>> Create(
      PolicyOptions options, const ToolRegistry* registry, std::string default_workspace,
      std::shared_ptr<MetricsSink> metrics = nullptr);
  // Cancels every pending ask (their batches complete as CANCELLED).
  ~PolicyEngine();
  PolicyEngine(const PolicyEngine&) = delete;
  PolicyEngine& operator=(const PolicyEngine&) = delete;

  // InvalidArgument naming the known profiles when `name` is not one.
  absl::Status CheckProfile(const std::string& name) const;

  // The session's own profiles (see the header comment): its parent's (if
  // the parent is open and known), then `requested` ("" = none). Neither the
  // config's policy nor the caller's profile is part of it: every call adds
  // them as they are then.
  absl::StatusOr<PolicyChain> ChainForSession(const std::string& parent_session_id,
                                              const std::string& requested) const;
  // Remembers `session`'s own profiles (and, from now on, its grants).
  void AttachSession(const std::shared_ptr<Session>& session, PolicyChain chain);
  // Cancels the session's pending asks and forgets it.
  void DetachSession(const std::string& session_id);

  // Decides `batch` by the config's policy, `caller_profile` (the caller's
  // credential's now, "" = none) and the session's profiles, and starts it
  // through `start`, now or once asked.
  // Errors: InvalidArgument for an unknown caller profile; `start`'s error
  // when it starts now.
  // `caller_name` owns the questions the batch asks: only the same caller
  // can answer them (Respond).
  absl::StatusOr<std::shared_ptr<BatchHandle>> StartBatch(const std::string& caller_name,
                                                          const std::string& caller_profile,
                                                          BatchRequest batch,
                                                          BatchObserver* observer,
                                                          StartFn start);

  // Judges a write the daemon makes for a caller outside any batch (a
  // checkpoint restore, as the tool `tool`): every path of `paths`
  // (absolute) as a write need of one call in `session`, by the same chain
  // as the session's batches. OK when the call may run; PermissionDenied
  // naming the rule when a policy denies it, or asks and the session's grants
  // do not cover every path (nobody can be asked outside a batch).
  absl::Status JudgeWrite(const std::string& caller_profile, const std::shared_ptr<Session>& session,
                          const std::string& tool, const std::vector<std::string>& paths) const;

  // Answers one PermissionRequest. NotFound when `request_id` is not pending
  // (answered, timed out or cancelled) or another caller's batch asked it.
  absl::Status Respond(const std::string& caller_name, const std::string& request_id,
                       PermissionAnswer answer,
                       const std::string& reason);

  // Cancels every pending ask (drain, stop).
  void CancelAll();

  size_t pending_asks() const;

 private:
  struct Shared;
  class PendingAsk;
  explicit PolicyEngine(std::shared_ptr<Shared> shared) : shared_(std::move(shared)) {}
  // The chain a call of `session` (may be null) is judged by, and the
  // session's grants (left null when it has none).
  absl::StatusOr<PolicyChain> ChainOf(const std::string& caller_profile, const Session* session,
                                      std::shared_ptr<GrantSet>* grants) const;
  std::shared_ptr<Shared> shared_;
};

}  // namespace toolexec

#endif  // TOOLEXEC_CORE_POLICY_H_
