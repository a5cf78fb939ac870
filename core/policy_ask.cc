// The batches that wait for a person's answer: a PendingAsk's answers,
// timeout and cancellation, each resolving it once and starting the batch
// (see "How an ask waits" in policy.h), and the engine's calls that reach
// the pending asks.
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "core/policy.h"
#include "core/policy_internal.h"
#include "spdlog/spdlog.h"
#include "tools/runtime/call_result.h"
#include "tools/runtime/json.h"
#include "tools/runtime/model_content.h"

namespace toolexec {

void PolicyEngine::PendingAsk::Cancel() {
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

void PolicyEngine::PendingAsk::ResultsReleased(size_t count) {
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

absl::Status PolicyEngine::PendingAsk::Answer(const std::string& request_id,
                                                PermissionAnswer answer,
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

void PolicyEngine::PendingAsk::Resolve(absl::Status refusal, Outcome outcome) {
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
    const PolicyDecision decision = outcome == Outcome::kAllowedByUser
                                            ? PolicyDecision::kAllow
                                            : PolicyDecision::kDeny;
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

void PolicyEngine::PendingAsk::FailWithoutRunner(const absl::Status& status) {
  spdlog::warn("a batch that waited for a permission answer could not start: {}",
               status.ToString());
  const size_t n = call_names_.size();
  for (size_t i = 0; i < n; ++i) {
    ToolCallResult r;
    r.index = static_cast<uint32_t>(i);
    r.id = call_ids_[i];
    r.name = call_names_[i];
    const std::string message = absl::StrCat("the batch could not start: ", status.message());
    SetFailure(r, ErrorCode::kServerUnavailable, r.name, "", r.name, message,
               kDefaultModelContentChars);
    if (i + 1 < n) {
      observer_->OnResult(std::move(r));
    } else {
      observer_->OnLastResult(std::move(r));
    }
  }
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

}  // namespace toolexec
