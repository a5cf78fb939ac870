#include "mcp/client/stdio_transport.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "tools/process/child_process.h"
#include "tools/process/environment.h"
#include "tools/process/sandbox.h"
#include "tools/runtime/executor.h"

namespace toolexec::mcp {
namespace {

// The program's absolute path: looked up on PATH when it has no '/', else
// taken relative to `cwd`.
absl::StatusOr<std::string> ResolveProgram(const StdioOptions& o) {
  const std::string& name = o.argv.front();
  if (name.find('/') == std::string::npos) {
    std::string path = command::LookupEnvironment(o.env, "PATH");
    if (path.empty()) path = "/usr/local/bin:/usr/bin:/bin";
    return command::FindExecutable(name, path);
  }
  if (name[0] == '/') return command::FindExecutable(name, "");
  std::string base = o.cwd;
  if (base.empty()) {
    char buf[4096];
    if (getcwd(buf, sizeof(buf)) == nullptr) return absl::InternalError("getcwd failed");
    base = buf;
  }
  return command::FindExecutable(absl::StrCat(base, "/", name), "");
}

}  // namespace

StdioTransport::StdioTransport(StdioOptions options) : options_(std::move(options)) {
  if (options_.log == nullptr) options_.log = std::make_shared<ServerLog>(options_.server_name);
}

absl::Status StdioTransport::Start(TransportCallbacks callbacks) {
  if (options_.argv.empty()) return absl::InvalidArgumentError("no command to start");
  callbacks_ = std::move(callbacks);
  int wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake < 0) return absl::ResourceExhaustedError(absl::StrCat("eventfd: ", strerror(errno)));
  wake_.reset(wake);
  absl::Notification spawned;
  absl::Status spawn_status;
  auto thread = StartThread([this, &spawned, &spawn_status] { ReaderLoop(&spawned, &spawn_status); });
  if (!thread.ok()) return thread.status();
  reader_ = std::move(*thread);
  spawned.WaitForNotification();
  if (!spawn_status.ok()) {
    reader_.join();
    closing_.store(true);
  }
  return spawn_status;
}

void StdioTransport::Unreadable(absl::string_view head, absl::string_view tail,
                                const std::string& why, absl::string_view line) {
  options_.log->Write("", line.empty() ? why : absl::StrCat(why, ": ", line));
  auto answer = AnswerInPlaceOf(head, tail, why);
  if (answer.has_value() && !closing_.load()) callbacks_.on_message(*std::move(answer));
}

std::string StdioTransport::Describe() const { return absl::StrCat("pid ", pid_.load()); }

absl::Status StdioTransport::Send(const std::string& message, absl::Time deadline) {
  std::string line = message + "\n";
  absl::MutexLock lock(&write_mu_);
  if (!stdin_.valid()) return absl::UnavailableError("the MCP server's stdin is closed");
  absl::string_view rest = line;
  while (!rest.empty()) {
    ssize_t n = write(stdin_.get(), rest.data(), rest.size());
    if (n > 0) {
      rest.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) {
      absl::Duration left = deadline - absl::Now();
      if (left <= absl::ZeroDuration()) {
        // A partial line would corrupt the stream: nothing more can be sent.
        stdin_.reset();
        return absl::DeadlineExceededError("the MCP server did not read its stdin in time");
      }
      pollfd p{stdin_.get(), POLLOUT, 0};
      int ms = static_cast<int>(std::min<int64_t>(absl::ToInt64Milliseconds(left) + 1, 1000));
      poll(&p, 1, ms);
      continue;
    }
    stdin_.reset();
    return absl::UnavailableError(
        absl::StrCat("writing to the MCP server failed: ", strerror(errno)));
  }
  return absl::OkStatus();
}

void StdioTransport::Close() {
  absl::MutexLock lock(&close_mu_);
  closing_.store(true);
  if (wake_.valid()) {
    uint64_t one = 1;
    ssize_t ignored = write(wake_.get(), &one, sizeof(one));
    (void)ignored;
  }
  if (reader_.joinable()) reader_.join();
  absl::MutexLock wlock(&write_mu_);
  stdin_.reset();
}

void StdioTransport::ReaderLoop(absl::Notification* spawned, absl::Status* spawn_status) {
  std::unique_ptr<command::ChildProcess> child;
  {
    auto program = ResolveProgram(options_);
    UniqueFd cwd;
    absl::Status status = program.status();
    if (status.ok() && !options_.cwd.empty()) {
      cwd.reset(open(options_.cwd.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
      if (!cwd.valid()) {
        status = absl::InvalidArgumentError(
            absl::StrCat("cwd '", options_.cwd, "': ", strerror(errno)));
      }
    }
    if (status.ok()) {
      command::SpawnSpec spec;
      spec.argv = options_.argv;
      spec.argv[0] = *program;
      spec.env = options_.env;
      spec.cwd_fd = cwd.get();
      spec.stdin_pipe = true;
      auto spawned_child = command::ChildProcess::Spawn(spec);
      if (spawned_child.ok()) {
        child = std::move(*spawned_child);
      } else {
        status = spawned_child.status();
      }
    }
    if (!status.ok()) {
      *spawn_status = absl::Status(status.code(), absl::StrCat("cannot start '", options_.argv[0],
                                                              "': ", status.message()));
      spawned->Notify();
      return;
    }
    pid_.store(child->pid());
    int fd = child->stdin_fd().release();
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    absl::MutexLock lock(&write_mu_);
    stdin_.reset(fd);
  }
  spawned->Notify();  // `spawned` and `spawn_status` are gone after this

  LineFramer out(options_.max_message_bytes);
  LineFramer err(8192);
  bool out_open = true, err_open = true, killed = false;
  char buf[65536];
  while (true) {
    if (closing_.load() && !killed) {
      child->KillTree();
      killed = true;
    }
    bool ended = !out_open && !err_open && child->Ended();
    if (ended) break;
    pollfd fds[4];
    int n = 0;
    int out_i = -1, err_i = -1;
    if (out_open) {
      out_i = n;
      fds[n++] = {child->stdout_fd().get(), POLLIN, 0};
    }
    if (err_open) {
      err_i = n;
      fds[n++] = {child->stderr_fd().get(), POLLIN, 0};
    }
    const int wake_i = n;
    fds[n++] = {wake_.get(), POLLIN, 0};
    // The pipes close when the whole tree has gone; then wait for its reaping.
    const bool wait_end = !out_open && !err_open;
    if (wait_end && child->pidfd() >= 0) fds[n++] = {child->pidfd(), POLLIN, 0};
    int timeout = wait_end && child->pidfd() < 0 ? 20 : -1;
    if (poll(fds, n, timeout) < 0 && errno != EINTR) break;
    if (fds[wake_i].revents & POLLIN) {
      uint64_t value;
      ssize_t ignored = read(wake_.get(), &value, sizeof(value));
      (void)ignored;
    }
    auto drain = [&](int index, bool& open, LineFramer& framer, bool is_out) {
      if (index < 0 || (fds[index].revents & (POLLIN | POLLHUP | POLLERR)) == 0) return;
      ssize_t r = read(fds[index].fd, buf, sizeof(buf));
      if (r > 0) {
        auto on_line = [&](absl::string_view line) {
          if (!is_out) return options_.log->Write("stderr", line);
          auto msg = ParseMessage(line);
          if (!msg.ok()) {
            Unreadable(line, line,
                       absl::StrCat("its message could not be read: ", msg.status().message()),
                       line);
            return;
          }
          if (!closing_.load()) callbacks_.on_message(*std::move(msg));
        };
        auto on_dropped = [&](const MessageEnds& ends) {
          if (!is_out) return;
          Unreadable(ends.head(), ends.tail(),
                     absl::StrCat("its message of ", ends.bytes(), " bytes is over the limit of ",
                                  options_.max_message_bytes, " bytes"),
                     "");
        };
        // Each line dropped went to on_dropped.
        (void)framer.Feed(absl::string_view(buf, static_cast<size_t>(r)), on_line, on_dropped);
      } else if (r == 0 || (errno != EINTR && errno != EAGAIN)) {
        open = false;
      }
    };
    drain(out_i, out_open, out, true);
    drain(err_i, err_open, err, false);
  }
  std::optional<command::ExitStatus> exit;
  while (!(exit = child->TryReap()).has_value()) {
    // The leader has ended; the supervisor reaps the rest of the tree.
    absl::SleepFor(absl::Milliseconds(5));
  }
  {
    absl::MutexLock lock(&write_mu_);
    stdin_.reset();
  }
  absl::Status why =
      closing_.load()
          ? absl::OkStatus()
          : absl::UnavailableError(
                exit->signaled ? absl::StrCat("the MCP server process was killed by ",
                                              command::SignalName(exit->code))
                               : absl::StrCat("the MCP server process exited with code ", exit->code));
  callbacks_.on_closed(why);
}

}  // namespace toolexec::mcp
