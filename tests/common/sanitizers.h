// What a test needs to know about the sanitizer it may run under
// (scripts/sanitize.sh).
#ifndef TOOLEXEC_TESTS_COMMON_SANITIZERS_H_
#define TOOLEXEC_TESTS_COMMON_SANITIZERS_H_

namespace toolexec::testing {

// True under AddressSanitizer or ThreadSanitizer. Their allocators keep
// freed memory (ASan's quarantine, 256 MiB) and add shadow memory, so a
// bound on the process's resident memory, which the normal build checks,
// does not hold there.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kSanitizerAllocator = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
inline constexpr bool kSanitizerAllocator = true;
#else
inline constexpr bool kSanitizerAllocator = false;
#endif
#else
inline constexpr bool kSanitizerAllocator = false;
#endif

// True under ThreadSanitizer. clang 14's TSan runtime fails its own CHECK
// in a child forked from a multi-threaded process (ForkAfter, "!thr->slot"),
// so a test that starts a command skips itself there (kSkipCommandsUnderTsan);
// ASan+UBSan and the normal build run it.
#if defined(__SANITIZE_THREAD__)
inline constexpr bool kThreadSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
inline constexpr bool kThreadSanitizer = true;
#else
inline constexpr bool kThreadSanitizer = false;
#endif
#else
inline constexpr bool kThreadSanitizer = false;
#endif

inline constexpr const char* kSkipCommandsUnderTsan =
    "starts a command, which clang 14's TSan cannot follow across fork "
    "(tests/common/sanitizers.h); ASan+UBSan runs it";

}  // namespace toolexec::testing

#endif  // TOOLEXEC_TESTS_COMMON_SANITIZERS_H_
