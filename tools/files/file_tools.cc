// Helpers shared by view_file, create_file and edit_file.
#include <algorithm>

#include "tools/files/file_tools.h"
#include "tools/runtime/utf8.h"

namespace toolexec::builtin {

void AppendLineNumber(std::string* out, int64_t number) {
  char digits[24];
  int n = 0;
  do {
    digits[n++] = static_cast<char>('0' + number % 10);
    number /= 10;
  } while (number > 0);
  for (int pad = n; pad < 6; ++pad) out->push_back(' ');
  while (n > 0) out->push_back(digits[--n]);
  out->push_back('\t');
}

int LineNumberAt(absl::string_view text, size_t offset) {
  offset = std::min(offset, text.size());
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + offset, '\n'));
}

bool AppendCut(std::string* out, absl::string_view text, size_t max) {
  if (text.size() <= max) {
    out->append(text.data(), text.size());
    return false;
  }
  out->append(text.data(), Utf8SafePrefix(text, max));
  return true;
}

}  // namespace toolexec::builtin
