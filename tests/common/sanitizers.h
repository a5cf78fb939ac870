// What a test needs to know about the sanitizer it may run under
// (scripts/sanitize.sh).
#ifndef TOOLEXEC_TESTS_COMMON_SANITIZERS_H_
#define TOOLEXEC_TESTS_COMMON_SANITIZERS_H_

namespace toolexec::testing {

// gcc says which sanitizer it builds with in __SANITIZE_*__, clang in
// __has_feature.
#if !defined(__has_feature)
#define TOOLEXEC_HAS_FEATURE(x) 0
#else
#define TOOLEXEC_HAS_FEATURE(x) __has_feature(x)
#endif

#if defined(__SANITIZE_ADDRESS__) || TOOLEXEC_HAS_FEATURE(address_sanitizer)
inline constexpr bool kAddressSanitizer = true;
#else
inline constexpr bool kAddressSanitizer = false;
#endif

// True under ThreadSanitizer. clang 14's TSan runtime fails its own CHECK
// in a child forked from a multi-threaded process (ForkAfter, "!thr->slot"),
// so a test that starts a command skips itself there (kSkipCommandsUnderTsan);
// ASan+UBSan and the normal build run it.
#if defined(__SANITIZE_THREAD__) || TOOLEXEC_HAS_FEATURE(thread_sanitizer)
inline constexpr bool kThreadSanitizer = true;
#else
inline constexpr bool kThreadSanitizer = false;
#endif
#undef TOOLEXEC_HAS_FEATURE

// True under AddressSanitizer or ThreadSanitizer. Their allocators keep
// freed memory (ASan's quarantine, 256 MiB) and add shadow memory, so a
// bound on the process's resident memory, which the normal build checks,
// does not hold there.
inline constexpr bool kSanitizerAllocator = kAddressSanitizer || kThreadSanitizer;

inline constexpr const char* kSkipCommandsUnderTsan =
    "starts a command, which clang 14's TSan cannot follow across fork "
    "(tests/common/sanitizers.h); ASan+UBSan runs it";

}  // namespace toolexec::testing

#endif  // TOOLEXEC_TESTS_COMMON_SANITIZERS_H_
