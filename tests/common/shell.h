// Running a shell command from a test: its standard output and exit status.
#ifndef TOOLEXEC_TESTS_COMMON_SHELL_H_
#define TOOLEXEC_TESTS_COMMON_SHELL_H_

#include <stdio.h>
#include <sys/wait.h>

#include <string>

namespace toolexec::testing {

// Runs `command` with /bin/sh; its standard output. `*status`, when given,
// gets the exit status (-1 if it did not exit normally).
inline std::string Shell(const std::string& command, int* status = nullptr) {
  std::string out;
  FILE* p = popen(command.c_str(), "r");
  if (p == nullptr) {
    if (status != nullptr) *status = -1;
    return out;
  }
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int raw = pclose(p);
  if (status != nullptr) *status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  return out;
}

// `s` quoted for the shell.
inline std::string ShellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out.push_back(c);
    }
  }
  return out + "'";
}

}  // namespace toolexec::testing

#endif  // TOOLEXEC_TESTS_COMMON_SHELL_H_
