#include "tools/runtime/call_pipeline.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tools/runtime/call_result.h"
#include "tools/runtime/utf8.h"

namespace toolexec {
namespace {

// Edit distance, case-insensitive: how many single-character insertions,
// deletions and substitutions turn `a` into `b`.
size_t EditDistance(absl::string_view a, absl::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      bool same = absl::ascii_tolower(a[i - 1]) == absl::ascii_tolower(b[j - 1]);
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (same ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// A tool name the caller sent that names no tool is echoed (in the result and
// the audit log) cut to this many characters.
constexpr size_t kMaxEchoedNameChars = 128;

// Up to three of `names` close to `name` (a typo away, or one containing the
// other), closest first.
std::vector<std::string> ClosestNames(absl::string_view name,
                                      const std::vector<std::string>& names) {
  std::string lower = absl::AsciiStrToLower(name);
  std::vector<std::pair<size_t, std::string>> scored;
  for (const auto& n : names) {
    std::string candidate = absl::AsciiStrToLower(n);
    size_t d = EditDistance(lower, candidate);
    bool contains = lower.size() >= 3 && (absl::StrContains(candidate, lower) ||
                                          absl::StrContains(lower, candidate));
    if (d <= std::max<size_t>(2, std::min(lower.size(), candidate.size()) / 3) || contains) {
      scored.emplace_back(d, n);
    }
  }
  std::stable_sort(scored.begin(), scored.end(),
                   [](const auto& x, const auto& y) { return x.first < y.first; });
  std::vector<std::string> out;
  for (size_t k = 0; k < scored.size() && k < 3; ++k) out.push_back(scored[k].second);
  return out;
}

// The tool's rendering of a success, held to the budget; the default
// rendering if the tool's throws.
std::string SuccessModelContent(const Tool& tool, const JsonValue& args, const JsonValue& payload,
                                const ModelContentBudget& budget) {
  std::string text;
  try {
    text = tool.model_content(args, payload, budget);
  } catch (...) {
    return DefaultModelContent(payload, budget.max_chars);
  }
  if (Utf8Chars(text) <= budget.max_chars) return text;
  return CutMiddle(text, budget.max_chars, "the result was cut to fit");
}

// Tells the interceptor's later steps the arguments the tool got.
void SetSeenArgs(PipelineCall& call, const JsonValue& args) {
  std::atomic_store(call.seen_args, std::make_shared<const Json>(CopyJson(args)));
}

}  // namespace

absl::StatusOr<Json> CallPipeline::ParseArgs(const CallRequest& req) {
  if (!req.args_error.ok()) return req.args_error;
  bool has_text = !absl::StripAsciiWhitespace(req.args_json).empty();
  if (req.args.has_value()) {
    if (has_text) {
      return absl::InvalidArgumentError("give the arguments as args or as args_json, not both");
    }
    if (absl::Status s = CheckUniqueKeys(*req.args, "args"); !s.ok()) return s;
    return CopyJson(*req.args);
  }
  // [Arguments]: missing, empty or whitespace args_json means {}.
  if (!has_text) return MakeObject();
  auto parsed = ParseJson(req.args_json);
  if (parsed.ok()) {
    if (absl::Status s = CheckUniqueKeys(*parsed, "args"); !s.ok()) parsed = s;
  }
  if (!parsed.ok()) return absl::InvalidArgumentError(absl::StrCat("args_json: ", parsed.status().message()));
  return parsed;
}

ToolCallResult CallPipeline::Run(PipelineCall& call) const {
  const CallRequest& req = *call.request;
  try {
    return Execute(call);
  } catch (const std::exception& e) {
    return Failure(req, call.tool, ErrorCode::kToolFailed,
                   absl::StrCat("tool '", req.name, "' threw an exception: ", e.what()));
  } catch (...) {
    return Failure(req, call.tool, ErrorCode::kToolFailed,
                   absl::StrCat("tool '", req.name, "' threw a non-standard exception"));
  }
}

ToolCallResult CallPipeline::Execute(PipelineCall& call) const {
  const CallRequest& req = *call.request;
  const RegisteredTool* rt = call.tool;
  if (rt == nullptr) {
    return Failure(req, nullptr, ErrorCode::kUnknownTool, UnknownToolMessage(req.name));
  }
  if (!req.refusal.ok()) return Failure(req, rt, ErrorCodeOf(req.refusal), req.refusal.message());
  if (scope_.session != nullptr && !scope_.session->AllowsTool(*rt)) {
    return Failure(req, rt, ErrorCode::kDenied,
                   absl::StrCat("tool '", req.name, "' is not enabled in session ",
                                scope_.session->id(), "; its tools are: ",
                                absl::StrJoin(scope_.session->ToolNames(*scope_.registry), ", ")));
  }
  // [Tools run elsewhere]: declared here, run elsewhere; say who runs it before anything else.
  if (rt->tool->spec().executor != ToolExecutor::kDaemon) {
    return Failure(req, rt, ErrorCode::kNotExecutableHere, rt->tool->not_executable_message());
  }
  absl::StatusOr<Json> args = call.args->has_value() ? std::move(**call.args) : ParseArgs(req);
  call.args->reset();
  if (!args.ok()) return Failure(req, rt, ErrorCode::kInvalidArguments, args.status().message());
  if (absl::Status s = rt->schema->Prepare(*args); !s.ok()) {
    if (scope_.interceptor != nullptr) SetSeenArgs(call, *args);
    return Failure(req, rt, ErrorCode::kInvalidArguments, s.message(), &*args);
  }
  const Tool& tool = *rt->tool;
  // [Context]: never fall back to running without the context the tool asked for.
  if (tool.spec().needs_context && scope_.session == nullptr) {
    return Failure(req, rt, ErrorCode::kNoContext,
                   absl::StrCat("tool '", req.name,
                                "' needs a session context: open one with OpenSession and pass "
                                "its session_id in ExecuteBatch"),
                   &*args);
  }
  // --- hooks (core/hooks.h): may deny the call or replace its arguments ---
  if (scope_.interceptor != nullptr) {
    absl::Status decided = scope_.interceptor->BeforeCall(call.index, *rt, req, *args, *call.token);
    SetSeenArgs(call, *args);  // a denied call's arguments are audited too
    if (!decided.ok()) return Failure(req, rt, ErrorCodeOf(decided), decided.message(), &*args);
  }
  // --- end hooks ---
  CallInfo info;
  info.call_id = req.id;
  info.tool_name = req.name;
  info.step_id = req.step_id;
  info.deadline = scope_.deadline;
  info.artifacts = scope_.artifacts;
  info.model_content = scope_.budget;
  info.traceparent = scope_.traceparent;
  info.left_out_by_policy = req.left_out_by_policy;
  if (scope_.session != nullptr) {
    info.session_id = scope_.session->id();
    info.user_id = scope_.session->user_id();
    info.caller = scope_.session->owner();
    info.workspaces = scope_.session->workspaces();
  }
  if (info.workspaces.empty() && scope_.default_workspace != nullptr) {
    info.workspaces.push_back(scope_.default_workspace);
  }
  std::weak_ptr<Session> session;
  if (tool.spec().needs_context) session = scope_.session;
  ToolContext ctx(std::move(info), session, call.token, call.progress);
  absl::StatusOr<Json> out = tool.Call(*args, ctx);
  if (!out.ok()) {
    ToolCallResult r = Failure(req, rt, ErrorCodeOf(out.status()), out.status().message(), &*args);
    r.actions = ctx.TakeActions();
    return r;
  }
  ToolCallResult r;
  r.status = ResultStatus::kSuccess;
  r.payload = ShapePayload(std::move(*out));
  r.actions = ctx.TakeActions();
  r.display = tool.display(*args, r.payload);
  r.compact_summary = tool.compact_summary(*args, r.payload, true);
  r.model_content = SuccessModelContent(tool, *args, r.payload, scope_.budget);
  return r;
}

ToolCallResult CallPipeline::Failure(const CallRequest& request, const RegisteredTool* rt,
                                     ErrorCode code, absl::string_view message,
                                     const JsonValue* args) const {
  // An unknown tool's name is the caller's text: echoed cut.
  const std::string name =
      rt != nullptr ? request.name : Utf8Cut(request.name, kMaxEchoedNameChars);
  ToolCallResult r;
  SetFailure(r, code, name, rt ? rt->server_name : "",
             rt ? rt->tool->spec().display_name : name, message, scope_.budget.max_chars);
  if (rt != nullptr) {
    static const JsonValue kNoArgs(rapidjson::kObjectType);
    try {
      r.compact_summary = rt->tool->compact_summary(args ? *args : kNoArgs, r.payload, false);
    } catch (...) {
      // Keep the default summary: a throwing summary must not hide the error.
    }
  }
  return r;
}

std::string CallPipeline::UnknownToolMessage(absl::string_view name) const {
  // Only the tools this batch could call (a session's choice is applied
  // to the batch's registry: a tool an MCP server removed is not offered).
  std::vector<std::string> callable =
      scope_.session != nullptr ? scope_.session->ToolNames(*scope_.registry)
                             : scope_.registry->names();
  // A name far longer than any tool's is no typo (and its edit distance
  // would cost time): no suggestion, and it is echoed cut.
  std::vector<std::string> close;
  if (name.size() <= kMaxEchoedNameChars) close = ClosestNames(name, callable);
  const std::string shown = Utf8Cut(name, kMaxEchoedNameChars);
  if (!close.empty()) {
    return absl::StrCat("unknown tool '", shown, "'; did you mean ",
                        absl::StrJoin(close, " or "), "?");
  }
  return absl::StrCat("unknown tool '", shown, "'; the tools you can call are: ",
                      absl::StrJoin(callable, ", "));
}

}  // namespace toolexec
