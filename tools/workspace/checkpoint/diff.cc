// Comparing checkpoints: the changes from one manifest to another (Compare,
// PathFilter), and CheckpointStore::Diff, their git-style text.
#include <fcntl.h>
#include <unistd.h>

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "tools/workspace/checkpoint/store.h"
#include "tools/workspace/checkpoint/store_internal.h"
#include "tools/workspace/confined_path.h"
#include "tools/workspace/diff.h"
#include "tools/workspace/text.h"

namespace toolexec::checkpoint {
namespace {

using internal::Base;
using internal::Compare;
using internal::OpenDir;
using internal::Pair;
using internal::Parent;
using internal::PathFilter;
using internal::Pins;
using internal::ReadAll;
using fs::PathCompare;

std::string ShownPath(const Entry& e) {
  return e.type == EntryType::kDir ? absl::StrCat(e.path, "/") : e.path;
}

std::string GitMode(const Entry& e) {
  switch (e.type) {
    case EntryType::kSymlink:
      return "120000";
    case EntryType::kDir:
      return "040000";
    case EntryType::kFile:
      break;
  }
  return absl::StrFormat("100%03o", e.mode & 0777);
}

}  // namespace

namespace internal {

absl::StatusOr<PathFilter> PathFilter::Make(const std::vector<std::string>& paths,
                                            const std::string& root) {
  PathFilter f;
  for (const std::string& raw : paths) {
    absl::string_view p = raw;
    if (absl::StartsWith(p, "/")) {
      if (!absl::ConsumePrefix(&p, root) || (!p.empty() && p[0] != '/')) {
        return absl::InvalidArgumentError(
            absl::StrCat("path '", raw, "' is outside the workspace ", root));
      }
    }
    std::vector<absl::string_view> parts;
    for (absl::string_view part : absl::StrSplit(p, '/', absl::SkipEmpty())) {
      if (part == ".") continue;
      if (part == "..") {
        return absl::InvalidArgumentError(
            absl::StrCat("path '", raw, "' has a '..' component: name paths inside the workspace"));
      }
      parts.push_back(part);
    }
    if (parts.empty()) return PathFilter();  // the whole tree
    f.paths_.push_back(absl::StrJoin(parts, "/"));
  }
  return f;
}

bool PathFilter::Selects(absl::string_view path) const {
  if (paths_.empty()) return true;
  for (const std::string& p : paths_) {
    if (path == p || (absl::StartsWith(path, p) && path.size() > p.size() && path[p.size()] == '/')) {
      return true;
    }
  }
  return false;
}

std::vector<std::pair<FileChange, Pair>> Compare(const std::vector<Entry>& a,
                                                 const std::vector<Entry>& b,
                                                 const PathFilter& filter) {
  std::vector<std::pair<FileChange, Pair>> out;
  size_t i = 0, j = 0;
  while (i < a.size() || j < b.size()) {
    Pair p;
    const int order = i == a.size() ? 1 : j == b.size() ? -1 : PathCompare(a[i].path, b[j].path);
    if (order < 0) {
      p.from = &a[i++];
    } else if (order > 0) {
      p.to = &b[j++];
    } else {
      p.from = &a[i++];
      p.to = &b[j++];
    }
    const Entry& any = p.from != nullptr ? *p.from : *p.to;
    if (!filter.Selects(any.path)) continue;
    FileChange c;
    if (p.from == nullptr) {
      c = {ShownPath(*p.to), ChangeKind::kAdded};
    } else if (p.to == nullptr) {
      c = {ShownPath(*p.from), ChangeKind::kDeleted};
    } else if (p.from->type != p.to->type) {
      c = {p.to->path, ChangeKind::kTypeChanged};
    } else if (p.from->type == EntryType::kFile && p.from->hash != p.to->hash) {
      c = {p.to->path, ChangeKind::kModified};
    } else if (p.from->type == EntryType::kSymlink && p.from->target != p.to->target) {
      c = {p.to->path, ChangeKind::kModified};
    } else if (p.from->type != EntryType::kSymlink && p.from->mode != p.to->mode) {
      c = {ShownPath(*p.to), ChangeKind::kModeChanged};
    } else {
      continue;
    }
    out.emplace_back(std::move(c), p);
  }
  return out;
}

}  // namespace internal

const char* ChangeKindName(ChangeKind kind) {
  switch (kind) {
    case ChangeKind::kAdded:
      return "added";
    case ChangeKind::kModified:
      return "modified";
    case ChangeKind::kDeleted:
      return "deleted";
    case ChangeKind::kModeChanged:
      return "mode changed";
    case ChangeKind::kTypeChanged:
      return "type changed";
  }
  return "changed";
}

absl::StatusOr<std::string> CheckpointStore::Content(const Entry& e,
                                                     const fs::ConfinedRoot* now_root) const {
  if (e.type == EntryType::kSymlink) return e.target;
  if (e.type != EntryType::kFile) return std::string();
  if (now_root == nullptr) return objects_->Get(e.hash, e.size);
  UniqueFd dir(OpenDir(*now_root, Parent(e.path)));
  UniqueFd fd(dir.valid() ? openat(dir.get(), Base(e.path).c_str(),
                                   O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)
                          : -1);
  std::string data;
  if (!fd.valid() || !ReadAll(fd.get(), 0, &data)) return ErrnoStatus(errno, e.path, "reading");
  return data;
}

absl::StatusOr<DiffResult> CheckpointStore::Diff(const std::shared_ptr<const fs::ConfinedRoot>& root,
                                                 absl::string_view session_id,
                                                 absl::string_view from_id, absl::string_view to_id,
                                                 const std::vector<std::string>& paths) {
  absl::StatusOr<PathFilter> filter = PathFilter::Make(paths, root->path());
  if (!filter.ok()) return filter.status();
  Pins pins(&mu_, &pins_);
  {
    absl::MutexLock lock(&mu_);
    for (absl::string_view id : {from_id, to_id}) {
      if (id.empty() && id.data() == to_id.data()) continue;  // to the tree now
      if (absl::Status known = CheckKnown(session_id, id); !known.ok()) return known;
      pins.Add(std::string(id));
    }
  }
  // The stat cache first: a Take holds its root's lock before gc_mu_.
  std::shared_ptr<const CacheData> data;
  if (to_id.empty()) {
    std::shared_ptr<RootCache> cache = CacheFor(root->path());
    absl::MutexLock take_lock(&cache->take_mu);
    data = CurrentCache(*cache);
  }
  absl::ReaderMutexLock gc(&gc_mu_);
  absl::StatusOr<Manifest> from = LoadManifest(session_id, from_id);
  if (!from.ok()) return from.status();
  absl::StatusOr<Manifest> to;
  if (to_id.empty()) {
    to = Scan(root, data.get(), false, nullptr);
  } else {
    to = LoadManifest(session_id, to_id);
  }
  if (!to.ok()) return to.status();
  const fs::ConfinedRoot* now_root = to_id.empty() ? root.get() : nullptr;

  DiffResult out;
  for (auto& [change, pair] : Compare(from->entries, to->entries, *filter)) {
    out.changes.push_back(change);
    if (out.diff_truncated) continue;
    const Entry* a = pair.from;
    const Entry* b = pair.to;
    if ((a != nullptr && a->type == EntryType::kDir) || (b != nullptr && b->type == EntryType::kDir)) {
      continue;  // a directory has no text; its entries have their own
    }
    const std::string& path = (b != nullptr ? b : a)->path;
    std::string text = absl::StrCat("diff --git a/", path, " b/", path, "\n");
    if (a == nullptr) {
      absl::StrAppend(&text, "new file mode ", GitMode(*b), "\n");
    } else if (b == nullptr) {
      absl::StrAppend(&text, "deleted file mode ", GitMode(*a), "\n");
    } else if (GitMode(*a) != GitMode(*b)) {
      absl::StrAppend(&text, "old mode ", GitMode(*a), "\nnew mode ", GitMode(*b), "\n");
    }
    if (change.kind != ChangeKind::kModeChanged) {
      std::string old_text, new_text;
      if (a != nullptr) {
        absl::StatusOr<std::string> c = Content(*a, nullptr);
        if (!c.ok()) return c.status();
        old_text = *std::move(c);
      }
      if (b != nullptr) {
        absl::StatusOr<std::string> c = Content(*b, now_root);
        if (!c.ok()) return c.status();
        new_text = *std::move(c);
      }
      auto head = [](const std::string& t) { return absl::string_view(t).substr(0, fs::kBinarySniffBytes); };
      if (fs::LooksBinary(head(old_text)) || fs::LooksBinary(head(new_text))) {
        absl::StrAppend(&text, "Binary files ", a != nullptr ? "a/" + path : "/dev/null", " and ",
                        b != nullptr ? "b/" + path : "/dev/null", " differ\n");
      } else {
        fs::DiffStats stats;
        bool cut = false;
        const size_t room = kMaxDiffBytes > out.unified_diff.size() + text.size()
                                ? kMaxDiffBytes - out.unified_diff.size() - text.size()
                                : 0;
        absl::StrAppend(&text, fs::UnifiedDiff(old_text, new_text, path, 3, &stats, nullptr,
                                                    room, &cut));
        if (cut) out.diff_truncated = true;
      }
    }
    if (out.unified_diff.size() + text.size() > kMaxDiffBytes) {
      out.diff_truncated = true;
      continue;
    }
    out.unified_diff += text;
  }
  return out;
}

}  // namespace toolexec::checkpoint
