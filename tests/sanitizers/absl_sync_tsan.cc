// ThreadSanitizer support for Debian's prebuilt abseil (TSan builds only:
// scripts/sanitize.sh thread). libabsl_synchronization is not instrumented,
// so TSan never sees absl::Mutex, absl::CondVar or absl::Notification hand
// data from one thread to the next and reports every access they guard as a
// race. This library, linked ahead of abseil into every TSan executable,
// interposes their entry points (the executable's definition wins over the
// shared library's, for calls from gRPC too), calls abseil's own through
// dlsym(RTLD_NEXT) and tells TSan what happened:
//   - taking a lock (Lock, ReaderLock, a successful TryLock, LockWhen and
//     friends) acquires the mutex's address; releasing it (Unlock,
//     ReaderUnlock) releases it;
//   - Await and CondVar::Wait release the mutex before waiting and acquire it
//     after (abseil gives the lock up and takes it back inside);
//   - the condition of LockWhen and Await is evaluated inside abseil, with
//     the lock held, by the waiting thread or by the one releasing the lock:
//     it is wrapped to acquire the mutex before each evaluation and release
//     it after, as a critical section of its own;
//   - Notification::Notify releases the notification, and a wait for it
//     acquires it.
// This models happens-before only: it does not check lock order, and
// reader-reader pairs are ordered as if exclusive (which can hide a race
// between two readers, never invent one).
#include <dlfcn.h>
#include <sanitizer/tsan_interface.h>

#include <cstdio>
#include <cstdlib>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"

namespace {

// abseil's own definition of the member function whose mangled name is
// `name` (bookworm's abseil, inline namespace debian3).
template <typename Fn>
Fn Real(const char* name) {
  void* f = dlsym(RTLD_NEXT, name);
  if (f == nullptr) {
    std::fprintf(stderr, "absl_sync_tsan: abseil has no %s (another abseil version?)\n", name);
    std::abort();
  }
  return reinterpret_cast<Fn>(f);
}

#define TOOLEXEC_REAL(type, name)                 \
  static const auto real = Real<type>(name);      \
  (void)0

void Acquire(const void* addr) { __tsan_acquire(const_cast<void*>(addr)); }
void Release(const void* addr) { __tsan_release(const_cast<void*>(addr)); }

// A condition evaluated as a critical section of `mu`.
struct Annotated {
  const absl::Condition* cond;
  const absl::Mutex* mu;
};
bool EvalAnnotated(Annotated* a) {
  Acquire(a->mu);
  const bool met = a->cond->Eval();
  Release(a->mu);
  return met;
}

}  // namespace

namespace absl {
ABSL_NAMESPACE_BEGIN

void Mutex::Lock() {
  TOOLEXEC_REAL(void (*)(Mutex*), "_ZN4absl7debian35Mutex4LockEv");
  real(this);
  Acquire(this);
}

void Mutex::ReaderLock() {
  TOOLEXEC_REAL(void (*)(Mutex*), "_ZN4absl7debian35Mutex10ReaderLockEv");
  real(this);
  Acquire(this);
}

bool Mutex::TryLock() {
  TOOLEXEC_REAL(bool (*)(Mutex*), "_ZN4absl7debian35Mutex7TryLockEv");
  const bool locked = real(this);
  if (locked) Acquire(this);
  return locked;
}

bool Mutex::ReaderTryLock() {
  TOOLEXEC_REAL(bool (*)(Mutex*), "_ZN4absl7debian35Mutex13ReaderTryLockEv");
  const bool locked = real(this);
  if (locked) Acquire(this);
  return locked;
}

void Mutex::Unlock() {
  TOOLEXEC_REAL(void (*)(Mutex*), "_ZN4absl7debian35Mutex6UnlockEv");
  Release(this);
  real(this);
}

void Mutex::ReaderUnlock() {
  TOOLEXEC_REAL(void (*)(Mutex*), "_ZN4absl7debian35Mutex12ReaderUnlockEv");
  Release(this);
  real(this);
}

void Mutex::LockWhen(const Condition& cond) {
  TOOLEXEC_REAL(void (*)(Mutex*, const Condition&), "_ZN4absl7debian35Mutex8LockWhenERKNS0_9ConditionE");
  Annotated a{&cond, this};
  const Condition wrapped(&EvalAnnotated, &a);
  real(this, wrapped);
  Acquire(this);
}

void Mutex::ReaderLockWhen(const Condition& cond) {
  TOOLEXEC_REAL(void (*)(Mutex*, const Condition&),
                "_ZN4absl7debian35Mutex14ReaderLockWhenERKNS0_9ConditionE");
  Annotated a{&cond, this};
  const Condition wrapped(&EvalAnnotated, &a);
  real(this, wrapped);
  Acquire(this);
}

bool Mutex::LockWhenWithTimeout(const Condition& cond, absl::Duration timeout) {
  TOOLEXEC_REAL(bool (*)(Mutex*, const Condition&, absl::Duration),
                "_ZN4absl7debian35Mutex19LockWhenWithTimeoutERKNS0_9ConditionENS0_8DurationE");
  Annotated a{&cond, this};
  const Condition wrapped(&EvalAnnotated, &a);
  const bool met = real(this, wrapped, timeout);
  Acquire(this);
  return met;
}

bool Mutex::LockWhenWithDeadline(const Condition& cond, absl::Time deadline) {
  TOOLEXEC_REAL(bool (*)(Mutex*, const Condition&, absl::Time),
                "_ZN4absl7debian35Mutex20LockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE");
  Annotated a{&cond, this};
  const Condition wrapped(&EvalAnnotated, &a);
  const bool met = real(this, wrapped, deadline);
  Acquire(this);
  return met;
}

bool Mutex::ReaderLockWhenWithTimeout(const Condition& cond, absl::Duration timeout) {
  TOOLEXEC_REAL(bool (*)(Mutex*, const Condition&, absl::Duration),
                "_ZN4absl7debian35Mutex25ReaderLockWhenWithTimeoutERKNS0_9ConditionENS0_8DurationE");
  Annotated a{&cond, this};
  const Condition wrapped(&EvalAnnotated, &a);
  const bool met = real(this, wrapped, timeout);
  Acquire(this);
  return met;
}

bool Mutex::ReaderLockWhenWithDeadline(const Condition& cond, absl::Time deadline) {
  TOOLEXEC_REAL(bool (*)(Mutex*, const Condition&, absl::Time),
                "_ZN4absl7debian35Mutex26ReaderLockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE");
  Annotated a{&cond, this};
  const Condition wrapped(&EvalAnnotated, &a);
  const bool met = real(this, wrapped, deadline);
  Acquire(this);
  return met;
}

void Mutex::Await(const Condition& cond) {
  TOOLEXEC_REAL(void (*)(Mutex*, const Condition&), "_ZN4absl7debian35Mutex5AwaitERKNS0_9ConditionE");
  Annotated a{&cond, this};
  const Condition wrapped(&EvalAnnotated, &a);
  Release(this);
  real(this, wrapped);
  Acquire(this);
}

bool Mutex::AwaitWithTimeout(const Condition& cond, absl::Duration timeout) {
  TOOLEXEC_REAL(bool (*)(Mutex*, const Condition&, absl::Duration),
                "_ZN4absl7debian35Mutex16AwaitWithTimeoutERKNS0_9ConditionENS0_8DurationE");
  Annotated a{&cond, this};
  const Condition wrapped(&EvalAnnotated, &a);
  Release(this);
  const bool met = real(this, wrapped, timeout);
  Acquire(this);
  return met;
}

bool Mutex::AwaitWithDeadline(const Condition& cond, absl::Time deadline) {
  TOOLEXEC_REAL(bool (*)(Mutex*, const Condition&, absl::Time),
                "_ZN4absl7debian35Mutex17AwaitWithDeadlineERKNS0_9ConditionENS0_4TimeE");
  Annotated a{&cond, this};
  const Condition wrapped(&EvalAnnotated, &a);
  Release(this);
  const bool met = real(this, wrapped, deadline);
  Acquire(this);
  return met;
}

void CondVar::Wait(Mutex* mu) {
  TOOLEXEC_REAL(void (*)(CondVar*, Mutex*), "_ZN4absl7debian37CondVar4WaitEPNS0_5MutexE");
  Release(mu);
  real(this, mu);
  Acquire(mu);
}

bool CondVar::WaitWithTimeout(Mutex* mu, absl::Duration timeout) {
  TOOLEXEC_REAL(bool (*)(CondVar*, Mutex*, absl::Duration),
                "_ZN4absl7debian37CondVar15WaitWithTimeoutEPNS0_5MutexENS0_8DurationE");
  Release(mu);
  const bool timed_out = real(this, mu, timeout);
  Acquire(mu);
  return timed_out;
}

bool CondVar::WaitWithDeadline(Mutex* mu, absl::Time deadline) {
  TOOLEXEC_REAL(bool (*)(CondVar*, Mutex*, absl::Time),
                "_ZN4absl7debian37CondVar16WaitWithDeadlineEPNS0_5MutexENS0_4TimeE");
  Release(mu);
  const bool timed_out = real(this, mu, deadline);
  Acquire(mu);
  return timed_out;
}

void Notification::Notify() {
  TOOLEXEC_REAL(void (*)(Notification*), "_ZN4absl7debian312Notification6NotifyEv");
  Release(this);
  real(this);
}

void Notification::WaitForNotification() const {
  TOOLEXEC_REAL(void (*)(const Notification*),
                "_ZNK4absl7debian312Notification19WaitForNotificationEv");
  real(this);
  Acquire(this);
}

bool Notification::WaitForNotificationWithTimeout(absl::Duration timeout) const {
  TOOLEXEC_REAL(bool (*)(const Notification*, absl::Duration),
                "_ZNK4absl7debian312Notification30WaitForNotificationWithTimeoutENS0_8DurationE");
  const bool notified = real(this, timeout);
  if (notified) Acquire(this);
  return notified;
}

bool Notification::WaitForNotificationWithDeadline(absl::Time deadline) const {
  TOOLEXEC_REAL(bool (*)(const Notification*, absl::Time),
                "_ZNK4absl7debian312Notification31WaitForNotificationWithDeadlineENS0_4TimeE");
  const bool notified = real(this, deadline);
  if (notified) Acquire(this);
  return notified;
}

ABSL_NAMESPACE_END
}  // namespace absl
