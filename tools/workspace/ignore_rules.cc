// Ignore rules: IgnoreRules (the patterns of a directory and of its
// ancestors, each kind found where it can apply), reading a directory's
// ignore files (LoadIgnoreRules), and the rules git applies from above the
// workspace (RepositoryRules: .git/info/exclude, core.excludesFile). See
// walker.h.
#include "tools/workspace/walker.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <initializer_list>
#include <optional>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace toolexec::fs {
namespace {

constexpr size_t kMaxIgnoreFileBytes = 1 << 20;

// Reads a small regular file at `name` under `dir_fd` (without following a
// symlink unless `follow`); empty if absent, not regular or unreadable.
std::string ReadSmallFile(int dir_fd, const char* name, bool follow = false) {
  UniqueFd fd(openat(dir_fd, name,
                     O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY | (follow ? 0 : O_NOFOLLOW)));
  if (!fd.valid()) return "";
  struct stat st;
  if (fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return "";
  std::string text(std::min<size_t>(static_cast<size_t>(st.st_size), kMaxIgnoreFileBytes), '\0');
  size_t got = 0;
  while (got < text.size()) {
    const ssize_t n = read(fd.get(), text.data() + got, text.size() - got);
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  text.resize(got);
  return text;
}

std::unique_ptr<GlobSet> ParseIgnoreFile(absl::string_view text) {
  absl::ConsumePrefix(&text, "\xEF\xBB\xBF");  // git skips a UTF-8 byte order mark
  std::vector<GlobPattern> patterns;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (std::optional<GlobPattern> p = ParseGitignoreLine(line)) patterns.push_back(std::move(*p));
  }
  if (patterns.empty()) return nullptr;
  absl::StatusOr<std::unique_ptr<GlobSet>> set = GlobSet::Create(std::move(patterns), true);
  if (!set.ok() || (*set)->empty()) return nullptr;
  return *std::move(set);
}

// The directory git keeps a repository's shared files in (info/exclude,
// config) for the ".git" entry of `dir_fd`: ".git" itself, or what a ".git"
// file ("gitdir: <path>", a linked worktree or submodule) points to, and its
// "commondir" when it has one. Invalid if there is none.
UniqueFd OpenGitCommonDir(int dir_fd) {
  UniqueFd git(openat(dir_fd, ".git", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (git.valid()) return git;
  std::string pointer = ReadSmallFile(dir_fd, ".git");
  absl::string_view target = absl::StripAsciiWhitespace(pointer);
  if (!absl::ConsumePrefix(&target, "gitdir:")) return UniqueFd();
  target = absl::StripAsciiWhitespace(target);
  if (target.empty()) return UniqueFd();
  git.reset(openat(dir_fd, std::string(target).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!git.valid()) return git;
  const std::string common = ReadSmallFile(git.get(), "commondir");
  const absl::string_view common_path = absl::StripAsciiWhitespace(common);
  if (common_path.empty()) return git;
  UniqueFd shared(
      openat(git.get(), std::string(common_path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  return shared.valid() ? std::move(shared) : std::move(git);
}

// The repository's info/exclude for the ".git" entry of `dir_fd`.
std::string ReadGitExclude(int dir_fd) {
  UniqueFd git = OpenGitCommonDir(dir_fd);
  if (!git.valid()) return "";
  UniqueFd info(openat(git.get(), "info", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!info.valid()) return "";
  return ReadSmallFile(info.get(), "exclude");
}

std::string Env(const char* name) {
  const char* v = getenv(name);
  return v == nullptr ? "" : v;
}

// git's reading of a boolean environment variable that is set.
bool EnvTrue(const char* name) {
  const std::string v = absl::AsciiStrToLower(Env(name));
  return !v.empty() && v != "0" && v != "false" && v != "no" && v != "off";
}

// A git config value: quotes removed, escapes resolved, comments dropped.
std::string ConfigValue(absl::string_view raw) {
  std::string out;
  size_t keep = 0;  // length of `out` without trailing unquoted whitespace
  bool quoted = false;
  for (size_t i = 0; i < raw.size(); ++i) {
    const char c = raw[i];
    if (c == '"') {
      quoted = !quoted;
      keep = out.size();
    } else if (c == '\\' && i + 1 < raw.size()) {
      const char e = raw[++i];
      out.push_back(e == 'n' ? '\n' : e == 't' ? '\t' : e == 'b' ? '\b' : e);
      keep = out.size();
    } else if (!quoted && (c == '#' || c == ';')) {
      break;
    } else if (!quoted && (c == ' ' || c == '\t')) {
      if (!out.empty()) out.push_back(c);
    } else {
      out.push_back(c);
      keep = out.size();
    }
  }
  out.resize(keep);
  return out;
}

// Sets *value to the last core.excludesFile in the git config text, if any.
void FindExcludesFile(absl::string_view text, std::string* value) {
  bool in_core = false;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (!line.empty() && line.front() == '[') {
      const size_t close = line.find(']');
      if (close == absl::string_view::npos) continue;
      in_core = absl::EqualsIgnoreCase(absl::StripAsciiWhitespace(line.substr(1, close - 1)), "core");
      line = absl::StripAsciiWhitespace(line.substr(close + 1));
    }
    if (!in_core || line.empty() || line.front() == '#' || line.front() == ';') continue;
    const size_t eq = line.find('=');
    if (eq == absl::string_view::npos) continue;
    if (!absl::EqualsIgnoreCase(absl::StripAsciiWhitespace(line.substr(0, eq)), "excludesfile")) {
      continue;
    }
    *value = ConfigValue(absl::StripLeadingAsciiWhitespace(line.substr(eq + 1)));
  }
}

// The global excludes file git uses for the repository at `repo` (whose
// shared git directory is `git_fd`, or -1 when its config is not to be read).
std::string GlobalExcludesPath(const std::string& repo, int git_fd) {
  const std::string home = Env("HOME");
  const std::string xdg = Env("XDG_CONFIG_HOME");
  const std::string xdg_git = !xdg.empty() ? xdg + "/git" : home.empty() ? "" : home + "/.config/git";
  std::string value;
  if (!EnvTrue("GIT_CONFIG_NOSYSTEM")) {
    const std::string system = Env("GIT_CONFIG_SYSTEM");
    FindExcludesFile(ReadSmallFile(AT_FDCWD, system.empty() ? "/etc/gitconfig" : system.c_str(),
                                   true),
                     &value);
  }
  if (const char* global = getenv("GIT_CONFIG_GLOBAL"); global != nullptr) {
    if (*global != '\0') FindExcludesFile(ReadSmallFile(AT_FDCWD, global, true), &value);
  } else {
    if (!xdg_git.empty()) {
      FindExcludesFile(ReadSmallFile(AT_FDCWD, (xdg_git + "/config").c_str(), true), &value);
    }
    if (!home.empty()) {
      FindExcludesFile(ReadSmallFile(AT_FDCWD, (home + "/.gitconfig").c_str(), true), &value);
    }
  }
  if (git_fd >= 0) FindExcludesFile(ReadSmallFile(git_fd, "config", true), &value);
  if (value.empty()) return xdg_git.empty() ? "" : xdg_git + "/ignore";
  if (absl::StartsWith(value, "~/")) return home.empty() ? "" : home + value.substr(1);
  if (value.front() != '/') return repo + "/" + value;  // git runs at the top of the work tree
  return value;
}

// The patterns of the ignore files `files` (in precedence order) of `dir_fd`.
std::vector<std::unique_ptr<GlobSet>> ReadIgnoreSets(int dir_fd,
                                                     std::initializer_list<const char*> files) {
  std::vector<std::unique_ptr<GlobSet>> sets;
  for (const char* file : files) {
    if (auto set = ParseIgnoreFile(ReadSmallFile(dir_fd, file))) sets.push_back(std::move(set));
  }
  return sets;
}

}  // namespace

struct IgnoreRules::NameIndex {
  struct Best {
    Decision file;  // without directory-only patterns
    Decision dir;
  };
  absl::flat_hash_map<std::string, Best> names;
  std::vector<std::pair<std::string, Best>> suffixes;
};

IgnoreRules::IgnoreRules(std::shared_ptr<const IgnoreRules> parent, absl::string_view dir,
                         std::vector<std::unique_ptr<GlobSet>> sets)
    : parent_(std::move(parent)),
      strip_(dir.empty() ? 0 : dir.size() + 1),
      depth_(dir.empty() ? 0 : 1 + static_cast<int>(std::count(dir.begin(), dir.end(), '/'))),
      level_(parent_ ? parent_->level_ + 1 : 1),
      sets_(std::move(sets)) {
  std::shared_ptr<NameIndex> names;
  bool has_other = false;
  std::vector<std::string> own_suffixes;
  for (size_t s = 0; s < sets_.size(); ++s) {
    const std::vector<GlobPattern>& patterns = sets_[s]->patterns();
    for (size_t i = 0; i < patterns.size(); ++i) {
      const GlobPattern& p = patterns[i];
      const GlobSet::Kind kind = GlobSet::KindOf(p);
      if (kind == GlobSet::kFixedPath) {
        has_fixed_ = true;
        fixed_lengths_ |= uint64_t{1} << p.components;
        continue;
      }
      if (kind != GlobSet::kNameLiteral) {
        has_other = true;
        if (p.anchored || p.suffix.empty()) {
          other_unfiltered_ = true;
        } else if (std::find(own_suffixes.begin(), own_suffixes.end(), p.suffix) ==
                   own_suffixes.end()) {
          own_suffixes.push_back(p.suffix);
        }
        continue;
      }
      if (names == nullptr) {
        names = parent_ && parent_->names_ ? std::make_shared<NameIndex>(*parent_->names_)
                                           : std::make_shared<NameIndex>();
      }
      NameIndex::Best* best = nullptr;
      if (p.form == GlobPattern::Form::kLiteral) {
        best = &names->names[p.literal];
      } else {
        for (auto& [suffix, b] : names->suffixes) {
          if (suffix == p.literal) best = &b;
        }
        if (best == nullptr) best = &names->suffixes.emplace_back(p.literal, NameIndex::Best()).second;
      }
      const Decision d{&p, (level_ << 32) | ((sets_.size() - 1 - s) << 24) | i};
      if (!p.dir_only && d.rank > best->file.rank) best->file = d;
      if (d.rank > best->dir.rank) best->dir = d;
    }
  }
  names_ = names != nullptr ? std::move(names) : parent_ ? parent_->names_ : nullptr;
  if (parent_) fixed_lengths_ |= parent_->fixed_lengths_;
  other_ = has_other ? this : parent_ ? parent_->other_ : nullptr;
  if (parent_) other_unfiltered_ |= parent_->other_unfiltered_;
  other_suffixes_ = parent_ ? parent_->other_suffixes_ : nullptr;
  if (!own_suffixes.empty()) {
    auto merged = other_suffixes_ ? std::make_shared<std::vector<std::string>>(*other_suffixes_)
                                  : std::make_shared<std::vector<std::string>>();
    for (std::string& suffix : own_suffixes) {
      if (std::find(merged->begin(), merged->end(), suffix) == merged->end()) {
        merged->push_back(std::move(suffix));
      }
    }
    other_suffixes_ = std::move(merged);
  }
}

std::shared_ptr<const IgnoreRules> IgnoreRules::Above(std::shared_ptr<const IgnoreRules> parent,
                                                      std::string lead,
                                                      std::vector<std::unique_ptr<GlobSet>> sets) {
  auto rules = std::make_shared<IgnoreRules>(std::move(parent), "", std::move(sets));
  if (!lead.empty()) {
    rules->depth_ = -1 - static_cast<int>(std::count(lead.begin(), lead.end(), '/'));
    rules->lead_ = std::move(lead);
  }
  return rules;
}

IgnoreRules::Decision IgnoreRules::MatchLevel(const GlobTarget& whole, absl::string_view path,
                                              bool is_dir, unsigned kinds) const {
  GlobTarget target = whole;
  std::string joined;
  if (!lead_.empty()) {
    joined = absl::StrCat(lead_, "/", path);
    target.path = joined;
  } else {
    if (path.size() <= strip_) return Decision();
    target.path = path.substr(strip_);
  }
  target.components = whole.components - depth_;
  for (size_t s = 0; s < sets_.size(); ++s) {
    if (const GlobPattern* p = sets_[s]->Match(target, is_dir, kinds)) {
      const uint64_t index = static_cast<uint64_t>(p - sets_[s]->patterns().data());
      return Decision{p, (level_ << 32) | ((sets_.size() - 1 - s) << 24) | index};
    }
  }
  return Decision();
}

IgnoreRules::Verdict IgnoreRules::Match(absl::string_view path, bool is_dir) const {
  const GlobTarget whole = MakeGlobTarget(path);
  Decision best;
  auto consider = [&best](const Decision& d) {
    if (d.pattern != nullptr && d.rank > best.rank) best = d;
  };
  if (names_ != nullptr) {
    auto pick = [is_dir](const NameIndex::Best& b) { return is_dir ? b.dir : b.file; };
    if (auto it = names_->names.find(whole.name); it != names_->names.end()) consider(pick(it->second));
    for (const auto& [suffix, b] : names_->suffixes) {
      if (absl::EndsWith(whole.name, suffix)) consider(pick(b));
    }
  }
  for (uint64_t lengths = fixed_lengths_; lengths != 0; lengths &= lengths - 1) {
    const int level_depth = whole.components - __builtin_ctzll(lengths);
    for (const IgnoreRules* r = this; r != nullptr && r->depth_ >= level_depth;
         r = r->parent_.get()) {
      if (r->depth_ == level_depth && r->has_fixed_) {
        consider(r->MatchLevel(whole, path, is_dir, GlobSet::kFixedPath));
      }
    }
  }
  bool others_may_match = other_unfiltered_;
  for (size_t i = 0; !others_may_match && other_suffixes_ && i < other_suffixes_->size(); ++i) {
    others_may_match = absl::EndsWith(whole.name, (*other_suffixes_)[i]);
  }
  for (const IgnoreRules* r = others_may_match ? other_ : nullptr; r != nullptr;
       r = r->parent_ != nullptr ? r->parent_->other_ : nullptr) {
    if ((best.rank >> 32) > r->level_) break;  // a deeper level decided already
    const Decision d = r->MatchLevel(whole, path, is_dir, GlobSet::kOther);
    if (d.pattern != nullptr) {
      consider(d);
      break;
    }
  }
  if (best.pattern == nullptr) return Verdict::kNone;
  return best.pattern->negated ? Verdict::kWhitelist : Verdict::kIgnore;
}

std::shared_ptr<const IgnoreRules> RepositoryRules(const std::string& root) {
  // The repository: the nearest directory at or above the root with a .git.
  std::string repo = root;
  for (;;) {
    struct stat st;
    const std::string git = (repo == "/" ? "" : repo) + "/.git";
    if (lstat(git.c_str(), &st) == 0 && (S_ISDIR(st.st_mode) || S_ISREG(st.st_mode))) break;
    if (repo == "/" || repo.empty()) return nullptr;  // not in a repository
    const size_t slash = repo.rfind('/');
    repo = slash == 0 ? "/" : repo.substr(0, slash);
  }
  const bool inside = repo == root;  // the walk reads the root's own files
  UniqueFd repo_fd(open(repo.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!repo_fd.valid()) return nullptr;
  UniqueFd git;
  if (!inside) git = OpenGitCommonDir(repo_fd.get());

  std::shared_ptr<const IgnoreRules> rules;
  const std::string lead = inside ? "" : root.substr(repo == "/" ? 1 : repo.size() + 1);
  const std::string excludes = GlobalExcludesPath(repo, git.valid() ? git.get() : -1);
  if (!excludes.empty()) {
    if (auto set = ParseIgnoreFile(ReadSmallFile(AT_FDCWD, excludes.c_str(), true))) {
      std::vector<std::unique_ptr<GlobSet>> sets;
      sets.push_back(std::move(set));
      rules = IgnoreRules::Above(nullptr, lead, std::move(sets));
    }
  }
  if (inside) return rules;
  // From the repository's top down to the root's parent, each directory's
  // ignore files; the top's after them its info/exclude.
  std::vector<absl::string_view> parts = absl::StrSplit(lead, '/');
  UniqueFd dir = std::move(repo_fd);
  for (size_t i = 0; i < parts.size() && dir.valid(); ++i) {
    std::vector<std::unique_ptr<GlobSet>> sets =
        ReadIgnoreSets(dir.get(), {".rgignore", ".ignore", ".gitignore"});
    if (i == 0) {
      if (auto set = ParseIgnoreFile(ReadGitExclude(dir.get()))) sets.push_back(std::move(set));
    }
    if (!sets.empty()) {
      rules = IgnoreRules::Above(std::move(rules), absl::StrJoin(parts.begin() + i, parts.end(), "/"),
                                 std::move(sets));
    }
    dir.reset(openat(dir.get(), std::string(parts[i]).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  }
  return rules;
}

std::shared_ptr<const IgnoreRules> LoadIgnoreRules(int dir_fd, absl::string_view dir_path,
                                                   const std::vector<std::string>& names,
                                                   std::shared_ptr<const IgnoreRules> parent) {
  auto has = [&](absl::string_view n) {
    return std::find(names.begin(), names.end(), n) != names.end();
  };
  std::vector<std::unique_ptr<GlobSet>> sets;
  for (const char* file : {".rgignore", ".ignore", ".gitignore"}) {
    if (!has(file)) continue;
    if (auto set = ParseIgnoreFile(ReadSmallFile(dir_fd, file))) sets.push_back(std::move(set));
  }
  if (has(".git")) {
    if (auto set = ParseIgnoreFile(ReadGitExclude(dir_fd))) sets.push_back(std::move(set));
  }
  if (sets.empty()) return parent;
  return std::make_shared<const IgnoreRules>(std::move(parent), dir_path, std::move(sets));
}

}  // namespace toolexec::fs
