// The real toolexecd binary as a child process, for tests that need what
// only a process has: signals (SIGHUP, SIGTERM), its own uid or rlimits,
// its stderr log.
#ifndef TOOLEXEC_TESTS_COMMON_DAEMON_PROCESS_H_
#define TOOLEXEC_TESTS_COMMON_DAEMON_PROCESS_H_

#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace toolexec::test_support {

class DaemonProcess final {
 public:
  struct Options {
    std::string binary;                   // toolexecd
    std::string state_dir;                // address file and log go here
    std::vector<std::string> args;        // flags after --address_file
    int as_uid = -1;                      // >= 0: run as this uid (the test is root)
    rlim_t nproc = 0;                     // > 0: RLIMIT_NPROC before it starts
    // Set: its whole environment ("NAME=value" each); unset: the test's.
    std::optional<std::vector<std::string>> env;
    // SIGKILLed if the test dies first (PR_SET_PDEATHSIG; tied to the thread
    // that starts it), so a test killed half-way leaves no daemon behind.
    bool die_with_test = false;
  };

  explicit DaemonProcess(Options options) {
    address_file_ = options.state_dir + "/address";
    log_file_ = options.state_dir + "/toolexecd.log";
    unlink(address_file_.c_str());
    std::vector<std::string> args = {options.binary, "--address_file=" + address_file_};
    args.insert(args.end(), options.args.begin(), options.args.end());
    std::vector<char*> envp;
    if (options.env.has_value()) {
      for (auto& e : *options.env) envp.push_back(e.data());
      envp.push_back(nullptr);
    }
    const pid_t test_pid = getpid();
    pid_ = fork();
    if (pid_ == 0) {
      if (options.die_with_test &&
          (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != test_pid)) {
        _exit(123);
      }
      int log = open(log_file_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      if (log >= 0) dup2(log, STDERR_FILENO);
      if (options.as_uid >= 0 && (setgroups(0, nullptr) != 0 || setgid(options.as_uid) != 0 ||
                                  setuid(options.as_uid) != 0)) {
        _exit(120);
      }
      if (options.nproc > 0) {
        struct rlimit limit = {options.nproc, options.nproc};
        if (setrlimit(RLIMIT_NPROC, &limit) != 0) _exit(121);
      }
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execve(argv[0], argv.data(), options.env.has_value() ? envp.data() : environ);
      _exit(122);
    }
  }
  ~DaemonProcess() {
    if (pid_ > 0 && !reaped_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  DaemonProcess(const DaemonProcess&) = delete;
  DaemonProcess& operator=(const DaemonProcess&) = delete;

  pid_t pid() const { return pid_; }

  // The bound address once serving; empty if it exited or after 20 s.
  std::string WaitForAddress() {
    for (absl::Time end = absl::Now() + absl::Seconds(20); absl::Now() < end;) {
      std::ifstream in(address_file_);
      std::string address;
      if (std::getline(in, address) && !address.empty()) return address;
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        reaped_ = true;
        exit_status_ = status;
        return "";
      }
      absl::SleepFor(absl::Milliseconds(20));
    }
    return "";
  }

  // Sends `sig` and waits up to `timeout` for the exit: the wait status, or
  // -1 if it did not exit.
  int SignalAndWait(int sig, absl::Duration timeout) {
    if (reaped_) return exit_status_;
    kill(pid_, sig);
    for (absl::Time end = absl::Now() + timeout; absl::Now() < end;) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        reaped_ = true;
        exit_status_ = status;
        return status;
      }
      absl::SleepFor(absl::Milliseconds(20));
    }
    return -1;
  }

  // Its stderr so far.
  std::string Log() const {
    std::ifstream in(log_file_);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

  // Waits up to 10 s for `text` to appear in the log.
  bool WaitForLog(const std::string& text) {
    for (absl::Time end = absl::Now() + absl::Seconds(10); absl::Now() < end;) {
      if (Log().find(text) != std::string::npos) return true;
      absl::SleepFor(absl::Milliseconds(20));
    }
    return false;
  }

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
  int exit_status_ = -1;
  std::string address_file_;
  std::string log_file_;
};

}  // namespace toolexec::test_support

#endif  // TOOLEXEC_TESTS_COMMON_DAEMON_PROCESS_H_
