#include "tools/process/environment.h"

#include <errno.h>
#include <string.h>
#include <sys/prctl.h>

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

extern char** environ;

namespace toolexec::command {
namespace {

absl::string_view NameOf(absl::string_view entry) {
  size_t eq = entry.find('=');
  return eq == absl::string_view::npos ? entry : entry.substr(0, eq);
}

// The words of a variable name, upper-cased: split at '_', '-', '.', before
// an upper-case letter that follows a lower-case one ("githubToken"), and
// before the last of a run of upper-case letters that a lower-case one
// follows ("DBPass", "APIKey").
std::vector<std::string> NameWords(absl::string_view name) {
  std::vector<std::string> words;
  std::string word;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    if (c == '_' || c == '-' || c == '.') {
      if (!word.empty()) words.push_back(std::move(word));
      word.clear();
      continue;
    }
    if (!word.empty() && absl::ascii_isupper(c)) {
      const char prev = name[i - 1];
      const bool next_lower = i + 1 < name.size() && absl::ascii_islower(name[i + 1]);
      if (absl::ascii_islower(prev) || (absl::ascii_isupper(prev) && next_lower)) {
        words.push_back(std::move(word));
        word.clear();
      }
    }
    word.push_back(absl::ascii_toupper(c));
  }
  if (!word.empty()) words.push_back(std::move(word));
  return words;
}

bool IsSecretWord(absl::string_view word) {
  static constexpr absl::string_view kWords[] = {
      "KEY",      "KEYS",      "SECRET",        "SECRETS",    "TOKEN",      "TOKENS",      "PASS",
      "PASSWORD", "PASSWORDS", "PASSWD",        "PASSPHRASE", "CREDENTIAL", "CREDENTIALS", "CREDS",
      "PAT",      "AUTH",      "AUTHORIZATION", "BEARER",     "JWT",        "PRIVATE",     "COOKIE",
      "COOKIES",  "DSN"};
  static constexpr absl::string_view kEndings[] = {
      "TOKEN", "SECRET", "PASSWORD", "PASSWD", "APIKEY", "ACCESSKEY", "SECRETKEY", "PRIVATEKEY"};
  if (std::find(std::begin(kWords), std::end(kWords), word) != std::end(kWords)) return true;
  for (absl::string_view ending : kEndings) {
    if (absl::EndsWith(word, ending)) return true;
  }
  return false;
}

}  // namespace

bool LooksSecret(absl::string_view name) {
  std::vector<std::string> words = NameWords(name);
  for (size_t i = 0; i < words.size(); ++i) {
    if (IsSecretWord(words[i])) return true;
    if (words[i] == "PWD" && words.size() > 1) return true;
    if (words[i] == "CONNECTION" && i + 1 < words.size() && words[i + 1] == "STRING") return true;
  }
  return false;
}

bool IsCodeVariable(absl::string_view name) {
  static constexpr absl::string_view kNames[] = {
      // bash
      "BASH_ENV", "ENV", "SHELLOPTS", "BASHOPTS", "PS0", "PS1", "PS2", "PS3", "PS4",
      "PROMPT_COMMAND", "IFS", "PATH", "EXECIGNORE", "BASH_LOADABLES_PATH", "SHELL",
      // glibc (LD_* below)
      "GCONV_PATH", "GETCONF_DIR", "GLIBC_TUNABLES", "HOSTALIASES", "LOCALDOMAIN", "LOCPATH",
      "MALLOC_TRACE", "NIS_PATH", "NLSPATH", "RESOLV_HOST_CONF", "RES_OPTIONS", "TZDIR",
      // interpreters and tools
      "NODE_OPTIONS", "PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONUSERBASE", "PERL5OPT",
      "PERL5LIB", "PERLLIB", "PERL5DB", "RUBYOPT", "RUBYLIB", "JAVA_TOOL_OPTIONS",
      "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS", "GIT_SSH", "GIT_SSH_COMMAND", "GIT_EXEC_PATH",
      "GIT_EXTERNAL_DIFF", "GIT_PAGER", "GIT_EDITOR", "GIT_SEQUENCE_EDITOR", "GIT_ASKPASS",
      "GIT_PROXY_COMMAND", "GIT_TEMPLATE_DIR", "SSH_ASKPASS", "SUDO_ASKPASS", "PAGER", "MANPAGER",
      "EDITOR", "VISUAL", "LESSOPEN", "LESSCLOSE", "BROWSER"};
  static constexpr absl::string_view kPrefixes[] = {"LD_", "BASH_FUNC_", "GIT_CONFIG",
                                                    "LUA_INIT"};
  if (std::find(std::begin(kNames), std::end(kNames), name) != std::end(kNames)) return true;
  for (absl::string_view prefix : kPrefixes) {
    if (absl::StartsWith(name, prefix)) return true;
  }
  return false;
}

bool ValueHasUrlPassword(absl::string_view value) {
  for (size_t at = value.find("://"); at != absl::string_view::npos;
       at = value.find("://", at + 3)) {
    absl::string_view authority = value.substr(at + 3);
    authority = authority.substr(0, authority.find_first_of("/?#"));
    size_t userinfo_end = authority.rfind('@');
    if (userinfo_end == absl::string_view::npos) continue;
    if (authority.substr(0, userinfo_end).find(':') != absl::string_view::npos) return true;
  }
  return false;
}

bool IsSecretEntry(absl::string_view entry) {
  size_t eq = entry.find('=');
  if (LooksSecret(NameOf(entry))) return true;
  return eq != absl::string_view::npos && ValueHasUrlPassword(entry.substr(eq + 1));
}

std::vector<std::string> ScrubEnvironment(const char* const* env,
                                          const std::vector<std::string>& allow) {
  std::vector<std::string> out;
  if (env == nullptr) return out;
  for (; *env != nullptr; ++env) {
    absl::string_view entry(*env);
    if (entry.find('=') == absl::string_view::npos) continue;
    absl::string_view name = NameOf(entry);
    if (name.empty()) continue;
    if (IsSecretEntry(entry) && std::find(allow.begin(), allow.end(), name) == allow.end()) {
      continue;
    }
    out.emplace_back(entry);
  }
  return out;
}

int WipeSecretEntries(char** env) {
  if (env == nullptr) return 0;
  int wiped = 0;
  char** kept = env;
  for (char** e = env; *e != nullptr; ++e) {
    if (IsSecretEntry(*e)) {
      // Through a volatile pointer, so the stores are not dropped as dead.
      volatile char* p = *e;
      while (*p != '\0') *p++ = '\0';
      ++wiped;
    } else {
      *kept++ = *e;
    }
  }
  *kept = nullptr;
  return wiped;
}

absl::Status SealDaemonSecrets() {
  if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) {
    return absl::InternalError(absl::StrCat("prctl(PR_SET_DUMPABLE, 0): ", strerror(errno)));
  }
  WipeSecretEntries(environ);
  return absl::OkStatus();
}

std::vector<std::string> MergeEnvironment(
    const std::vector<std::string>& base,
    const std::vector<std::pair<std::string, std::string>>& overrides) {
  std::vector<std::string> out = base;
  absl::flat_hash_map<std::string, size_t> index;
  for (size_t i = 0; i < out.size(); ++i) index[std::string(NameOf(out[i]))] = i;
  for (const auto& [name, value] : overrides) {
    std::string entry = name + "=" + value;
    auto it = index.find(name);
    if (it != index.end()) {
      out[it->second] = std::move(entry);
    } else {
      index[name] = out.size();
      out.push_back(std::move(entry));
    }
  }
  return out;
}

std::string LookupEnvironment(const std::vector<std::string>& env, absl::string_view name) {
  for (const std::string& e : env) {
    if (NameOf(e) == name) return e.substr(name.size() + 1);
  }
  return "";
}

}  // namespace toolexec::command
