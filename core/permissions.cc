#include "core/permissions.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace toolexec {
namespace {

std::vector<absl::string_view> Components(absl::string_view path) {
  return absl::StrSplit(path, '/', absl::SkipEmpty());
}

absl::string_view FirstWord(absl::string_view command) {
  command = absl::StripAsciiWhitespace(command);
  size_t end = command.find_first_of(" \t\n");
  return end == absl::string_view::npos ? command : command.substr(0, end);
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

bool CommandCovers(absl::string_view pattern, absl::string_view command) {
  pattern = absl::StripAsciiWhitespace(pattern);
  command = absl::StripAsciiWhitespace(command);
  if (pattern == "*") return true;
  if (pattern.empty() || command.empty()) return false;
  if (absl::EndsWith(pattern, " *")) {
    absl::string_view base = absl::StripTrailingAsciiWhitespace(
        pattern.substr(0, pattern.size() - 2));
    if (command == base) return true;
    return absl::StartsWith(command, base) && command.size() > base.size() &&
           absl::ascii_isspace(static_cast<unsigned char>(command[base.size()]));
  }
  return command == pattern;
}

bool Covers(const PermissionRequirement& grant, const PermissionRequirement& need) {
  if (grant.kind != need.kind || grant.level < need.level) return false;
  switch (need.kind) {
    case PermissionRequirement::Kind::kPath:
      return PathCovers(grant.value, grant.recursive, need.value, need.recursive);
    case PermissionRequirement::Kind::kDomain:
      return DomainCovers(grant.value, need.value);
    case PermissionRequirement::Kind::kCommand:
      return CommandCovers(grant.value, need.value);
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
  for (const PermissionGrant& g : grants_) {
    if (toolexec::Covers(g.target, need)) return true;
  }
  return false;
}

std::vector<SuggestedGrant> SuggestGrants(const std::vector<PermissionRequirement>& needs) {
  std::vector<SuggestedGrant> out;
  std::map<std::tuple<int, std::string, bool>, size_t> by_key;
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
        absl::string_view first = FirstWord(n.value);
        target.value = first.empty() ? std::string(n.value) : absl::StrCat(first, " *");
        break;
      }
      case PermissionRequirement::Kind::kDomain:
        target.value = absl::AsciiStrToLower(n.value);
        break;
      case PermissionRequirement::Kind::kTool:
        target.value = n.value;
        break;
    }
    auto key = std::make_tuple(static_cast<int>(n.kind), target.value, target.recursive);
    auto [it, inserted] = by_key.emplace(key, out.size());
    if (inserted) {
      target.level = n.level;
      out.push_back({std::move(target), {}});
    }
    SuggestedGrant& s = out[it->second];
    s.target.level = std::max(s.target.level, n.level);
    s.members.push_back(i);
  }
  return out;
}

}  // namespace toolexec
