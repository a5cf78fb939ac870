// Shared by the policy's pieces: policy.cc (rules and profiles read at
// start-up, the engine built from them and the sessions' chains),
// policy_match.cc (judging one call's facts against a policy),
// policy_decide.cc (deciding a batch's calls) and policy_ask.cc (the batches
// that wait for a person's answer). Not an API.
#ifndef TOOLEXEC_CORE_POLICY_INTERNAL_H_
#define TOOLEXEC_CORE_POLICY_INTERNAL_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "core/permissions.h"
#include "core/policy.h"
#include "tools/runtime/executor.h"
#include "tools/runtime/timer_queue.h"
#include "tools/workspace/glob.h"

namespace toolexec {

// Which rules of a policy a rule competes with: those naming the tool beat
// "<server>/*" rules beat "*" rules.
enum class Bucket { kSpecific = 0, kPrefix = 1, kGlobal = 2 };

struct Policy::Rule {
  PolicyRuleOptions options;
  Bucket bucket = Bucket::kGlobal;
  std::string server;  // kPrefix: the server name
  std::unique_ptr<fs::GlobSet> glob;
  std::optional<CommandPattern> command;
};

// What a path_glob is matched against: `path` (absolute, normalized)
// relative to the daemon's workspace root when inside it, else the absolute
// path without its leading '/'.
std::string GlobTarget(const std::string& path, const CallFacts& call);

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

  void Count(PolicyDecision d, PermissionDecidedBy by) const {
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

  void Cancel() override;
  void ResultsReleased(size_t count) override;
  absl::Status Answer(const std::string& request_id, PermissionAnswer answer,
                      const std::string& reason);

  // How the wait ended.
  enum class Outcome { kAllowedByUser, kDeniedByUser, kTimedOut, kCancelled };

  // Starts the batch: as decided when `refusal` is OK, otherwise with every
  // call refused. Exactly once. Accounts for the asked calls (see
  // Accounting in policy.h).
  void Resolve(absl::Status refusal, Outcome outcome);

 private:
  // The runner refused the batch after it had been announced (it was shut
  // down meanwhile, or is full): every call still gets its result.
  void FailWithoutRunner(const absl::Status& status);

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

}  // namespace toolexec

#endif  // TOOLEXEC_CORE_POLICY_INTERNAL_H_
