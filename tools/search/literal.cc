#include "tools/search/literal.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace toolexec::search {
namespace {

// Byte ranks measured over /usr/include, Python's and Perl's libraries
// (~180 MB of source): 0 = rarest, 255 = commonest (the space).
constexpr unsigned char kByteRank[256] = {
    0,   1,   2,   3,   4,   5,   6,   82,  7,   201, 245, 8,   153, 152, 9,   10,  11,  12,  13,
    14,  15,  16,  17,  18,  19,  20,  21,  22,  23,  24,  25,  26,  255, 165, 186, 205, 175, 162,
    177, 202, 230, 231, 232, 168, 234, 213, 217, 220, 222, 211, 203, 193, 188, 194, 187, 180, 184,
    190, 207, 210, 185, 196, 192, 160, 169, 228, 199, 225, 212, 239, 204, 206, 191, 227, 167, 189,
    229, 208, 226, 223, 221, 174, 224, 241, 236, 200, 195, 176, 197, 181, 164, 173, 178, 172, 159,
    252, 163, 246, 214, 244, 242, 254, 238, 219, 233, 250, 170, 215, 243, 235, 251, 247, 240, 171,
    248, 249, 253, 237, 216, 198, 209, 218, 179, 183, 166, 182, 161, 27,  157, 131, 118, 91,  101,
    106, 135, 138, 119, 132, 129, 130, 99,  87,  79,  84,  102, 92,  88,  117, 151, 96,  100, 93,
    141, 156, 103, 94,  148, 149, 104, 147, 136, 111, 127, 86,  144, 124, 142, 125, 112, 154, 143,
    134, 121, 122, 123, 81,  107, 113, 137, 97,  105, 89,  145, 85,  139, 126, 114, 109, 128, 108,
    110, 98,  28,  29,  155, 150, 74,  77,  30,  31,  70,  32,  33,  34,  35,  36,  116, 140, 95,
    90,  37,  38,  39,  40,  41,  83,  42,  43,  44,  45,  71,  46,  47,  48,  75,  133, 158, 115,
    80,  73,  49,  50,  78,  72,  76,  51,  52,  53,  54,  120, 146, 55,  56,  57,  58,  59,  60,
    61,  62,  63,  64,  65,  66,  67,  68,  69,
};

inline bool IsAsciiLetter(unsigned char c) { return (c | 0x20) >= 'a' && (c | 0x20) <= 'z'; }
inline unsigned char Lower(unsigned char c) { return (c >= 'A' && c <= 'Z') ? c + 32 : c; }
inline unsigned char Upper(unsigned char c) { return (c >= 'a' && c <= 'z') ? c - 32 : c; }

// U+212A KELVIN SIGN and U+017F LATIN SMALL LETTER LONG S: the only non-ASCII
// characters RE2's case folding equates with an ASCII letter ('k', 's').
constexpr char kKelvin[] = "\xE2\x84\xAA";
constexpr char kLongS[] = "\xC5\xBF";

// Length of the folded form of needle char `n` at text[pos...], or 0.
inline size_t FoldForward(absl::string_view text, size_t pos, unsigned char n) {
  if (pos >= text.size()) return 0;
  const unsigned char c = static_cast<unsigned char>(text[pos]);
  if (Lower(c) == n) return 1;
  if (n == 'k' && text.substr(pos, 3) == kKelvin) return 3;
  if (n == 's' && text.substr(pos, 2) == kLongS) return 2;
  return 0;
}

// Length of the folded form of needle char `n` ending just before text[end], or 0.
inline size_t FoldBackward(absl::string_view text, size_t end, unsigned char n) {
  if (end == 0) return 0;
  const unsigned char c = static_cast<unsigned char>(text[end - 1]);
  if (Lower(c) == n) return 1;
  if (n == 'k' && end >= 3 && text.substr(end - 3, 3) == kKelvin) return 3;
  if (n == 's' && end >= 2 && text.substr(end - 2, 2) == kLongS) return 2;
  return 0;
}

}  // namespace

int ByteFrequencyRank(unsigned char byte) { return kByteRank[byte]; }

const char* Memchr2(const char* data, size_t size, unsigned char a, unsigned char b) {
  if (a == b) return static_cast<const char*>(memchr(data, a, size));
  size_t i = 0;
#if defined(__SSE2__)
  const __m128i va = _mm_set1_epi8(static_cast<char>(a));
  const __m128i vb = _mm_set1_epi8(static_cast<char>(b));
  for (; i + 64 <= size; i += 64) {
    const __m128i x0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(data + i));
    const __m128i x1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(data + i + 16));
    const __m128i x2 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(data + i + 32));
    const __m128i x3 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(data + i + 48));
    const __m128i m0 = _mm_or_si128(_mm_cmpeq_epi8(x0, va), _mm_cmpeq_epi8(x0, vb));
    const __m128i m1 = _mm_or_si128(_mm_cmpeq_epi8(x1, va), _mm_cmpeq_epi8(x1, vb));
    const __m128i m2 = _mm_or_si128(_mm_cmpeq_epi8(x2, va), _mm_cmpeq_epi8(x2, vb));
    const __m128i m3 = _mm_or_si128(_mm_cmpeq_epi8(x3, va), _mm_cmpeq_epi8(x3, vb));
    const __m128i any = _mm_or_si128(_mm_or_si128(m0, m1), _mm_or_si128(m2, m3));
    if (_mm_movemask_epi8(any) == 0) continue;
    const uint64_t lo = static_cast<uint32_t>(_mm_movemask_epi8(m0)) |
                        (static_cast<uint64_t>(static_cast<uint32_t>(_mm_movemask_epi8(m1))) << 16);
    const uint64_t hi = static_cast<uint32_t>(_mm_movemask_epi8(m2)) |
                        (static_cast<uint64_t>(static_cast<uint32_t>(_mm_movemask_epi8(m3))) << 16);
    const uint64_t mask = lo | (hi << 32);
    return data + i + __builtin_ctzll(mask);
  }
  for (; i + 16 <= size; i += 16) {
    const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(data + i));
    const int mask = _mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(x, va), _mm_cmpeq_epi8(x, vb)));
    if (mask != 0) return data + i + __builtin_ctz(static_cast<unsigned>(mask));
  }
#endif
  for (; i < size; ++i) {
    const unsigned char c = static_cast<unsigned char>(data[i]);
    if (c == a || c == b) return data + i;
  }
  return nullptr;
}

bool LiteralFinder::CanFold(absl::string_view needle) {
  bool usable_byte = false;
  for (unsigned char c : needle) {
    if (c >= 0x80) return false;
    if (Lower(c) != 'k' && Lower(c) != 's') usable_byte = true;
  }
  return usable_byte;
}

LiteralFinder::LiteralFinder(absl::string_view needle, bool ascii_fold)
    : needle_(needle), fold_(ascii_fold) {
  int best = 1 << 30;
  for (size_t i = 0; i < needle_.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(needle_[i]);
    int score = kByteRank[c];
    if (fold_) {
      needle_[i] = static_cast<char>(Lower(c));
      if (Lower(c) == 'k' || Lower(c) == 's') continue;  // its fold has no such byte
      // Scanning for either case costs a bit more and hits both.
      if (IsAsciiLetter(c)) score = std::max(kByteRank[Lower(c)], kByteRank[Upper(c)]) + 8;
    }
    if (score < best) {
      best = score;
      rare_index_ = i;
    }
  }
}

bool LiteralFinder::MatchesAt(absl::string_view text, size_t pos) const {
  return pos + needle_.size() <= text.size() &&
         memcmp(text.data() + pos, needle_.data(), needle_.size()) == 0;
}

size_t LiteralFinder::Find(absl::string_view text, size_t from) const {
  const unsigned char rare = static_cast<unsigned char>(needle_[rare_index_]);
  if (!fold_) {
    // The rare byte of an occurrence starting at or after `from` lies at or
    // after from + rare_index_.
    size_t scan = from + rare_index_;
    while (scan < text.size()) {
      const char* hit =
          static_cast<const char*>(memchr(text.data() + scan, rare, text.size() - scan));
      if (hit == nullptr) return absl::string_view::npos;
      const size_t at = static_cast<size_t>(hit - text.data());
      if (MatchesAt(text, at - rare_index_)) return at - rare_index_;
      scan = at + 1;
    }
    return absl::string_view::npos;
  }
  // Folded: the occurrence's start is found by matching backwards from the
  // rare byte (a 'k' before it may be three bytes wide), its end forwards.
  size_t scan = from;
  while (scan < text.size()) {
    const char* hit = Memchr2(text.data() + scan, text.size() - scan, rare, Upper(rare));
    if (hit == nullptr) return absl::string_view::npos;
    const size_t at = static_cast<size_t>(hit - text.data());
    scan = at + 1;
    size_t start = at;
    bool ok = true;
    for (size_t i = rare_index_; i-- > 0;) {
      const size_t n = FoldBackward(text, start, static_cast<unsigned char>(needle_[i]));
      if (n == 0) {
        ok = false;
        break;
      }
      start -= n;
    }
    if (!ok || start < from) continue;
    size_t end = at + 1;
    for (size_t i = rare_index_ + 1; i < needle_.size(); ++i) {
      const size_t n = FoldForward(text, end, static_cast<unsigned char>(needle_[i]));
      if (n == 0) {
        ok = false;
        break;
      }
      end += n;
    }
    if (ok) return start;
  }
  return absl::string_view::npos;
}

}  // namespace toolexec::search
