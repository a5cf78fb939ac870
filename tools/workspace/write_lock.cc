#include "tools/workspace/write_lock.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/hash/hash.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "tools/workspace/confined.h"

namespace toolexec::fs {

struct FileWriteLock::Key {
  dev_t dev;
  ino_t ino;
  std::string name;

  bool operator==(const Key& o) const {
    return std::tie(dev, ino, name) == std::tie(o.dev, o.ino, o.name);
  }
  bool operator<(const Key& o) const {
    return std::tie(dev, ino, name) < std::tie(o.dev, o.ino, o.name);
  }
  template <typename H>
  friend H AbslHashValue(H h, const Key& k) {
    return H::combine(std::move(h), k.dev, k.ino, k.name);
  }
};

// Fields are guarded by Table::mu.
struct FileWriteLock::Entry {
  const Key* key = nullptr;  // the table's key of this entry
  int users = 0;             // the holder and the waiters
  bool held = false;
};

namespace {

using Key = FileWriteLock::Key;

// std::unordered_map: entries stay where they are while others come and go.
struct Table {
  absl::Mutex mu;
  std::unordered_map<Key, FileWriteLock::Entry, absl::Hash<Key>> entries ABSL_GUARDED_BY(mu);

  // One user of `entry` leaves; the last erases it.
  void Leave(FileWriteLock::Entry* entry) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    if (--entry->users == 0) entries.erase(entries.find(*entry->key));
  }
};

Table& GlobalTable() {
  static Table* table = new Table;
  return *table;
}

struct WaitState {
  const FileWriteLock::Entry* entry;
  const CancellationToken* cancel;
};

// absl re-evaluates a waiter's condition whenever the mutex is released.
bool Free(WaitState* w) ABSL_NO_THREAD_SAFETY_ANALYSIS {
  return !w->entry->held || w->cancel->cancelled();
}

// The lock's key for `name` in the directory `dir_fd`; nullopt (errno set)
// when the directory cannot be stat'ed.
std::optional<Key> KeyOf(int dir_fd, absl::string_view name) {
  struct stat st;
  if (fstat(dir_fd, &st) != 0) return std::nullopt;
  return Key{st.st_dev, st.st_ino, std::string(name)};
}

}  // namespace

absl::StatusOr<FileWriteLock> FileWriteLock::Acquire(int dir_fd, absl::string_view name,
                                                     const CancellationToken& cancel,
                                                     absl::string_view display) {
  auto key = KeyOf(dir_fd, name);
  if (!key.has_value()) return ErrnoStatus(errno, display);
  return AcquireKey(*std::move(key), cancel, display);
}

absl::StatusOr<std::vector<FileWriteLock>> FileWriteLock::AcquireAll(
    const std::vector<Target>& targets, const CancellationToken& cancel) {
  std::vector<std::pair<Key, const Target*>> keys;
  for (const Target& t : targets) {
    auto key = KeyOf(t.dir_fd, t.name);
    if (!key.has_value()) return ErrnoStatus(errno, t.display);
    keys.emplace_back(*std::move(key), &t);
  }
  std::sort(keys.begin(), keys.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  keys.erase(std::unique(keys.begin(), keys.end(),
                         [](const auto& a, const auto& b) { return a.first == b.first; }),
             keys.end());
  std::vector<FileWriteLock> held;
  held.reserve(keys.size());
  for (auto& [key, target] : keys) {
    auto lock = AcquireKey(std::move(key), cancel, target->display);
    if (!lock.ok()) return lock.status();  // releases those already held
    held.push_back(*std::move(lock));
  }
  return held;
}

absl::StatusOr<FileWriteLock> FileWriteLock::AcquireKey(Key key, const CancellationToken& cancel,
                                                        absl::string_view display) {
  Table& table = GlobalTable();
  // Cancellation wakes the waiters: releasing the mutex re-evaluates their
  // conditions. Registered before waiting, without the mutex held (an already
  // cancelled token runs the callback at once, on this thread).
  const int callback = cancel.AddCallback([&table] { absl::MutexLock lock(&table.mu); });
  Entry* entry = nullptr;
  bool waited = false;
  bool cancelled = false;
  {
    absl::MutexLock lock(&table.mu);
    auto it = table.entries.try_emplace(std::move(key)).first;
    entry = &it->second;
    entry->key = &it->first;
    ++entry->users;
    waited = entry->held;
    WaitState w{entry, &cancel};
    table.mu.Await(absl::Condition(&Free, &w));
    if (cancel.cancelled()) {
      table.Leave(entry);
      cancelled = true;
    } else {
      entry->held = true;
    }
  }
  if (callback != 0) cancel.RemoveCallback(callback);
  if (cancelled) {
    return absl::CancelledError(
        absl::StrCat("cancelled while waiting for another write of '", display, "' to finish"));
  }
  return FileWriteLock(entry, waited);
}

FileWriteLock::~FileWriteLock() {
  if (entry_ == nullptr) return;
  Table& table = GlobalTable();
  absl::MutexLock lock(&table.mu);
  entry_->held = false;
  table.Leave(entry_);
}

size_t FileWriteLock::KeysInUse() {
  Table& table = GlobalTable();
  absl::MutexLock lock(&table.mu);
  return table.entries.size();
}

int FileWriteLock::UsersForTesting(int dir_fd, absl::string_view name) {
  auto key = KeyOf(dir_fd, name);
  if (!key.has_value()) return -1;
  Table& table = GlobalTable();
  absl::MutexLock lock(&table.mu);
  auto it = table.entries.find(*key);
  return it == table.entries.end() ? 0 : it->second.users;
}

}  // namespace toolexec::fs
