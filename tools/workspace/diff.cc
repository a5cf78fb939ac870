#include "tools/workspace/diff.h"

#include <algorithm>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "tools/runtime/utf8.h"

namespace toolexec::fs {

namespace {

// Lines with their "\n" (the last may lack it, which makes it differ from the
// same text with one: diff -u shows that as "\ No newline at end of file").
std::vector<absl::string_view> SplitLines(absl::string_view text) {
  std::vector<absl::string_view> lines;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    size_t end = nl == absl::string_view::npos ? text.size() : nl + 1;
    lines.push_back(text.substr(pos, end - pos));
    pos = end;
  }
  return lines;
}

enum class OpKind : char { kEqual = ' ', kDelete = '-', kInsert = '+' };
struct Op {
  OpKind kind;
  int a;  // old lines before this op (its index for kEqual/kDelete)
  int b;  // new lines before this op
};

// More differences than this and the middle is replaced wholesale: Myers'
// trace costs O(D^2) memory.
constexpr int kMaxEditDistance = 2000;

// Myers' O(ND) shortest edit script between a and b (line ids). Appends ops
// with indexes offset by (a0, b0). False if cancelled.
bool Myers(const std::vector<int>& a, const std::vector<int>& b, int a0, int b0,
           std::vector<Op>* ops, const CancellationToken* cancel) {
  const int n = static_cast<int>(a.size()), m = static_cast<int>(b.size());
  const int max = n + m;
  if (max == 0) return true;
  auto wholesale = [&] {
    for (int i = 0; i < n; ++i) ops->push_back({OpKind::kDelete, a0 + i, b0});
    for (int j = 0; j < m; ++j) ops->push_back({OpKind::kInsert, a0 + n, b0 + j});
    return true;
  };
  const int limit = std::min(max, kMaxEditDistance);
  std::vector<int> v(2 * static_cast<size_t>(limit) + 3, 0);
  const int off = limit + 1;
  std::vector<std::vector<int>> trace;  // trace[d][k + d] = V[k] after round d
  int found = -1;
  for (int d = 0; d <= limit && found < 0; ++d) {
    if (cancel != nullptr && (d & 63) == 0 && cancel->cancelled()) return false;
    for (int k = -d; k <= d; k += 2) {
      int x = (k == -d || (k != d && v[k - 1 + off] < v[k + 1 + off])) ? v[k + 1 + off]
                                                                       : v[k - 1 + off] + 1;
      int y = x - k;
      while (x < n && y < m && a[x] == b[y]) ++x, ++y;
      v[k + off] = x;
      if (x >= n && y >= m) found = d;
    }
    trace.emplace_back(v.begin() + (off - d), v.begin() + (off + d + 1));
  }
  if (found < 0) return wholesale();

  std::vector<Op> rev;
  int x = n, y = m;
  for (int d = found; d > 0; --d) {
    const std::vector<int>& vp = trace[d - 1];
    auto at = [&](int k) { return vp[k + d - 1]; };
    int k = x - y;
    int pk = (k == -d || (k != d && at(k - 1) < at(k + 1))) ? k + 1 : k - 1;
    int px = at(pk), py = px - pk;
    while (x > px && y > py) {
      --x, --y;
      rev.push_back({OpKind::kEqual, a0 + x, b0 + y});
    }
    if (x == px) {
      --y;
      rev.push_back({OpKind::kInsert, a0 + x, b0 + y});
    } else {
      --x;
      rev.push_back({OpKind::kDelete, a0 + x, b0 + y});
    }
  }
  while (x > 0 && y > 0) {
    --x, --y;
    rev.push_back({OpKind::kEqual, a0 + x, b0 + y});
  }
  ops->insert(ops->end(), rev.rbegin(), rev.rend());
  return true;
}

std::string Range(int before, int count) {
  // diff -u: "start,count", ",1" omitted; an empty range names the line before.
  if (count == 0) return absl::StrCat(before, ",0");
  if (count == 1) return absl::StrCat(before + 1);
  return absl::StrCat(before + 1, ",", count);
}

// A diff text that stops growing at a byte budget.
class BoundedText {
 public:
  explicit BoundedText(size_t max) : max_(max) {}
  void Append(absl::string_view s) {
    size_t room = max_ - std::min(max_, text_.size());
    if (s.size() > room) {
      s = s.substr(0, room);
      cut_ = true;
    }
    text_.append(s.data(), s.size());
  }
  void AppendLine(char mark, absl::string_view line) {
    Append(absl::string_view(&mark, 1));
    Append(line);
    if (line.empty() || line.back() != '\n') Append("\n\\ No newline at end of file\n");
  }
  bool cut() const { return cut_; }
  const std::string& text() const { return text_; }

 private:
  size_t max_;
  std::string text_;
  bool cut_ = false;
};

}  // namespace

std::string UnifiedDiff(absl::string_view old_text, absl::string_view new_text,
                        absl::string_view label, int context, DiffStats* stats,
                        const CancellationToken* cancel, size_t max_bytes, bool* truncated) {
  DiffStats local;
  if (stats == nullptr) stats = &local;
  *stats = DiffStats();
  bool local_truncated;
  if (truncated == nullptr) truncated = &local_truncated;
  *truncated = false;
  if (old_text == new_text) return "";
  std::vector<absl::string_view> a = SplitLines(old_text), b = SplitLines(new_text);
  const int n = static_cast<int>(a.size()), m = static_cast<int>(b.size());

  std::vector<Op> ops;
  int pre = 0;
  while (pre < n && pre < m && a[pre] == b[pre]) ++pre;
  int suf = 0;
  while (suf < n - pre && suf < m - pre && a[n - 1 - suf] == b[m - 1 - suf]) ++suf;
  for (int i = 0; i < pre; ++i) ops.push_back({OpKind::kEqual, i, i});
  {
    // Lines as small integers, so the inner loop compares ints.
    absl::flat_hash_map<absl::string_view, int> ids;
    auto id_of = [&](absl::string_view line) {
      return ids.try_emplace(line, static_cast<int>(ids.size())).first->second;
    };
    std::vector<int> ma, mb;
    for (int i = pre; i < n - suf; ++i) ma.push_back(id_of(a[i]));
    for (int j = pre; j < m - suf; ++j) mb.push_back(id_of(b[j]));
    if (!Myers(ma, mb, pre, pre, &ops, cancel)) return "";
  }
  for (int i = 0; i < suf; ++i) ops.push_back({OpKind::kEqual, n - suf + i, m - suf + i});

  BoundedText raw(max_bytes);
  raw.Append(absl::StrCat("--- a/", label, "\n+++ b/", label, "\n"));
  const int count = static_cast<int>(ops.size());
  int i = 0;
  while (i < count) {
    while (i < count && ops[i].kind == OpKind::kEqual) ++i;
    if (i >= count) break;
    int start = std::max(0, i - context);
    // Extend over changes separated by at most 2*context equal lines.
    int end = i;
    while (true) {
      while (end < count && ops[end].kind != OpKind::kEqual) ++end;
      int next = end;
      while (next < count && ops[next].kind == OpKind::kEqual) ++next;
      if (next < count && next - end <= 2 * context) {
        end = next;
        continue;
      }
      end = std::min(count, end + context);
      break;
    }
    int old_count = 0, new_count = 0;
    for (int k = start; k < end; ++k) {
      if (ops[k].kind != OpKind::kInsert) ++old_count;
      if (ops[k].kind != OpKind::kDelete) ++new_count;
    }
    raw.Append(absl::StrCat("@@ -", Range(ops[start].a, old_count), " +",
                            Range(ops[start].b, new_count), " @@\n"));
    for (int k = start; k < end; ++k) {
      const Op& op = ops[k];
      switch (op.kind) {
        case OpKind::kEqual:
          raw.AppendLine(' ', a[op.a]);
          break;
        case OpKind::kDelete:
          raw.AppendLine('-', a[op.a]);
          ++stats->removed;
          break;
        case OpKind::kInsert:
          raw.AppendLine('+', b[op.b]);
          ++stats->added;
          break;
      }
    }
    i = end;
  }
  // Sanitizing may lengthen the text (an invalid byte becomes U+FFFD): cut
  // again after it.
  std::string out;
  out.reserve(raw.text().size());
  AppendSanitizedUtf8(&out, raw.text());
  *truncated = raw.cut();
  if (out.size() > max_bytes) {
    out.resize(Utf8SafePrefix(out, max_bytes));
    *truncated = true;
  }
  return out;
}

}  // namespace toolexec::fs
