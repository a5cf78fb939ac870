#include "core/permissions.h"

#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <tuple>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "tools/process/environment.h"

namespace toolexec {
namespace {

std::vector<absl::string_view> Components(absl::string_view path) {
  return absl::StrSplit(path, '/', absl::SkipEmpty());
}

absl::string_view BaseName(absl::string_view word) {
  size_t slash = word.rfind('/');
  return slash == absl::string_view::npos ? word : word.substr(slash + 1);
}

// The patterns of the command grants at `level` or above.
std::vector<CommandPattern> CommandPatternsOf(const std::vector<PermissionGrant>& grants,
                                              PermissionLevel level) {
  std::vector<CommandPattern> out;
  for (const PermissionGrant& g : grants) {
    if (g.target.kind != PermissionRequirement::Kind::kCommand || g.target.level < level) {
      continue;
    }
    auto p = CommandPattern::Parse(g.target.value);
    if (p.ok()) out.push_back(*std::move(p));
  }
  return out;
}

bool CoveredBy(const std::vector<CommandPattern>& patterns, const CommandNeed& need) {
  std::vector<const CommandPattern*> ptrs;
  for (const CommandPattern& p : patterns) ptrs.push_back(&p);
  return CommandCovers(ptrs, need);
}

std::string ParentOf(absl::string_view path) {
  std::string normal = NormalizePath(path);
  size_t slash = normal.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return normal.substr(0, slash);
}

}  // namespace

absl::string_view PermissionLevelName(PermissionLevel level) {
  switch (level) {
    case PermissionLevel::kNone:
      return "none";
    case PermissionLevel::kRead:
      return "read";
    case PermissionLevel::kWrite:
      return "write";
    case PermissionLevel::kExecute:
      return "execute";
    case PermissionLevel::kAdmin:
      return "admin";
  }
  return "unknown";
}

absl::string_view PermissionKindName(PermissionRequirement::Kind kind) {
  switch (kind) {
    case PermissionRequirement::Kind::kPath:
      return "path";
    case PermissionRequirement::Kind::kDomain:
      return "domain";
    case PermissionRequirement::Kind::kCommand:
      return "command";
    case PermissionRequirement::Kind::kTool:
      return "tool";
  }
  return "unknown";
}

bool PathCovers(absl::string_view grant, bool grant_recursive, absl::string_view path,
                bool path_recursive) {
  if (grant.empty() || path.empty()) return false;
  // An absolute path and a relative one are never compared.
  if ((grant.front() == '/') != (path.front() == '/')) return false;
  std::string g_norm = NormalizePath(grant);
  std::string p_norm = NormalizePath(path);
  // Views of g_norm and p_norm themselves (a `? "" : g_norm` would make a
  // temporary copy, and the views would outlive it).
  std::vector<absl::string_view> g =
      Components(g_norm == "." ? absl::string_view() : absl::string_view(g_norm));
  std::vector<absl::string_view> p =
      Components(p_norm == "." ? absl::string_view() : absl::string_view(p_norm));
  if (p.size() < g.size() || !std::equal(g.begin(), g.end(), p.begin())) return false;
  if (std::find(p.begin(), p.end(), "..") != p.end()) return false;  // above the grant
  if (grant_recursive) return true;
  if (path_recursive) return false;
  return p.size() - g.size() <= 1;
}

std::string ResolvePath(absl::string_view path) {
  if (path.empty() || path.front() != '/') return NormalizePath(path);
  constexpr int kMaxLinks = 40;
  // Components still to walk, the next one last.
  std::vector<std::string> todo;
  auto push_all = [&todo](absl::string_view p) {
    std::vector<absl::string_view> parts = Components(p);
    for (auto it = parts.rbegin(); it != parts.rend(); ++it) todo.emplace_back(*it);
  };
  push_all(path);
  std::string done;  // resolved so far; "" is "/"
  bool exists = true;
  int links = 0;
  struct stat st;
  while (!todo.empty()) {
    std::string c = std::move(todo.back());
    todo.pop_back();
    if (c == ".") continue;
    if (c == "..") {
      done.resize(done.rfind('/') == std::string::npos ? 0 : done.rfind('/'));
      // Back in a directory that exists, the kernel resolves again.
      exists = done.empty() || lstat(done.c_str(), &st) == 0;
      continue;
    }
    std::string next = absl::StrCat(done, "/", c);
    if (exists) {
      if (lstat(next.c_str(), &st) != 0) {
        exists = false;
      } else if (S_ISLNK(st.st_mode) && links < kMaxLinks) {
        std::string target(PATH_MAX, '\0');
        ssize_t n = readlink(next.c_str(), target.data(), target.size());
        if (n > 0 && static_cast<size_t>(n) < target.size()) {
          target.resize(static_cast<size_t>(n));
          ++links;
          if (target.front() == '/') done.clear();
          push_all(target);
          continue;
        }
      }
    }
    done = std::move(next);
  }
  return done.empty() ? "/" : done;
}

bool DomainCovers(absl::string_view pattern, absl::string_view domain) {
  std::string p = absl::AsciiStrToLower(absl::StripAsciiWhitespace(pattern));
  std::string d = absl::AsciiStrToLower(absl::StripAsciiWhitespace(domain));
  if (p.empty() || d.empty()) return false;
  if (p == "*") return true;
  if (absl::StartsWith(p, "*.")) {
    absl::string_view base = absl::string_view(p).substr(2);
    return d == base || absl::EndsWith(d, absl::StrCat(".", base));
  }
  return d == p;
}

absl::StatusOr<CommandPattern> CommandPattern::Parse(absl::string_view pattern) {
  pattern = absl::StripAsciiWhitespace(pattern);
  CommandPattern p;
  if (pattern == "*") {
    p.everything_ = true;
    return p;
  }
  bool star = false;
  p.words_ = command::StaticWords(pattern, &star);
  if (p.words_.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "command pattern \"", pattern,
        "\" is not the words of one command (no operator, redirection, variable, quote left "
        "open or expansion; the only wildcard is a final ' *', as in \"git *\")"));
  }
  if (star) {
    p.words_.pop_back();
    p.rest_ = true;
  }
  return p;
}

bool CommandPattern::Covers(const command::SimpleCommand& c) const {
  if (everything_) return true;
  if (c.words.size() < words_.size()) return false;
  for (size_t i = 0; i < words_.size(); ++i) {
    if (c.words[i].dynamic || c.words[i].text != words_[i]) return false;
  }
  return rest_ || (c.words.size() == words_.size() && !c.more_args);
}

bool CommandPattern::MayMatch(const command::SimpleCommand& c) const {
  if (everything_) return true;
  for (size_t i = 0; i < words_.size(); ++i) {
    if (i >= c.words.size()) return c.more_args;
    const command::ShellWord& w = c.words[i];
    if (w.dynamic) return true;  // it may be any words, or none
    if (w.text == words_[i]) continue;
    if (i == 0 && words_[0].find('/') == std::string::npos && BaseName(w.text) == words_[0]) {
      continue;
    }
    return false;
  }
  if (rest_ || c.more_args) return true;
  for (size_t i = words_.size(); i < c.words.size(); ++i) {
    if (!c.words[i].dynamic) return false;  // a dynamic word may expand to nothing
  }
  return true;
}

CommandNeed AnalyzeCommandNeed(const PermissionRequirement& need) {
  CommandNeed out;
  out.line = command::AnalyzeCommandLine(need.value);
  auto add = [&](absl::string_view name) {
    if (!command::IsCodeVariable(name)) return;
    if (std::find(out.code_variables.begin(), out.code_variables.end(), name) ==
        out.code_variables.end()) {
      out.code_variables.emplace_back(name);
    }
  };
  for (const std::string& entry : need.env) add(absl::string_view(entry).substr(0, entry.find('=')));
  for (const std::string& name : out.line.assigned) add(name);
  return out;
}

bool CommandCovers(const std::vector<const CommandPattern*>& patterns, const CommandNeed& need,
                   const std::vector<std::string>& allowed_code_variables) {
  for (const CommandPattern* p : patterns) {
    if (p->matches_everything()) return true;
  }
  if (!need.line.transparent() || need.line.commands.empty()) return false;
  for (const std::string& name : need.code_variables) {
    if (std::find(allowed_code_variables.begin(), allowed_code_variables.end(), name) ==
        allowed_code_variables.end()) {
      return false;
    }
  }
  for (const command::SimpleCommand& c : need.line.commands) {
    if (std::none_of(patterns.begin(), patterns.end(),
                     [&](const CommandPattern* p) { return p->Covers(c); })) {
      return false;
    }
  }
  return true;
}

bool CommandMayMatch(const CommandPattern& pattern, const CommandNeed& need) {
  if (pattern.matches_everything() || !need.line.transparent() ||
      !need.code_variables.empty()) {
    return true;
  }
  return std::any_of(need.line.commands.begin(), need.line.commands.end(),
                     [&](const command::SimpleCommand& c) { return pattern.MayMatch(c); });
}

bool CommandCovers(absl::string_view pattern, absl::string_view command) {
  auto p = CommandPattern::Parse(pattern);
  if (!p.ok()) return false;
  PermissionRequirement need;
  need.kind = PermissionRequirement::Kind::kCommand;
  need.value = std::string(command);
  return CommandCovers({&*p}, AnalyzeCommandNeed(need));
}

std::string CommandNeedCaveat(const CommandNeed& need) {
  if (!need.line.transparent()) {
    return absl::StrCat("toolexec cannot tell what this line runs (", need.line.opaque,
                        "), so no command pattern covers it");
  }
  if (!need.code_variables.empty()) {
    return absl::StrCat("it sets ", absl::StrJoin(need.code_variables, ", "),
                        ", which can make it run code the line does not show, so only a rule "
                        "that names them covers it");
  }
  if (need.line.commands.empty()) return "it runs no command, so no command pattern covers it";
  return "";
}

std::string DescribeNeed(const PermissionRequirement& need) {
  if (need.kind != PermissionRequirement::Kind::kCommand) return need.value;
  std::string out = need.value;
  if (!need.env.empty()) {
    std::vector<std::string> shown;
    for (const std::string& e : need.env) {
      size_t eq = e.find('=');
      shown.push_back(eq == std::string::npos
                          ? command::ShellQuote(e)
                          : absl::StrCat(e.substr(0, eq), "=",
                                         command::ShellQuote(absl::string_view(e).substr(eq + 1))));
    }
    absl::StrAppend(&out, " (with environment ", absl::StrJoin(shown, " "), ")");
  }
  std::string caveat = CommandNeedCaveat(AnalyzeCommandNeed(need));
  if (!caveat.empty()) absl::StrAppend(&out, " [", caveat, "]");
  return out;
}

bool Covers(const PermissionRequirement& grant, const PermissionRequirement& need) {
  if (grant.kind != need.kind || grant.level < need.level) return false;
  switch (need.kind) {
    case PermissionRequirement::Kind::kPath:
      return PathCovers(grant.value, grant.recursive, need.value, need.recursive);
    case PermissionRequirement::Kind::kDomain:
      return DomainCovers(grant.value, need.value);
    case PermissionRequirement::Kind::kCommand: {
      auto p = CommandPattern::Parse(grant.value);
      return p.ok() && CommandCovers({&*p}, AnalyzeCommandNeed(need));
    }
    case PermissionRequirement::Kind::kTool:
      return grant.value == "*" || grant.value == need.value;
  }
  return false;
}

void GrantSet::Add(PermissionGrant grant) {
  absl::MutexLock lock(&mu_);
  grants_.push_back(std::move(grant));
}

bool GrantSet::Covers(const PermissionRequirement& need, absl::Time now) {
  absl::MutexLock lock(&mu_);
  grants_.erase(std::remove_if(grants_.begin(), grants_.end(),
                               [now](const PermissionGrant& g) { return g.expires <= now; }),
                grants_.end());
  // A command line may need several grants, one per command it runs.
  if (need.kind == PermissionRequirement::Kind::kCommand) {
    return CoveredBy(CommandPatternsOf(grants_, need.level), AnalyzeCommandNeed(need));
  }
  for (const PermissionGrant& g : grants_) {
    if (toolexec::Covers(g.target, need)) return true;
  }
  return false;
}

std::vector<SuggestedGrant> SuggestGrants(const std::vector<PermissionRequirement>& needs) {
  std::vector<SuggestedGrant> out;
  std::map<std::tuple<int, std::string, bool>, size_t> by_key;
  auto suggest = [&](size_t i, PermissionRequirement target) {
    const PermissionRequirement& n = needs[i];
    auto key = std::make_tuple(static_cast<int>(n.kind), target.value, target.recursive);
    auto [it, inserted] = by_key.emplace(key, out.size());
    if (inserted) {
      target.level = n.level;
      out.push_back({std::move(target), {}});
    }
    SuggestedGrant& s = out[it->second];
    s.target.level = std::max(s.target.level, n.level);
    if (s.members.empty() || s.members.back() != i) s.members.push_back(i);
  };
  for (size_t i = 0; i < needs.size(); ++i) {
    const PermissionRequirement& n = needs[i];
    PermissionRequirement target;
    target.kind = n.kind;
    switch (n.kind) {
      case PermissionRequirement::Kind::kPath:
        target.recursive = n.recursive;
        target.value = n.recursive ? NormalizePath(n.value) : ParentOf(n.value);
        break;
      case PermissionRequirement::Kind::kCommand: {
        command::CommandLineAnalysis line = command::AnalyzeCommandLine(n.value);
        if (!line.transparent() || line.commands.empty()) {
          target.value = std::string(absl::StripAsciiWhitespace(n.value));
          break;
        }
        for (const command::SimpleCommand& c : line.commands) {
          PermissionRequirement each = target;
          each.value = absl::StrCat(command::ShellQuote(c.words[0].text), " *");
          suggest(i, std::move(each));
        }
        continue;
      }
      case PermissionRequirement::Kind::kDomain:
        target.value = absl::AsciiStrToLower(n.value);
        break;
      case PermissionRequirement::Kind::kTool:
        target.value = n.value;
        break;
    }
    suggest(i, std::move(target));
  }
  return out;
}

}  // namespace toolexec
