// FileWriteLock: serializes the daemon's writers of one file.
//
// Every tool that replaces a file (create_file, edit_file; anything that
// writes with WriteFileAtomic) holds this lock from before it reads or checks
// the file until after its rename. So a read-modify-write by one call never
// interleaves with another call's write of the same file: an edit reads the
// latest content, and nothing written after that read is overwritten by it.
// A checkpoint restore (checkpoint/store.h) holds the locks of every path it
// deletes or writes, taken together with AcquireAll, for the same reason.
//
// Key: the file's directory as resolved (st_dev, st_ino of the directory
// handle the write uses) and the file's name. Paths that alias (a symlinked
// directory inside the workspace, "a/../b", two session roots that overlap)
// reach the same directory and so the same key. The name, not the file's
// inode, is the key because a write replaces the name (rename) and a new file
// has no inode yet; two hard links are two names, and a write through one
// replaces only that name.
//
// Ownership and lifetime: one process-wide table of entries {users, held},
// keyed as above. An entry exists while some call holds or waits for it and
// is erased by the last one to leave, so the table holds only keys in use and
// never grows with the number of files written. The table's mutex is held
// only to update entries, never during I/O.
//
// Threads and cancellation: Acquire() blocks the calling thread (the executor
// thread running the tool call) until no other holder of the key remains.
// Waiters are not served in any particular order. A cancelled call (client
// cancel, timeout, shutdown) stops waiting at once: a cancellation callback
// wakes the waiters and Acquire returns Cancelled without the lock.
//
// Deadlock: a call holds either one FileWriteLock (Acquire) or a set taken
// at once by AcquireAll, which takes them in one global order (directory
// dev, inode, name), each key once even when two paths alias it. A holder
// acquires nothing else that another holder could wait for (the directories
// are made and opened before, the table mutex is never held while waiting
// for I/O), so no cycle can form. A holder always finishes: its work is local
// file I/O, bounded by max_file_bytes.
//
// Writers outside the daemon (a command, an editor) do not take this lock;
// WriteFileAtomic's `expect` check still refuses a write when the file was
// replaced or changed since it was read (up to a narrow window between that
// check and the rename, as for any writer without a shared lock).
#ifndef TOOLEXEC_TOOLS_WORKSPACE_WRITE_LOCK_H_
#define TOOLEXEC_TOOLS_WORKSPACE_WRITE_LOCK_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "tools/runtime/cancellation.h"

namespace toolexec::fs {

class FileWriteLock final {
 public:
  // Waits until no other FileWriteLock of `name` (one component) in the
  // directory `dir_fd` is held in this process, then holds it. Cancelled if
  // `cancel` trips first; an error from fstat(dir_fd) otherwise. `display`
  // names the file in messages.
  static absl::StatusOr<FileWriteLock> Acquire(int dir_fd, absl::string_view name,
                                               const CancellationToken& cancel,
                                               absl::string_view display);

  // One file of a set to lock: `name` (one component) in the directory
  // `dir_fd`, named `display` in messages.
  struct Target {
    int dir_fd;
    std::string name;
    std::string display;
  };
  // Holds the locks of every target (for a write that replaces several files
  // together). Takes them in the global order above, so two such calls never
  // wait for each other in a cycle; targets that reach the same key share one
  // lock. Cancelled (holding none) if `cancel` trips first.
  static absl::StatusOr<std::vector<FileWriteLock>> AcquireAll(const std::vector<Target>& targets,
                                                               const CancellationToken& cancel);

  FileWriteLock(FileWriteLock&& other) noexcept : entry_(other.entry_), waited_(other.waited_) {
    other.entry_ = nullptr;
  }
  FileWriteLock& operator=(FileWriteLock&&) = delete;
  FileWriteLock(const FileWriteLock&) = delete;
  FileWriteLock& operator=(const FileWriteLock&) = delete;
  // Releases the lock.
  ~FileWriteLock();

  // Another call held the lock when this one asked for it, so the file may
  // have been written just before this call got it.
  bool waited() const { return waited_; }

  // Keys with a holder or a waiter, process-wide.
  static size_t KeysInUse();
  // The holder and waiters of one key (for tests that wait for a waiter).
  static int UsersForTesting(int dir_fd, absl::string_view name);

  struct Entry;
  struct Key;

 private:
  static absl::StatusOr<FileWriteLock> AcquireKey(Key key, const CancellationToken& cancel,
                                                  absl::string_view display);

  FileWriteLock(Entry* entry, bool waited) : entry_(entry), waited_(waited) {}

  Entry* entry_;
  bool waited_;
};

}  // namespace toolexec::fs

#endif  // TOOLEXEC_TOOLS_WORKSPACE_WRITE_LOCK_H_
