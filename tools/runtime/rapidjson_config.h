// Included before any RapidJSON header (json.h does it): a misused RapidJSON
// call (GetString() on a number, ...) throws std::runtime_error instead of
// being undefined behaviour in release builds. The runner turns an exception
// thrown by a tool into an error result, so such a bug fails one call, not the
// daemon. The check costs a branch: RapidJSON asserts in nearly every
// accessor and every write, so nothing is built unless it fails. valijson's
// RapidJSON adapter, which would define its own (building a std::string of
// the file name at every assert), is included after this header
// (tools/runtime/schema_regex.h), so every translation unit sees this one.
// RAPIDJSON_NEW sizes documents' memory pools (kJsonPoolBlockBytes).
#ifndef TOOLEXEC_TOOLS_RUNTIME_RAPIDJSON_CONFIG_H_
#define TOOLEXEC_TOOLS_RUNTIME_RAPIDJSON_CONFIG_H_

#include <cstddef>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace rapidjson {
class CrtAllocator;
template <typename BaseAllocator>
class MemoryPoolAllocator;
}  // namespace rapidjson

namespace toolexec::internal {

// The block a document's memory pool grows by. RapidJSON's own is 64 KiB,
// taken by the first value of every document: a small call's arguments and
// its result each cost a 64 KiB malloc, which glibc serves from the top of
// the heap (growing it, faulting its pages in, and trimming it again when
// freed), and a result held for a slow client holds 64 KiB. Under 1 KiB with
// RapidJSON's 24-byte chunk header, a block comes from malloc's per-thread
// cache; a larger value gets a block of its own size, as before.
inline constexpr size_t kJsonPoolBlockBytes = 976;

template <typename T>
struct IsMemoryPool : std::false_type {};
template <typename Base>
struct IsMemoryPool<rapidjson::MemoryPoolAllocator<Base>> : std::true_type {};

// RAPIDJSON_NEW(T()): RapidJSON creates every allocator it owns through it
// (a document's pool, a pool's base allocator, a stack's).
template <typename T>
T* RapidJsonNew() {
  if constexpr (IsMemoryPool<T>::value) {
    return new T(kJsonPoolBlockBytes);
  } else {
    return new T();
  }
}

[[noreturn]] inline void RapidJsonAssertFailed(const char* file, int line) {
  throw std::runtime_error(std::string("assertion failed; file: ") + file +
                           "; line: " + std::to_string(line));
}

}  // namespace toolexec::internal

#define RAPIDJSON_NEW(x) ::toolexec::internal::RapidJsonNew<decltype(x)>()
#define RAPIDJSON_ASSERT(x) \
  ((x) ? static_cast<void>(0) : ::toolexec::internal::RapidJsonAssertFailed(__FILE__, __LINE__))

#endif  // TOOLEXEC_TOOLS_RUNTIME_RAPIDJSON_CONFIG_H_
