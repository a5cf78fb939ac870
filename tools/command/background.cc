#include "tools/command/background.h"

#include <algorithm>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "tools/command/command.h"
#include "tools/process/output_capture.h"
#include "tools/process/result.h"
#include "tools/runtime/json_fields.h"
#include "tools/runtime/executor.h"
#include "tools/runtime/tool.h"

namespace toolexec::command {

struct BackgroundProcesses::Entry {
  Entry(std::string id_in, std::string session_in, std::string command_in,
        std::chrono::milliseconds grace, size_t log_limit)
      : id(std::move(id_in)),
        session_id(std::move(session_in)),
        command_line(std::move(command_in)),
        kill_grace(grace),
        log(log_limit) {}

  // The pump thread holds a raw pointer: it ends before the entry does.
  ~Entry() {
    if (thread.joinable()) {
      if (run != nullptr) run->RequestStop(StopReason::kShutdown);
      thread.join();
    }
  }

  bool Exited() {
    absl::MutexLock lock(&mu);
    return exited;
  }

  // Waits until exited, `deadline` or `cancel`; returns exited.
  bool WaitExited(absl::Time deadline, const CancellationToken* cancel) {
    absl::MutexLock lock(&mu);
    while (!exited && absl::Now() < deadline && !(cancel && cancel->cancelled())) {
      absl::Time slice = std::min(deadline, absl::Now() + absl::Milliseconds(50));
      mu.AwaitWithDeadline(absl::Condition(&exited), slice);
    }
    return exited;
  }

  const std::string id;
  const std::string session_id;
  const std::string command_line;
  // Set once by the pump thread before the entry is published (then read-only).
  std::unique_ptr<CommandRun> run;
  const std::chrono::milliseconds kill_grace;
  std::thread thread;

  absl::Mutex mu;
  BackgroundLog log ABSL_GUARDED_BY(mu);
  bool exited ABSL_GUARDED_BY(mu) = false;
  CommandOutcome outcome ABSL_GUARDED_BY(mu);
};

absl::StatusOr<std::string> BackgroundProcesses::Start(StartRequest request) {
  std::vector<std::shared_ptr<Entry>> evicted;
  std::string id;
  {
    absl::MutexLock lock(&mu_);
    if (shut_down_) {
      return absl::FailedPreconditionError(
          "the daemon is shutting down: no new background commands");
    }
    // Those still being spawned count too, so concurrent starts cannot pass
    // the limits.
    size_t running = starting_.size();
    size_t running_here = std::count(starting_.begin(), starting_.end(), request.session_id);
    for (const auto& e : entries_) {
      if (e->Exited()) continue;
      ++running;
      if (e->session_id == request.session_id) ++running_here;
    }
    if (running >= kMaxRunningBackground) {
      return absl::ResourceExhaustedError(
          absl::StrCat("too many background commands are running (", running, " of at most ",
                       kMaxRunningBackground, "); end some with kill_command first"));
    }
    if (running_here >= kMaxRunningBackgroundPerSession) {
      return absl::ResourceExhaustedError(
          absl::StrCat("this session already runs ", running_here, " background commands (at most ",
                       kMaxRunningBackgroundPerSession, "); end some with kill_command first"));
    }
    // Make room by forgetting the oldest finished entries.
    while (entries_.size() >= kMaxEntries) {
      auto it = std::find_if(entries_.begin(), entries_.end(),
                             [](const std::shared_ptr<Entry>& e) { return e->Exited(); });
      if (it == entries_.end()) break;
      evicted.push_back(std::move(*it));
      entries_.erase(it);
    }
    id = absl::StrCat("bg-", next_id_++);
    starting_.push_back(request.session_id);
  }
  evicted.clear();  // joins finished pump threads, outside the lock
  const std::string session_id = request.session_id;
  auto done_starting = [this, &session_id]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    starting_.erase(std::find(starting_.begin(), starting_.end(), session_id));
  };

  std::chrono::milliseconds grace = request.spec.kill_grace;
  size_t log_limit = 2 * request.spec.capture_bytes;
  auto entry = std::make_shared<Entry>(id, std::move(request.session_id),
                                       std::move(request.command_line), grace, log_limit);
  Entry* e = entry.get();
  // The pump thread spawns the command itself: the child's leader dies with
  // the thread that spawned it (see ChildProcess::Spawn), and this thread
  // lives exactly as long as the command.
  absl::Notification spawned;
  absl::Status spawn_status;
  auto thread =
      StartThread([e, spec = std::move(request.spec), &spawned, &spawn_status]() mutable {
        auto run = CommandRun::Start(std::move(spec));
        if (!run.ok()) {
          spawn_status = run.status();
          spawned.Notify();
          return;
        }
        e->run = std::move(*run);
        spawned.Notify();  // the caller's locals are not touched after this
        CommandOutcome o = e->run->Wait([e](bool is_stderr, absl::string_view text) {
          absl::MutexLock lock(&e->mu);
          e->log.Append(is_stderr, text);
        });
        absl::MutexLock lock(&e->mu);
        e->outcome = std::move(o);
        e->exited = true;
      });
  if (!thread.ok()) {
    absl::MutexLock lock(&mu_);
    done_starting();
    return thread.status();
  }
  entry->thread = *std::move(thread);
  spawned.WaitForNotification();
  if (!spawn_status.ok()) {
    entry->thread.join();
    absl::MutexLock lock(&mu_);
    done_starting();
    return spawn_status;
  }
  bool refused = false;
  {
    absl::MutexLock lock(&mu_);
    done_starting();
    if (shut_down_) {
      refused = true;
    } else {
      entries_.push_back(entry);
    }
  }
  if (refused) {
    entry.reset();  // stops and joins
    return absl::FailedPreconditionError("the daemon is shutting down: no new background commands");
  }
  return id;
}

std::shared_ptr<BackgroundProcesses::Entry> BackgroundProcesses::Find(
    absl::string_view session_id, absl::string_view process_id) const {
  absl::MutexLock lock(&mu_);
  for (const auto& e : entries_) {
    if (e->id == process_id && e->session_id == session_id) return e;
  }
  return nullptr;
}

namespace {

absl::Status UnknownProcess(absl::string_view session_id, absl::string_view process_id) {
  return ToolError(ErrorCode::kInvalidArguments,
                   absl::StrCat("no background command '", process_id, "' in ",
                                session_id.empty() ? std::string("calls without a session")
                                                   : absl::StrCat("session ", session_id),
                                "; run_command with background:true returns a process_id "
                                "(finished ones are forgotten when the session closes)"));
}

}  // namespace

Json BackgroundProcesses::Report(Entry& e, bool killed) {
  Json out = MakeObject();
  SetString(out, "process_id", e.id);
  SetString(out, "command_line", e.command_line);
  absl::MutexLock lock(&e.mu);
  BackgroundLog::Read r = e.log.TakeUnread();
  SetBool(out, "running", !e.exited);
  if (e.exited) {
    SetExit(out, e.outcome.exit);
    SetString(out, "timed_out", TimedOutName(e.outcome.stop));
    SetBool(out, "killed", e.outcome.stop == StopReason::kKilled);
    SetInt(out, "duration_ms", e.outcome.duration.count());
  } else {
    SetInt(out, "duration_ms",
           std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - e.run->started())
               .count());
    if (killed) SetBool(out, "killed", false);
  }
  SetOutput(out, r.stdout_text, r.stderr_text, r.combined);
  // Sequence numbers of the output chunks this report carries (0 when none);
  // the next report starts after last_seq.
  SetInt(out, "first_seq", static_cast<int64_t>(r.first_seq));
  SetInt(out, "last_seq", static_cast<int64_t>(r.last_seq));
  SetInt(out, "omitted_bytes", static_cast<int64_t>(r.omitted_bytes));
  return out;
}

absl::StatusOr<Json> BackgroundProcesses::Status(absl::string_view session_id,
                                                 absl::string_view process_id, absl::Duration wait,
                                                 const CancellationToken& cancel) {
  std::shared_ptr<Entry> e = Find(session_id, process_id);
  if (e == nullptr) return UnknownProcess(session_id, process_id);
  if (wait > absl::ZeroDuration()) e->WaitExited(absl::Now() + wait, &cancel);
  return Report(*e, false);
}

absl::StatusOr<Json> BackgroundProcesses::Kill(absl::string_view session_id,
                                               absl::string_view process_id,
                                               const CancellationToken& cancel) {
  std::shared_ptr<Entry> e = Find(session_id, process_id);
  if (e == nullptr) return UnknownProcess(session_id, process_id);
  bool already = e->Exited();
  if (!already) {
    e->run->RequestStop(StopReason::kKilled);
    absl::Duration bound = absl::FromChrono(e->kill_grace) + absl::Seconds(2);
    e->WaitExited(absl::Now() + bound, &cancel);
  }
  Json out = Report(*e, true);
  SetBool(out, "already_exited", already);
  return out;
}

void BackgroundProcesses::EndAll(std::vector<std::shared_ptr<Entry>> entries) {
  for (auto& e : entries) e->run->RequestStop(StopReason::kShutdown);
  entries.clear();  // each destructor joins its pump thread
}

void BackgroundProcesses::CloseSession(absl::string_view session_id) {
  std::vector<std::shared_ptr<Entry>> ending;
  {
    absl::MutexLock lock(&mu_);
    auto keep = std::stable_partition(
        entries_.begin(), entries_.end(),
        [&](const std::shared_ptr<Entry>& e) { return e->session_id != session_id; });
    ending.assign(std::make_move_iterator(keep), std::make_move_iterator(entries_.end()));
    entries_.erase(keep, entries_.end());
  }
  EndAll(std::move(ending));
}

BackgroundProcesses::~BackgroundProcesses() { Shutdown(); }

void BackgroundProcesses::Shutdown() {
  std::vector<std::shared_ptr<Entry>> ending;
  {
    absl::MutexLock lock(&mu_);
    shut_down_ = true;
    ending.swap(entries_);
  }
  EndAll(std::move(ending));
}

size_t BackgroundProcesses::running() const {
  absl::MutexLock lock(&mu_);
  size_t n = 0;
  for (const auto& e : entries_) n += e->Exited() ? 0 : 1;
  return n;
}

std::string ProcessIdOf(const JsonValue& input) {
  return builtin::StringField(input, "process_id", "?");
}

std::vector<std::string> ProcessResources(const JsonValue& input) {
  auto id = builtin::StringArg(input, "process_id");
  if (!id.has_value() || id->empty()) return {};
  return {CommandResource(*id)};
}

std::string ProcessTitle(absl::string_view tool, const JsonValue& input) {
  auto id = builtin::StringArg(input, "process_id");
  return id.has_value() ? absl::StrCat(tool, " ", *id) : std::string(tool);
}

}  // namespace toolexec::command
