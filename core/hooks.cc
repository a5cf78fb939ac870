#include "core/hooks.h"

#include <exception>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "core/audit_log.h"
#include "core/command_hook.h"
#include "spdlog/spdlog.h"
#include "tools/process/environment.h"
#include "tools/process/result.h"
#include "tools/runtime/executor.h"

extern char** environ;

namespace toolexec {
namespace {

absl::string_view EventName(HookEvent e) {
  switch (e) {
    case HookEvent::kPreCall:
      return "pre_call";
    case HookEvent::kPostCall:
      return "post_call";
    case HookEvent::kOnError:
      return "on_error";
  }
  return "";
}

// The JSON event a command hook reads on stdin (API.md, "Hooks speak JSON").
std::string EventJson(HookEvent event, const HookCall& call, const JsonValue* args,
                      const ToolCallResult* result) {
  Json doc = MakeObject();
  auto& a = doc.GetAllocator();
  command::SetString(doc, "event", EventName(event));
  command::SetString(doc, "tool", call.tool);
  command::SetString(doc, "call_id", call.call_id);
  command::SetString(doc, "server_name", call.server_name);
  JsonValue args_copy(rapidjson::kObjectType);
  if (args != nullptr) args_copy.CopyFrom(*args, a);
  doc.AddMember("args", args_copy, a);
  command::SetString(doc, "session_id", call.session_id);
  command::SetString(doc, "identity", call.identity);
  if (result != nullptr) {
    JsonValue r(rapidjson::kObjectType);
    r.AddMember("status", JsonValue(std::string(ResultStatusName(result->status)), a), a);
    JsonValue payload;
    payload.CopyFrom(result->payload, a);
    r.AddMember("payload", payload, a);
    if (result->error.has_value()) {
      r.AddMember("error_message", JsonValue(result->error_message, a), a);
      r.AddMember("error_code", JsonValue(std::string(ErrorCodeName(result->error->code)), a), a);
    }
    r.AddMember("duration_ms", JsonValue(absl::ToInt64Milliseconds(result->duration)), a);
    doc.AddMember("result", r, a);
  }
  return ToJsonString(doc);
}

// A command hook's stdout as a JSON object; blank output is an empty object
// when `blank_ok`.
absl::StatusOr<Json> ParseAnswer(const CommandHook& hook, const std::string& out, bool blank_ok) {
  if (blank_ok && absl::StripAsciiWhitespace(out).empty()) return MakeObject();
  auto parsed = ParseJson(out);
  if (!parsed.ok() || !parsed->IsObject()) {
    std::string shown = out.substr(0, 200);
    return absl::InvalidArgumentError(absl::StrCat(
        "hook '", hook.name(), "' printed something that is not a JSON object: '", shown, "'"));
  }
  return parsed;
}

}  // namespace


// One batch's view of the hooks: binds the caller and session, and remembers
// each call's pre-call outcome for the audit log.
class HookSet::Batch final : public CallInterceptor {
 public:
  Batch(std::shared_ptr<HookSet> set, std::string identity, std::string session_id)
      : set_(std::move(set)), identity_(std::move(identity)), session_id_(std::move(session_id)) {}

  absl::Status BeforeCall(uint32_t index, const RegisteredTool& tool, const CallRequest& req,
                          Json& args, const CancellationToken& cancel) override {
    HookCall call = CallOf(req, tool.server_name);
    auto deny = [&](const std::string& by, const std::string& message) {
      Record(index, {AuditDecision::Kind::kDenied, by});
      return ToolError(ErrorCode::kDenied, message);
    };
    // A rewrite, validated against the tool's schema at once ([Arguments] again).
    auto rewrite = [&](const std::string& hook, Json next) -> absl::Status {
      if (absl::Status s = tool.schema->Prepare(next); !s.ok()) {
        Record(index, {AuditDecision::Kind::kDenied, absl::StrCat("hook ", hook)});
        return ToolError(ErrorCode::kToolFailed,
                         absl::StrCat("hook '", hook, "' changed the arguments of '", req.name,
                                      "' into ones its schema refuses: ", s.message()));
      }
      args = std::move(next);
      return absl::OkStatus();
    };
    for (const auto& hook : set_->hooks_) {
      if (!hook->Applies(req.name)) continue;
      const std::string name = hook->name();
      PreCallDecision d;
      try {
        d = hook->PreCall(call, args, cancel);
      } catch (const std::exception& e) {
        return deny(absl::StrCat("hook ", name),
                    absl::StrCat("denied: hook '", name, "' failed: ", e.what()));
      } catch (...) {
        return deny(absl::StrCat("hook ", name), absl::StrCat("denied: hook '", name, "' failed"));
      }
      if (d.deny) {
        return deny(absl::StrCat("hook ", name),
                    absl::StrCat("denied by hook '", name, "'",
                                 d.reason.empty() ? "" : absl::StrCat(": ", d.reason)));
      }
      if (d.args.has_value()) {
        if (absl::Status s = rewrite(name, *std::move(d.args)); !s.ok()) return s;
      }
    }
    for (const auto& hook : set_->pre_) {
      if (!hook->Applies(req.name)) continue;
      const std::string by = absl::StrCat("hook ", hook->name());
      auto out = hook->Run(EventJson(HookEvent::kPreCall, call, &args, nullptr), cancel,
                           &set_->shutdown_);
      if (!out.ok()) return deny(by, absl::StrCat("denied: ", out.status().message()));
      auto answer = ParseAnswer(*hook, *out, /*blank_ok=*/false);
      if (!answer.ok()) return deny(by, absl::StrCat("denied: ", answer.status().message()));
      auto decision = answer->FindMember("decision");
      auto reason = answer->FindMember("reason");
      std::string why = reason != answer->MemberEnd() && reason->value.IsString()
                            ? absl::StrCat(": ", reason->value.GetString())
                            : "";
      if (decision == answer->MemberEnd() || !decision->value.IsString() ||
          (decision->value != "allow" && decision->value != "deny")) {
        return deny(by, absl::StrCat("denied: hook '", hook->name(),
                                     "' answered without \"decision\": \"allow\" or \"deny\""));
      }
      if (decision->value == "deny") {
        return deny(by, absl::StrCat("denied by hook '", hook->name(), "'", why));
      }
      if (auto next = answer->FindMember("args"); next != answer->MemberEnd()) {
        if (!next->value.IsObject()) {
          return deny(by, absl::StrCat("denied: hook '", hook->name(),
                                       "' answered \"args\" that is not a JSON object"));
        }
        if (absl::Status s = rewrite(hook->name(), CopyJson(next->value)); !s.ok()) return s;
      }
    }
    Record(index, {AuditDecision::Kind::kAllowed, ""});
    return absl::OkStatus();
  }

  std::optional<std::string> OnError(uint32_t, const CallRequest& req, const JsonValue* args,
                                     const ToolCallResult& result, bool on_call_thread,
                                     const CancellationToken& cancel) override {
    HookCall call = CallOf(req, result.error ? result.error->server_name : "");
    std::optional<std::string> message;
    ToolCallResult shown;  // `result` with the message so far, for the next hook
    const ToolCallResult* current = &result;
    auto reword = [&](std::string text) {
      message = std::move(text);
      shown.status = result.status;
      shown.error_message = *message;
      shown.error = result.error;
      shown.error->message = *message;
      shown.payload = MakeObject();
      shown.payload.AddMember("error", JsonValue(*message, shown.payload.GetAllocator()),
                              shown.payload.GetAllocator());
      shown.duration = result.duration;
      current = &shown;
    };
    for (const auto& hook : set_->hooks_) {
      if (!hook->Applies(req.name)) continue;
      try {
        if (auto text = hook->OnError(call, args, *current); text.has_value()) reword(*text);
      } catch (...) {
        spdlog::warn("on-error hook '{}' failed on a result of {}", hook->name(), req.name);
      }
    }
    std::vector<const CommandHook*> commands;
    for (const auto& hook : set_->on_error_) {
      if (hook->Applies(req.name)) commands.push_back(hook.get());
    }
    if (commands.empty()) return message;
    if (!on_call_thread) {
      // Reported at once; the hooks still see it (see Threads in hooks.h).
      RunLater(commands, EventJson(HookEvent::kOnError, call, args, current));
      return message;
    }
    for (const CommandHook* hook : commands) {
      auto out = hook->Run(EventJson(HookEvent::kOnError, call, args, current), cancel,
                           &set_->shutdown_);
      if (!out.ok()) {
        spdlog::warn("on-error {}", std::string(out.status().message()));
        continue;
      }
      auto answer = ParseAnswer(*hook, *out, /*blank_ok=*/true);
      if (!answer.ok()) {
        spdlog::warn("on-error {}", std::string(answer.status().message()));
        continue;
      }
      if (auto m = answer->FindMember("message"); m != answer->MemberEnd()) {
        if (m->value.IsString() && m->value.GetStringLength() > 0) {
          reword(m->value.GetString());
        } else {
          spdlog::warn("on-error hook '{}' answered a \"message\" that is not a non-empty string",
                       hook->name());
        }
      }
    }
    return message;
  }

  // Only the audit log: a line queued per call for the log's writer thread,
  // which makes the call wait only when a stalled disk has filled the queue.
  bool MayRunOnAnyThread() const override {
    return set_->hooks_.empty() && set_->pre_.empty() && set_->on_error_.empty() &&
           set_->post_.empty();
  }

  void AfterCall(uint32_t index, const CallRequest& req, const JsonValue* args,
                 const ToolCallResult& result, bool on_call_thread,
                 const CancellationToken& cancel) override {
    HookCall call = CallOf(req, result.error ? result.error->server_name : "");
    for (const auto& hook : set_->hooks_) {
      if (!hook->Applies(req.name)) continue;
      try {
        hook->PostCall(call, args, result);
      } catch (...) {
        spdlog::warn("post-call hook '{}' failed on a result of {}", hook->name(), req.name);
      }
    }
    std::vector<const CommandHook*> commands;
    for (const auto& hook : set_->post_) {
      if (hook->Applies(req.name)) commands.push_back(hook.get());
    }
    if (!commands.empty()) {
      std::string event = EventJson(HookEvent::kPostCall, call, args, &result);
      if (on_call_thread) {
        for (const CommandHook* hook : commands) {
          auto out = hook->Run(event, cancel, &set_->shutdown_);
          absl::Status s =
              out.ok() ? ParseAnswer(*hook, *out, /*blank_ok=*/true).status() : out.status();
          if (!s.ok()) spdlog::warn("post-call {}", std::string(s.message()));
        }
      } else {
        RunLater(commands, std::move(event));
      }
    }
    if (set_->audit_ != nullptr) {
      // Queued for the log's writer; only a call's own thread may wait for
      // room (core/audit_log.h).
      set_->audit_->Write(AuditLog::Line(call, args, result, DecisionOf(index, req, result)),
                          /*may_wait=*/on_call_thread);
    }
  }

 private:
  HookCall CallOf(const CallRequest& req, const std::string& server_name) const {
    return HookCall{req.id, req.name, server_name, session_id_, identity_};
  }

  void Record(uint32_t index, AuditDecision d) {
    if (set_->audit_ == nullptr) return;
    absl::MutexLock lock(&mu_);
    decisions_[index] = std::move(d);
  }

  // The hooks' outcome; for a call they let run, what the policy decided
  // (CallRequest::decided_by); for one refused before them, who refused.
  AuditDecision DecisionOf(uint32_t index, const CallRequest& req, const ToolCallResult& result) {
    {
      absl::MutexLock lock(&mu_);
      if (auto it = decisions_.find(index); it != decisions_.end()) {
        AuditDecision d = it->second;
        if (d.kind == AuditDecision::Kind::kAllowed) d.by = req.decided_by;
        return d;
      }
    }
    if (result.status == ResultStatus::kDenied) {
      return {AuditDecision::Kind::kDenied, req.decided_by.empty() ? "daemon" : req.decided_by};
    }
    return {AuditDecision::Kind::kNotRun, ""};
  }

  // Runs command hooks of a result completed off its call's thread on the
  // hook set's executor; their answers are only logged.
  void RunLater(const std::vector<const CommandHook*>& hooks, std::string event) {
    // The executor is joined before the hooks go (HookSet::Shutdown).
    const CancellationToken* shutdown = &set_->shutdown_;
    absl::Status queued = set_->async_->Submit([shutdown, hooks, event = std::move(event)] {
      for (const CommandHook* hook : hooks) {
        if (shutdown->cancelled()) return;
        auto out = hook->Run(event, *shutdown, nullptr);
        if (!out.ok()) spdlog::warn("{}", std::string(out.status().message()));
      }
    });
    if (!queued.ok()) spdlog::warn("hooks not run at shutdown: {}", std::string(queued.message()));
  }

  const std::shared_ptr<HookSet> set_;
  const std::string identity_;
  const std::string session_id_;
  absl::Mutex mu_;
  absl::flat_hash_map<uint32_t, AuditDecision> decisions_ ABSL_GUARDED_BY(mu_);
};

HookSet::HookSet() = default;

HookSet::~HookSet() { Shutdown(); }

absl::StatusOr<std::shared_ptr<HookSet>> HookSet::Create(HookOptions options,
                                                         const ToolRegistry& registry) {
  std::shared_ptr<HookSet> set(new HookSet());
  set->hooks_ = std::move(options.in_process);
  absl::flat_hash_map<std::string, int> names;
  for (const auto& h : set->hooks_) ++names[h->name()];
  if (!options.command_hooks.empty()) {
    // The same environment run_command gives a command: the daemon's minus
    // its secrets (a snapshot: the daemon wipes its secrets once started).
    std::vector<std::string> env = command::ScrubEnvironment(environ, {});
    for (auto& o : options.command_hooks) {
      if (++names[o.name] > 1) {
        return absl::InvalidArgumentError(
            absl::StrCat("hook '", o.name, "' is declared twice; give each hook its own name"));
      }
      const HookEvent event = o.event;
      auto hook = CommandHook::Create(std::move(o), registry, env);
      if (!hook.ok()) return hook.status();
      auto& list = event == HookEvent::kPreCall   ? set->pre_
                   : event == HookEvent::kOnError ? set->on_error_
                                                  : set->post_;
      list.push_back(*std::move(hook));
    }
  }
  if (!options.audit_log.empty()) {
    auto audit = AuditLog::Open(options.audit_log);
    if (!audit.ok()) return audit.status();
    set->audit_ = *std::move(audit);
  }
  set->async_ = std::make_unique<Executor>(Executor::Options{
      /*min_threads=*/0, /*max_threads=*/4, /*idle_timeout=*/absl::Seconds(10)});
  return set;
}

bool HookSet::empty() const {
  return hooks_.empty() && pre_.empty() && on_error_.empty() && post_.empty() &&
         audit_ == nullptr;
}

std::shared_ptr<CallInterceptor> HookSet::ForBatch(std::string identity, std::string session_id) {
  if (empty()) return nullptr;
  return std::make_shared<Batch>(shared_from_this(), std::move(identity), std::move(session_id));
}

void HookSet::Shutdown() {
  shutdown_.Cancel(CancelReason::kShutdown);
  if (async_ != nullptr) async_->Shutdown();
}

}  // namespace toolexec
