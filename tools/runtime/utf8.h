// UTF-8 for everything toolexec puts on the wire. Protobuf strings and JSON
// text must be valid UTF-8, while file contents, paths and command output are
// raw bytes; every place that turns bytes into wire text goes through here, so
// one rule holds everywhere.
//
// The rule for invalid bytes: each maximal subpart of an ill-formed sequence
// becomes one U+FFFD, as the Unicode Standard recommends (chapter 3, "U+FFFD
// Substitution of Maximal Subparts") and the WHATWG Encoding Standard's UTF-8
// decoder does (so a browser's TextDecoder, Python's
// bytes.decode(errors="replace") and ICU agree). A maximal subpart is the
// longest prefix of a well-formed sequence, or a single byte that starts none.
// Examples: "\xE2\x82" then "x" -> one U+FFFD then "x" (a truncated 3-byte
// sequence); "\xC0\xAF" -> two U+FFFD (C0 never starts a sequence, AF is a
// lone continuation byte); "\xED\xA0\x80" (a surrogate) -> three U+FFFD.
// Well-formed means no overlong forms, no surrogates, nothing past U+10FFFF.
//
// Thread safety: the functions are pure; a Utf8StreamSanitizer is one
// stream's state and not shared.
#ifndef TOOLEXEC_TOOLS_RUNTIME_UTF8_H_
#define TOOLEXEC_TOOLS_RUNTIME_UTF8_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"

namespace toolexec {

// U+FFFD REPLACEMENT CHARACTER, encoded.
inline constexpr absl::string_view kUtf8Replacement = "\xEF\xBF\xBD";

// True if `s` is well-formed UTF-8.
bool IsValidUtf8(absl::string_view s);

// Appends `s` to `out` with each maximal ill-formed subpart replaced by
// U+FFFD. Returns whether any replacement was made.
bool AppendSanitizedUtf8(std::string* out, absl::string_view s);

// The same, but stops before a character (or replacement) that would take
// `out` past `max_out_bytes`. Returns false if it stopped early.
bool AppendSanitizedUtf8Within(std::string* out, absl::string_view s, size_t max_out_bytes);

// `s` as valid UTF-8, by AppendSanitizedUtf8's rule.
std::string SanitizeUtf8(absl::string_view s);

// The length of the longest prefix of `s` no longer than `max` that does not
// cut a UTF-8 sequence in two.
size_t Utf8SafePrefix(absl::string_view s, size_t max);

// Code points in `s` (valid UTF-8 assumed: each byte that does not continue
// a sequence starts one).
size_t Utf8Chars(absl::string_view s);
// Bytes of the longest prefix of `s` with at most `chars` code points.
size_t Utf8PrefixBytes(absl::string_view s, size_t chars);
// Bytes of the longest suffix of `s` with at most `chars` code points.
size_t Utf8SuffixBytes(absl::string_view s, size_t chars);

// `s` when it has at most `max_chars` code points; else its first
// `max_chars` code points then "...[N more bytes]". How text a caller sent
// (a key, a tool name, a value) is echoed into messages and logs, bounded.
std::string Utf8Cut(absl::string_view s, size_t max_chars);

// The same rule over a stream that arrives in pieces (a pipe read by read
// sized chunks): a sequence split between two pieces is held back and
// completed by the next, so the output equals SanitizeUtf8 of the whole.
class Utf8StreamSanitizer final {
 public:
  // Appends the valid UTF-8 of (held bytes + `in`) to `*out` and holds back an
  // incomplete trailing sequence (at most 3 bytes).
  void Feed(absl::string_view in, std::string* out);
  // End of stream: a held incomplete sequence becomes U+FFFD.
  void Finish(std::string* out);
  // Invalid bytes replaced so far (a truncated sequence counts its bytes).
  uint64_t invalid_bytes() const { return invalid_bytes_; }

 private:
  unsigned char held_[4] = {};
  size_t held_len_ = 0;
  uint64_t invalid_bytes_ = 0;
};

}  // namespace toolexec

#endif  // TOOLEXEC_TOOLS_RUNTIME_UTF8_H_
