// The environment a command sees: the daemon's, minus anything that looks
// like a secret, plus what the call asks for. And the daemon's own copy of
// its secrets, wiped once the command tools have their scrubbed snapshot.
#ifndef TOOLEXEC_TOOLS_PROCESS_ENVIRONMENT_H_
#define TOOLEXEC_TOOLS_PROCESS_ENVIRONMENT_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace toolexec::command {

// Whether a variable's name marks it as a secret. The name is split into
// words at '_', '-', '.' and where camelCase starts a word ("githubToken" is
// github + Token, "DBPass" is DB + Pass), and it is a secret when
// * a word, in any case, is one of KEY(S), SECRET(S), TOKEN(S), PASSWORD(S),
//   PASSWD, PASS, PASSPHRASE, CREDENTIAL(S), CREDS, PAT, AUTH, AUTHORIZATION,
//   BEARER, PRIVATE, COOKIE(S), DSN, JWT (AWS_SECRET_ACCESS_KEY, DB_PASS,
//   GITHUB_PAT, GOOGLE_APPLICATION_CREDENTIALS, SENTRY_DSN, SSH_AUTH_SOCK), or
// * a word is PWD and the name has other words too (MYSQL_PWD; the shell's
//   PWD and OLDPWD are not secrets), or
// * CONNECTION and STRING are consecutive words, or
// * a word ends in TOKEN, SECRET, PASSWORD, PASSWD, APIKEY, ACCESSKEY,
//   SECRETKEY or PRIVATEKEY (names glued into one word: PGPASSWORD,
//   CLIENTSECRET, OPENAIAPIKEY).
// Whole words only, so PATH, MONKEY, KEYBOARD, GIT_AUTHOR_NAME and
// TOKENIZERS_PARALLELISM are not secrets. Deliberately not secret words:
// SESSION (XDG_SESSION_ID and DBUS_SESSION_BUS_ADDRESS are not secrets;
// session keys, tokens and cookies are caught by their other word) and CERT
// (certificates are public, and SSL_CERT_FILE is what lets a command use TLS).
bool LooksSecret(absl::string_view name);

// Whether `value` holds a URL with a password in it ("scheme://user:pw@host",
// "redis://:pw@host"): DATABASE_URL, REDIS_URL or HTTPS_PROXY carrying
// credentials are secrets whatever their names, the same names without a
// password ("postgres:///app") are not.
bool ValueHasUrlPassword(absl::string_view value);

// Whether an `environ` entry ("NAME=value") is a secret: its name looks
// secret, or its value holds a URL with a password.
bool IsSecretEntry(absl::string_view entry);

// Whether setting (or unsetting) the variable `name` can make a command run
// code or load something that its command line does not show, whatever the
// program: the one place that lists them. A policy's command patterns judge a
// call that sets one as a line they cannot see through (core/permissions.h).
// * bash (every run_command line is `bash -c`): BASH_ENV and ENV (a file
//   sourced at start-up, its name expanded: `$(…)` runs), SHELLOPTS and
//   BASHOPTS (options at start-up: xtrace with PS4, …), PS0 to PS4 and
//   PROMPT_COMMAND (expanded or run as code), BASH_FUNC_* (exported
//   functions, which can replace any command), IFS (word splitting),
//   PATH and EXECIGNORE (which program a name runs), BASH_LOADABLES_PATH
//   (where `enable -f` loads builtins from), SHELL (the shell programs hand
//   commands to);
// * the dynamic loader and glibc, for every dynamically linked program:
//   every LD_* name (LD_PRELOAD, LD_LIBRARY_PATH, LD_AUDIT, …) and the rest
//   of the names glibc itself strips from set-user-ID programs, but TMPDIR:
//   GCONV_PATH, GETCONF_DIR, GLIBC_TUNABLES, HOSTALIASES, LOCALDOMAIN,
//   LOCPATH, MALLOC_TRACE, NIS_PATH, NLSPATH, RESOLV_HOST_CONF, RES_OPTIONS,
//   TZDIR;
// * interpreters and tools agents run every day, whose variable names code
//   to run or load: NODE_OPTIONS, PYTHONPATH, PYTHONHOME, PYTHONSTARTUP,
//   PYTHONUSERBASE, PERL5OPT, PERL5LIB, PERLLIB, PERL5DB, RUBYOPT, RUBYLIB,
//   JAVA_TOOL_OPTIONS, _JAVA_OPTIONS, JDK_JAVA_OPTIONS, LUA_INIT*, GIT_SSH,
//   GIT_SSH_COMMAND, GIT_EXEC_PATH, GIT_EXTERNAL_DIFF, GIT_PAGER, GIT_EDITOR,
//   GIT_SEQUENCE_EDITOR, GIT_ASKPASS, GIT_PROXY_COMMAND, GIT_TEMPLATE_DIR,
//   GIT_CONFIG*, SSH_ASKPASS, SUDO_ASKPASS, PAGER, MANPAGER, EDITOR, VISUAL,
//   LESSOPEN, LESSCLOSE, BROWSER.
// Not on it: variables a program reads to find its own configuration (HOME,
// XDG_CONFIG_HOME, GIT_DIR, …); what that configuration runs is the
// program's, as is what its arguments make it run.
bool IsCodeVariable(absl::string_view name);

// `environ`-style entries ("NAME=value") minus the secret ones whose names
// are not in `allow` (exact, case-sensitive names). Entries without '=' are
// dropped.
std::vector<std::string> ScrubEnvironment(const char* const* env,
                                          const std::vector<std::string>& allow);

// Removes every secret entry (IsSecretEntry) from `env`, a null-terminated
// `environ` array, keeping the order of the rest, and overwrites each removed
// entry's bytes with zeros where they lie. On the process's own `environ`
// this also clears them from /proc/<pid>/environ, which shows the memory of
// the environment block the process started with (unsetenv() only drops the
// pointer). Returns how many entries were wiped. Nothing may change the
// environment meanwhile (setenv, putenv); a concurrent getenv() sees each
// entry, an emptied one, or misses a secret one, never a dangling pointer.
// A pointer getenv() returned for a secret before points to zeros after.
int WipeSecretEntries(char** env);

// Makes the daemon's secrets unreachable from the commands it runs: marks the
// process non-dumpable (PR_SET_DUMPABLE 0: a process of the same uid without
// CAP_SYS_PTRACE can no longer ptrace it or read its /proc/<pid>/environ,
// mem, maps or fd; nor does it leave core dumps), then wipes the secret
// entries of its own environment (WipeSecretEntries on `environ`). Call once
// at start-up, after the command tools took their snapshot (CommandConfig)
// and before any command can run.
absl::Status SealDaemonSecrets();

// `base` with each (name, value) of `overrides` set (replacing an entry of
// the same name, else appended), in order.
std::vector<std::string> MergeEnvironment(
    const std::vector<std::string>& base,
    const std::vector<std::pair<std::string, std::string>>& overrides);

// The value of `name` in `env`, or "" if absent.
std::string LookupEnvironment(const std::vector<std::string>& env, absl::string_view name);

}  // namespace toolexec::command

#endif  // TOOLEXEC_TOOLS_PROCESS_ENVIRONMENT_H_
