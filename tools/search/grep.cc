#include "tools/search/grep.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <utility>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "tools/workspace/walker.h"
#include "tools/runtime/utf8.h"

namespace toolexec::search {

using fs::ConfinedPath;
using fs::PathLess;
using fs::PathLessCmp;
using fs::Walk;
using fs::WalkEntry;
using fs::WalkOptions;
using fs::WalkStats;
using fs::WalkThreads;
namespace {

constexpr size_t kBlockBytes = 1 << 20;
// Kept from one window of a long line to the next, so a match up to this long
// across the edge is still found.
constexpr size_t kOverlapBytes = 4 << 10;
// What a search starts with: a block and an overlap.
constexpr size_t kBaseBufferBytes = kBlockBytes + kOverlapBytes;
// The largest buffer: a line up to kMaxLineBytes is held whole.
constexpr size_t kMaxBufferBytes = kMaxLineBytes + kBlockBytes;
// The largest UTF-16 file transcoded (and so held in memory) for a search.
constexpr size_t kMaxUtf16Bytes = 16 << 20;

size_t CountNewlines(const char* p, size_t n) {
  size_t count = 0;
  size_t i = 0;
#if defined(__SSE2__)
  const __m128i nl = _mm_set1_epi8('\n');
  for (; i + 16 <= n; i += 16) {
    const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i));
    count += static_cast<size_t>(
        __builtin_popcount(static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(x, nl)))));
  }
#endif
  for (; i < n; ++i) count += p[i] == '\n';
  return count;
}

// The start of the `count` lines before the line at text[pos], or of as many
// as text holds (*found of them).
size_t LinesBefore(absl::string_view text, size_t pos, uint64_t count, uint64_t* found) {
  *found = 0;
  while (*found < count && pos > 0) {
    const void* nl = pos >= 2 ? memrchr(text.data(), '\n', pos - 1) : nullptr;
    pos = nl == nullptr ? 0 : static_cast<size_t>(static_cast<const char*>(nl) - text.data()) + 1;
    ++*found;
  }
  return pos;
}

// The process-wide account of buffer bytes (see grep.h).
class BufferBudget {
 public:
  enum class Wait { kAcquired, kCancelled, kNeverFits };

  // Blocks until `bytes` fit in the budget or the token trips.
  Wait Acquire(size_t bytes, const CancellationToken* cancellation) {
    absl::MutexLock lock(&mu_);
    while (held_ + bytes > limit_) {
      if (bytes > limit_) return Wait::kNeverFits;
      if (cancellation != nullptr && cancellation->cancelled()) return Wait::kCancelled;
      // Timed, to notice cancellation (a token cannot signal this condition).
      freed_.WaitWithTimeout(&mu_, absl::Milliseconds(50));
    }
    Take(bytes);
    return Wait::kAcquired;
  }

  bool TryAcquire(size_t bytes) {
    absl::MutexLock lock(&mu_);
    if (held_ + bytes > limit_) return false;
    Take(bytes);
    return true;
  }

  void Release(size_t bytes) {
    if (bytes == 0) return;
    absl::MutexLock lock(&mu_);
    held_ -= bytes;
    freed_.SignalAll();
  }

  GrepBufferUsage Usage() {
    absl::MutexLock lock(&mu_);
    return {held_, peak_, limit_};
  }
  void ResetPeak() {
    absl::MutexLock lock(&mu_);
    peak_ = held_;
  }
  void SetLimit(size_t bytes) {
    absl::MutexLock lock(&mu_);
    limit_ = std::max(bytes, kBaseBufferBytes);
    freed_.SignalAll();
  }

 private:
  void Take(size_t bytes) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    held_ += bytes;
    peak_ = std::max(peak_, held_);
  }

  absl::Mutex mu_;
  absl::CondVar freed_;
  size_t limit_ ABSL_GUARDED_BY(mu_) = kDefaultGrepBufferBudget;
  size_t held_ ABSL_GUARDED_BY(mu_) = 0;
  size_t peak_ ABSL_GUARDED_BY(mu_) = 0;
};

BufferBudget& Budget() {
  static BufferBudget* const budget = new BufferBudget;
  return *budget;
}

// Bytes of the budget, given back when it goes.
class Reservation {
 public:
  Reservation() = default;
  Reservation(const Reservation&) = delete;
  Reservation& operator=(const Reservation&) = delete;
  ~Reservation() { Budget().Release(bytes_); }

  BufferBudget::Wait Acquire(size_t bytes, const CancellationToken* cancellation) {
    const BufferBudget::Wait w = Budget().Acquire(bytes, cancellation);
    if (w == BufferBudget::Wait::kAcquired) bytes_ += bytes;
    return w;
  }
  bool TryAcquire(size_t bytes) {
    if (!Budget().TryAcquire(bytes)) return false;
    bytes_ += bytes;
    return true;
  }
  void Release(size_t bytes) {
    Budget().Release(bytes);
    bytes_ -= bytes;
  }

 private:
  size_t bytes_ = 0;
};

// A search's read buffer: charged to the budget, freed with the search.
class ReadBuffer {
 public:
  // Waits for the budget (false if cancelled first).
  bool Init(const CancellationToken* cancellation) {
    if (reservation_.Acquire(kBaseBufferBytes, cancellation) != BufferBudget::Wait::kAcquired) {
      return false;
    }
    data_.reset(new char[kBaseBufferBytes]);
    size_ = kBaseBufferBytes;
    return true;
  }

  // Doubles the buffer (up to kMaxBufferBytes), keeping its first `filled`
  // bytes; false at the largest size or when the budget has no room.
  bool Grow(size_t filled) {
    if (size_ >= kMaxBufferBytes) return false;
    const size_t size = std::min(size_ * 2, kMaxBufferBytes);
    if (!reservation_.TryAcquire(size)) return false;
    std::unique_ptr<char[]> bigger(new char[size]);
    memcpy(bigger.get(), data_.get(), filled);
    data_ = std::move(bigger);
    reservation_.Release(size_);
    size_ = size;
    return true;
  }

  char* data() const { return data_.get(); }
  size_t size() const { return size_; }

 private:
  Reservation reservation_;  // outlives data_ (declared first, destroyed last)
  std::unique_ptr<char[]> data_;
  size_t size_ = 0;
};

struct Worker {
  std::unique_ptr<LineMatcher> owned;
  const LineMatcher* matcher = nullptr;
};

// The results of all workers: bounded by the cap, sorted by path.
class Collector {
 public:
  Collector(OutputMode mode, size_t cap) : mode_(mode), cap_(cap) {}

  void Add(GrepFile file) {
    const uint64_t stored = StoredMatches(file);
    absl::MutexLock lock(&mu_);
    ++total_files_;
    total_matches_ += file.matches;
    if (mode_ == OutputMode::kContent) {
      if (held_ >= cap_ && !files_.empty() && PathLess(files_.rbegin()->first, file.path)) return;
      held_ += stored;
      std::string path = file.path;
      files_.emplace(std::move(path), std::make_pair(std::move(file), stored));
      // Drop the last files while the rest still hold `cap_` matches.
      while (files_.size() > 1) {
        auto last = std::prev(files_.end());
        if (held_ - last->second.second < cap_) break;
        held_ -= last->second.second;
        files_.erase(last);
      }
    } else {
      if (files_.size() >= cap_ && !files_.empty() && PathLess(files_.rbegin()->first, file.path))
        return;
      std::string path = file.path;
      files_.emplace(std::move(path), std::make_pair(std::move(file), stored));
      if (files_.size() > cap_) files_.erase(std::prev(files_.end()));
    }
  }

  void AddBinary() { binary_.fetch_add(1, std::memory_order_relaxed); }
  void AddUnreadable(uint64_t n = 1) { unreadable_.fetch_add(n, std::memory_order_relaxed); }
  void AddSearched() { searched_.fetch_add(1, std::memory_order_relaxed); }

  GrepResult Finish(int context_lines) {
    absl::MutexLock lock(&mu_);
    GrepResult r;
    r.total_files = total_files_;
    r.total_matches = total_matches_;
    r.files_searched = searched_.load();
    r.binary_skipped = binary_.load();
    r.unreadable = unreadable_.load();
    for (auto& [path, entry] : files_) {
      GrepFile& f = entry.first;
      if (mode_ != OutputMode::kContent) {
        if (r.files.size() >= cap_) break;
        r.files.push_back(std::move(f));
        continue;
      }
      if (r.returned_matches >= cap_) break;
      // Keep matches up to the cap, and context lines that belong to them.
      uint64_t last_kept = 0;
      size_t keep = 0;
      for (; keep < f.lines.size(); ++keep) {
        const GrepLine& line = f.lines[keep];
        if (!line.is_context) {
          if (r.returned_matches >= cap_) break;
          ++r.returned_matches;
          last_kept = line.number;
        } else if (r.returned_matches >= cap_ &&
                   line.number > last_kept + static_cast<uint64_t>(context_lines)) {
          break;
        }
      }
      while (keep > 0 && f.lines[keep - 1].is_context &&
             f.lines[keep - 1].number > last_kept + static_cast<uint64_t>(context_lines)) {
        --keep;
      }
      f.lines.resize(keep);
      r.files.push_back(std::move(f));
    }
    r.truncated = mode_ == OutputMode::kContent ? r.total_matches > r.returned_matches
                                                : r.total_files > r.files.size();
    return r;
  }

 private:
  static uint64_t StoredMatches(const GrepFile& f) {
    uint64_t n = 0;
    for (const GrepLine& l : f.lines) n += !l.is_context;
    return n;
  }

  const OutputMode mode_;
  const size_t cap_;
  absl::Mutex mu_;
  // path -> (file, stored matching lines)
  std::map<std::string, std::pair<GrepFile, uint64_t>, PathLessCmp> files_ ABSL_GUARDED_BY(mu_);
  uint64_t held_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t total_files_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t total_matches_ ABSL_GUARDED_BY(mu_) = 0;
  std::atomic<uint64_t> binary_{0};
  std::atomic<uint64_t> unreadable_{0};
  std::atomic<uint64_t> searched_{0};
};

// Searches one open regular file.
class FileSearch {
 public:
  FileSearch(const GrepRequest& request, Worker& worker, GrepFile& out)
      : req_(request), w_(worker), out_(out) {}

  // kUtf16: the file starts with a UTF-16 byte order mark (big_endian()
  // says which); nothing was searched.
  enum class Outcome { kDone, kBinary, kUnreadable, kCancelled, kUtf16 };
  bool big_endian() const { return big_endian_; }

  // Searches text held in memory (a transcoded file) as a whole file.
  Outcome RunText(absl::string_view text) {
    if (memchr(text.data(), '\0', text.size()) != nullptr) return Outcome::kBinary;
    Process(text, 0, true);
    return Outcome::kDone;
  }

  Outcome Run(int fd, uint64_t size_hint) {
    ReadBuffer buf;
    if (!buf.Init(req_.cancellation)) return Outcome::kCancelled;
    size_t filled = 0;
    size_t search_from = 0;
    uint64_t total_read = 0;
    bool eof = false;
    while (!eof) {
      // Every read asks for exactly kBlockBytes, whatever the buffer grew to,
      // so what is read before a decision depends only on the file.
      if (buf.size() - filled < kBlockBytes && (long_line_ || !buf.Grow(filled))) {
        // [search_from, filled) is the start of a line that does not fit
        // (every complete line before it was searched): search it as a
        // window and keep only its last kOverlapBytes.
        const absl::string_view text(buf.data(), filled);
        if (!long_line_) BeginLongLine(text, search_from);
        if (SearchWindow(text.substr(search_from))) return Outcome::kDone;
        if (req_.cancellation && req_.cancellation->cancelled()) return Outcome::kCancelled;
        const size_t keep = std::min(kOverlapBytes, filled - search_from);
        memmove(buf.data(), buf.data() + filled - keep, keep);
        filled = keep;
        search_from = 0;
      }
      // pread: the descriptor may be the caller's (a single-file search), whose offset stays put.
      const ssize_t n =
          pread(fd, buf.data() + filled, kBlockBytes, static_cast<off_t>(total_read));
      if (n < 0) {
        if (errno == EINTR) continue;
        return Outcome::kUnreadable;
      }
      if (n == 0) {
        eof = true;
      } else {
        if (total_read == 0 && n >= 2) {
          const auto b0 = static_cast<unsigned char>(buf.data()[0]);
          const auto b1 = static_cast<unsigned char>(buf.data()[1]);
          big_endian_ = b0 == 0xFE && b1 == 0xFF;
          if (big_endian_ || (b0 == 0xFF && b1 == 0xFE)) return Outcome::kUtf16;
        }
        if (memchr(buf.data() + filled, '\0', static_cast<size_t>(n)) != nullptr) {
          return Outcome::kBinary;
        }
        filled += static_cast<size_t>(n);
        total_read += static_cast<uint64_t>(n);
        // Saves the read that would return 0 for the common whole-file case.
        if (size_hint > 0 && total_read == size_hint) eof = true;
      }
      size_t region_end = filled;
      if (!eof) {
        const void* nl = memrchr(buf.data() + search_from, '\n', filled - search_from);
        if (nl == nullptr) continue;  // no complete line yet: read more
        region_end = static_cast<size_t>(static_cast<const char*>(nl) - buf.data()) + 1;
      }
      if (long_line_) {
        // The long line ends at the first '\n' (or at the end of the file);
        // the lines after it start the buffer afresh.
        const void* nl = memchr(buf.data() + search_from, '\n', region_end - search_from);
        const size_t end = nl == nullptr
                               ? region_end
                               : static_cast<size_t>(static_cast<const char*>(nl) - buf.data());
        if (EndLongLine(absl::string_view(buf.data() + search_from, end - search_from))) {
          return Outcome::kDone;
        }
        const size_t next = std::min(end + 1, region_end);
        memmove(buf.data(), buf.data() + next, filled - next);
        filled -= next;
        region_end -= next;
        search_from = 0;
      }
      if (Process(absl::string_view(buf.data(), region_end), search_from, eof)) {
        return Outcome::kDone;
      }
      if (eof) break;
      if (req_.cancellation && req_.cancellation->cancelled()) return Outcome::kCancelled;
      // Keep the lines before-context may need and the partial last line.
      size_t keep = region_end;
      if (req_.mode == OutputMode::kContent) {
        for (int k = 0; k < req_.context_lines && keep > 0; ++k) {
          const void* nl = memrchr(buf.data(), '\n', keep - 1);
          keep = nl == nullptr
                     ? 0
                     : static_cast<size_t>(static_cast<const char*>(nl) - buf.data()) + 1;
        }
      }
      memmove(buf.data(), buf.data() + keep, filled - keep);
      filled -= keep;
      search_from = region_end - keep;
    }
    return Outcome::kDone;
  }

 private:
  // A line longer than kMaxLineBytes starts at text[from] (line number
  // line_): keeps its head for display and the lines before-context needs,
  // which the buffer is about to drop.
  void BeginLongLine(absl::string_view text, size_t from) {
    long_line_ = true;
    long_line_matched_ = false;
    head_ = std::string(text.substr(from, std::min(text.size() - from, req_.max_line_bytes)));
    before_.clear();
    if (req_.mode != OutputMode::kContent || counting_only_ || stored_ >= req_.max_results) return;
    const uint64_t before =
        std::min(static_cast<uint64_t>(req_.context_lines), line_ - 1 - last_stored_);
    uint64_t back = 0;
    size_t start = LinesBefore(text, from, before, &back);
    for (uint64_t k = 0; k < back; ++k) {
      const void* nl = memchr(text.data() + start, '\n', from - start);
      const size_t end = static_cast<size_t>(static_cast<const char*>(nl) - text.data());
      GrepLine line;
      line.number = line_ - back + k;
      line.is_context = true;
      line.text = DisplayLine(text.substr(start, end - start), req_.max_line_bytes, &line.cut);
      before_.push_back(std::move(line));
      start = end + 1;
    }
  }

  // Searches a window of the long line (no '\n' in it) unless the line
  // matched already. True when the file needs no more reading.
  bool SearchWindow(absl::string_view window) {
    if (long_line_matched_ || !w_.matcher->AnyLine(window, 0)) return false;
    long_line_matched_ = true;
    if (req_.mode != OutputMode::kFilesWithMatches) return false;
    out_.matches = 1;
    return true;
  }

  // The long line ends with `window`: counts or stores it as Process does
  // any line. True when the file needs no more reading.
  bool EndLongLine(absl::string_view window) {
    if (SearchWindow(window)) return true;
    long_line_ = false;
    const uint64_t number = line_++;
    const bool storing = req_.mode == OutputMode::kContent && !counting_only_;
    if (!long_line_matched_) {
      if (storing && pending_after_ > 0) {
        StoreHead(number, true);
        --pending_after_;
      }
      return false;
    }
    ++out_.matches;
    if (!storing) return false;
    pending_after_ = 0;
    if (stored_ < req_.max_results) {
      for (GrepLine& line : before_) out_.lines.push_back(std::move(line));
      StoreHead(number, false);
      ++stored_;
      pending_after_ = static_cast<uint64_t>(req_.context_lines);
    }
    before_.clear();
    if (stored_ >= req_.max_results && pending_after_ == 0) counting_only_ = true;
    return false;
  }

  void StoreHead(uint64_t number, bool context) {
    GrepLine line;
    line.number = number;
    line.is_context = context;
    line.text = DisplayLine(head_, req_.max_line_bytes, &line.cut);
    line.cut = true;  // the line is longer than any buffer
    out_.lines.push_back(std::move(line));
    last_stored_ = number;
  }

  void Store(absl::string_view text, size_t start, size_t end, uint64_t number, bool context) {
    GrepLine line;
    line.number = number;
    line.is_context = context;
    line.text = DisplayLine(text.substr(start, end - start), req_.max_line_bytes, &line.cut);
    out_.lines.push_back(std::move(line));
    last_stored_ = number;
  }

  // Stores up to `count` lines from `pos` as context; returns the position after them.
  size_t StoreForward(absl::string_view text, size_t pos, uint64_t count, uint64_t first_number) {
    for (uint64_t k = 0; k < count && pos < text.size(); ++k) {
      const void* nl = memchr(text.data() + pos, '\n', text.size() - pos);
      const size_t end = nl == nullptr
                             ? text.size()
                             : static_cast<size_t>(static_cast<const char*>(nl) - text.data());
      Store(text, pos, end, first_number + k, true);
      pos = end + 1;
    }
    return pos;
  }

  // Searches the complete lines of text[from...]; text[0, from) holds earlier
  // lines (kept for before-context); `last` when no more text follows. True
  // when the file needs no more reading.
  bool Process(absl::string_view text, size_t from, bool last) {
    size_t ls = 0;
    size_t le = 0;
    switch (req_.mode) {
      case OutputMode::kFilesWithMatches:
        if (w_.matcher->AnyLine(text, from)) {
          out_.matches = 1;
          return true;
        }
        return false;
      case OutputMode::kCount:
        while (w_.matcher->FindLine(text, from, &ls, &le)) {
          ++out_.matches;
          from = le + 1;
        }
        return false;
      case OutputMode::kContent:
        break;
    }
    if (counting_only_) {
      while (w_.matcher->FindLine(text, from, &ls, &le)) {
        ++out_.matches;
        from = le + 1;
      }
      return false;
    }
    const uint64_t context = static_cast<uint64_t>(req_.context_lines);
    size_t pos = from;
    while (w_.matcher->FindLine(text, pos, &ls, &le)) {
      const uint64_t gap = CountNewlines(text.data() + pos, ls - pos);
      const uint64_t number = line_ + gap;
      ++out_.matches;
      // After-context of the previous match.
      StoreForward(text, pos, std::min(pending_after_, gap), line_);
      pending_after_ = 0;
      if (stored_ < req_.max_results) {
        // Before-context: lines not stored yet, found walking back from the
        // match (the buffer keeps `context` lines before each block).
        uint64_t back = 0;
        const size_t start =
            LinesBefore(text, ls, std::min(context, number - 1 - last_stored_), &back);
        StoreForward(text, start, back, number - back);
        Store(text, ls, le, number, false);
        ++stored_;
        pending_after_ = context;
      }
      pos = le + 1;
      line_ = number + 1;
      if (stored_ >= req_.max_results && pending_after_ == 0) {
        counting_only_ = true;
        return Process(text, pos, last);
      }
    }
    if (pos < text.size() && !(last && pending_after_ == 0)) {
      const uint64_t rest = CountNewlines(text.data() + pos, text.size() - pos);
      const uint64_t after = std::min(pending_after_, rest + (text.back() == '\n' ? 0 : 1));
      StoreForward(text, pos, after, line_);
      pending_after_ -= after;
      line_ += rest;
    }
    return false;
  }

  const GrepRequest& req_;
  Worker& w_;
  GrepFile& out_;
  uint64_t line_ = 1;           // number of the line at the search position
  uint64_t pending_after_ = 0;  // after-context lines still to store
  uint64_t last_stored_ = 0;
  uint64_t stored_ = 0;         // matching lines stored
  bool counting_only_ = false;  // the cap is reached and no context is pending
  bool big_endian_ = false;
  // A line longer than kMaxLineBytes, searched in windows (see grep.h).
  bool long_line_ = false;
  bool long_line_matched_ = false;
  std::string head_;              // its first max_line_bytes bytes
  std::vector<GrepLine> before_;  // its before-context, stored if it matches
};

// Appends code point `cp` as UTF-8.
void AppendCodePoint(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

// The most UTF-8 bytes `utf16_bytes` of UTF-16 become (3 per unit, or per
// odd last byte).
size_t Utf8Capacity(size_t utf16_bytes) { return (utf16_bytes + 1) / 2 * 3; }

// UTF-16 (after its byte order mark) as UTF-8; unpaired surrogates and an odd
// last byte become U+FFFD, as ripgrep's transcoder does.
std::string Utf16ToUtf8(absl::string_view bytes, bool big_endian) {
  std::string out;
  out.reserve(Utf8Capacity(bytes.size()));
  auto unit = [&](size_t i) {
    const auto b0 = static_cast<unsigned char>(bytes[i]);
    const auto b1 = static_cast<unsigned char>(bytes[i + 1]);
    return static_cast<uint32_t>(big_endian ? (b0 << 8) | b1 : (b1 << 8) | b0);
  };
  size_t i = 0;
  for (; i + 1 < bytes.size(); i += 2) {
    uint32_t cp = unit(i);
    if (cp >= 0xD800 && cp <= 0xDBFF && i + 3 < bytes.size()) {
      const uint32_t low = unit(i + 2);
      if (low >= 0xDC00 && low <= 0xDFFF) {
        cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
        i += 2;
      } else {
        cp = 0xFFFD;
      }
    } else if (cp >= 0xD800 && cp <= 0xDFFF) {
      cp = 0xFFFD;
    }
    AppendCodePoint(cp, &out);
  }
  if (i < bytes.size()) AppendCodePoint(0xFFFD, &out);
  return out;
}

// Reads the whole file after its first `skip` bytes, if it has at most
// `max` bytes; nullopt otherwise or on a read error.
std::optional<std::string> ReadAll(int fd, uint64_t size, size_t skip, size_t max) {
  if (size > max || size < skip) return std::nullopt;
  std::string data(static_cast<size_t>(size) - skip, '\0');
  size_t got = 0;
  while (got < data.size()) {
    const ssize_t n = pread(fd, data.data() + got, data.size() - got, static_cast<off_t>(skip + got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return std::nullopt;
    got += static_cast<size_t>(n);
  }
  return data;
}

void SearchOpenFile(int fd, std::string path, const GrepRequest& request, Worker& worker,
                    Collector& collector, std::atomic<bool>* cancelled) {
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return;
  collector.AddSearched();
  GrepFile file;
  FileSearch search(request, worker, file);
  FileSearch::Outcome outcome = search.Run(fd, static_cast<uint64_t>(st.st_size));
  Reservation utf16;  // the file and its transcoding, charged to the budget
  if (outcome == FileSearch::Outcome::kUtf16) {
    // Transcoded to UTF-8 and searched in memory, as ripgrep does; one too
    // big to hold is binary.
    outcome = FileSearch::Outcome::kBinary;
    const auto size = static_cast<uint64_t>(st.st_size);
    if (size >= 2 && size <= kMaxUtf16Bytes) {
      const size_t raw_bytes = static_cast<size_t>(size) - 2;
      switch (utf16.Acquire(raw_bytes + Utf8Capacity(raw_bytes), request.cancellation)) {
        case BufferBudget::Wait::kAcquired:
          if (std::optional<std::string> raw = ReadAll(fd, size, 2, kMaxUtf16Bytes)) {
            outcome = search.RunText(Utf16ToUtf8(*raw, search.big_endian()));
          }
          break;
        case BufferBudget::Wait::kCancelled:
          outcome = FileSearch::Outcome::kCancelled;
          break;
        case BufferBudget::Wait::kNeverFits:
          break;
      }
    }
  }
  switch (outcome) {
    case FileSearch::Outcome::kDone:
      if (file.matches > 0) {
        file.path = SanitizeUtf8(path);
        collector.Add(std::move(file));
      }
      break;
    case FileSearch::Outcome::kBinary:
    case FileSearch::Outcome::kUtf16:
      collector.AddBinary();
      break;
    case FileSearch::Outcome::kUnreadable:
      collector.AddUnreadable();
      break;
    case FileSearch::Outcome::kCancelled:
      cancelled->store(true);
      break;
  }
}

}  // namespace

std::string DisplayLine(absl::string_view line, size_t max_bytes, bool* cut) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  std::string out;
  out.reserve(std::min(line.size(), max_bytes));
  *cut = !AppendSanitizedUtf8Within(&out, line, max_bytes);
  return out;
}

absl::StatusOr<GrepResult> Grep(const ConfinedPath& start, const GrepRequest& request) {
  std::unique_ptr<LineMatcher> owned;
  const LineMatcher* matcher = request.compiled;
  if (matcher == nullptr) {
    absl::StatusOr<std::unique_ptr<LineMatcher>> created = LineMatcher::Create(request.matcher);
    if (!created.ok()) return created.status();
    owned = *std::move(created);
    matcher = owned.get();
  }
  if (request.max_results == 0) return absl::InvalidArgumentError("max_results must be at least 1");
  Collector collector(request.mode, request.max_results);
  std::atomic<bool> cancelled{false};
  uint64_t left_out = 0;

  if (!start.is_dir) {
    Worker worker;
    worker.matcher = matcher;
    SearchOpenFile(start.fd.get(), start.Display(start.relative), request, worker, collector,
                   &cancelled);
  } else {
    WalkOptions walk;
    walk.overrides = request.glob;
    walk.threads = request.threads;
    walk.cancellation = request.cancellation;
    walk.left_out = request.left_out;
    std::vector<Worker> workers(static_cast<size_t>(WalkThreads(walk)));
    walk.threads = static_cast<int>(workers.size());
    workers[0].matcher = matcher;
    absl::StatusOr<WalkStats> stats = Walk(start, walk, [&](const WalkEntry& e, int w) {
      Worker& worker = workers[static_cast<size_t>(w)];
      if (worker.matcher == nullptr) {
        worker.owned = matcher->Clone();
        worker.matcher = worker.owned.get();
      }
      // Closed even if the search throws (memory can run out; Walk rethrows).
      const UniqueFd fd(openat(e.dir_fd, std::string(e.name).c_str(),
                               O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
      if (!fd.valid()) {
        collector.AddUnreadable();
        return;
      }
      SearchOpenFile(fd.get(), start.Display(e.path), request, worker, collector, &cancelled);
    });
    if (!stats.ok()) return stats.status();
    collector.AddUnreadable(stats->unreadable);
    left_out = stats->left_out;
  }
  if (cancelled.load() || (request.cancellation && request.cancellation->cancelled())) {
    return absl::CancelledError("the search was cancelled");
  }
  GrepResult result = collector.Finish(request.context_lines);
  result.left_out = left_out;
  return result;
}

GrepBufferUsage GrepBuffers() { return Budget().Usage(); }

void ResetGrepBufferPeak() { Budget().ResetPeak(); }

void SetGrepBufferBudget(size_t bytes) { Budget().SetLimit(bytes); }

}  // namespace toolexec::search
