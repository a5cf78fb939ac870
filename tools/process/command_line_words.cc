// Words: quoting, escapes and the expansions inside them (parameters,
// command and process substitutions, arithmetic), as bash reads them. See
// command_line.h.
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "tools/process/command_line_internal.h"

namespace toolexec::command::internal {

// Reads one word at the position into `w` (empty when the position holds
// an operator).
bool Parser::ReadWord(LexedWord* w, Mode mode) {
  const size_t start = pos_;
  std::string& v = w->text;
  bool name_so_far = true;  // everything so far is an unquoted name
  bool glob = false, bracket = false, brace_word = false;
  int brace_depth = 0, paren_depth = 0;
  if (mode == Mode::kNormal && (Peek() == '<' || Peek() == '>') && Peek(1) == '(') {
    pos_ += 2;  // process substitution
    if (!Expect(kStopParen, ")")) return false;
    w->dynamic = true;
    w->text = std::string(s_.substr(start, pos_ - start));
    return true;
  }
  while (!AtEnd()) {
    const char c = Peek();
    if (mode == Mode::kRegex) {
      if (c == '(' || c == '|' || c == ')') {
        if (c == '(') ++paren_depth;
        if (c == ')') {
          if (paren_depth == 0) break;
          --paren_depth;
        }
        v.push_back(c);
        ++pos_;
        glob = true;
        continue;
      }
      if ((c == ' ' || c == '\t' || c == '\n') && paren_depth > 0) {
        v.push_back(c);
        ++pos_;
        continue;
      }
    }
    if (IsMeta(c)) {
      if (c == '(' && w->assignment && pos_ > start && s_[pos_ - 1] == '=') {
        if (!ReadArrayValue()) return false;
        w->dynamic = true;
        continue;
      }
      break;
    }
    if (c == '\\' && Peek(1) == '\n') {
      pos_ += 2;
      continue;
    }
    if (name_so_far && !w->assignment && !(IsNameStart(c) || (!v.empty() && IsNameChar(c)))) {
      name_so_far = false;
      if (!v.empty() && c == '=') {
        w->assignment = true;
        w->assign_name = v;
      } else if (!v.empty() && c == '+' && Peek(1) == '=') {
        w->assignment = true;
        w->assign_name = v;
        v.push_back('+');
        ++pos_;
        continue;
      } else if (!v.empty() && c == '[') {
        // NAME[subscript]= or +=, else a glob bracket.
        size_t close = s_.find(']', pos_);
        if (close != absl::string_view::npos &&
            (absl::StartsWith(s_.substr(close + 1), "=") ||
             absl::StartsWith(s_.substr(close + 1), "+="))) {
          w->assignment = true;
          w->assign_name = v;
          w->subscript = std::string(s_.substr(pos_ + 1, close - pos_ - 1));
          absl::StrAppend(&v, s_.substr(pos_, close + 1 - pos_));
          pos_ = close + 1;
          if (Peek() == '+') {
            v.push_back('+');
            ++pos_;
          }
          continue;
        }
      }
    }
    switch (c) {
      case '\\':
        if (pos_ + 1 >= s_.size()) {
          v.push_back('\\');
          ++pos_;
        } else {
          v.push_back(Peek(1));
          pos_ += 2;
          w->quoted = true;
        }
        break;
      case '\'': {
        size_t close = s_.find('\'', pos_ + 1);
        if (close == absl::string_view::npos) return Fail("unclosed single quote");
        absl::StrAppend(&v, s_.substr(pos_ + 1, close - pos_ - 1));
        pos_ = close + 1;
        w->quoted = true;
        break;
      }
      case '"':
        if (!ReadDoubleQuoted(w)) return false;
        break;
      case '$':
      case '`':
        if (mode == Mode::kDelimiter) {  // a here-document delimiter is not expanded
          v.push_back(c);
          ++pos_;
        } else if (!(c == '$' ? ReadDollar(w, /*in_quotes=*/false)
                              : ReadBackquote(w, /*in_quotes=*/false))) {
          return false;
        }
        break;
      default:
        if (c == '*' || c == '?') glob = true;
        if (c == '[') bracket = true;
        if (c == ']' && bracket) glob = true;
        if (c == '{') ++brace_depth;
        if (c == '}' && brace_depth > 0) --brace_depth;
        if (brace_depth > 0 && (c == ',' || (c == '.' && Peek(1) == '.'))) brace_word = true;
        if (c == '~' && (pos_ == start || (w->assignment && (s_[pos_ - 1] == '=' ||
                                                              s_[pos_ - 1] == ':')))) {
          glob = true;  // tilde expansion: not fixed text either
        }
        v.push_back(c);
        ++pos_;
    }
  }
  if ((glob || brace_word) && mode != Mode::kDelimiter) {
    w->dynamic = true;
    w->splits = true;
  }
  if (w->dynamic) w->text = std::string(s_.substr(start, pos_ - start));
  return true;
}

bool Parser::ReadArrayValue() {
  ++pos_;  // (
  while (true) {
    if (!SkipLines()) return false;
    if (AtEnd()) return Fail("unclosed array value");
    if (Peek() == ')') {
      ++pos_;
      return true;
    }
    if (IsMeta(Peek())) return Fail("unexpected operator in an array value");
    LexedWord element;
    if (!ReadWord(&element, Mode::kNormal)) return false;
    if (element.assignment && !element.subscript.empty() && !IsLiteralArithmetic(element.subscript)) {
      a_.Opaque("an array subscript is evaluated as arithmetic");
    }
  }
}

bool Parser::ReadDoubleQuoted(LexedWord* w) {
  ++pos_;
  w->quoted = true;
  while (true) {
    if (AtEnd()) return Fail("unclosed double quote");
    if (Peek() == '"') {
      ++pos_;
      return true;
    }
    if (!QuotedChar(w, /*in_heredoc=*/false)) return false;
  }
}

// One character (or escape, or expansion) inside double quotes or an
// unquoted here-document.
bool Parser::QuotedChar(LexedWord* w, bool in_heredoc) {
  const char c = Peek();
  if (c == '\\') {
    const char n = Peek(1);
    if (n == '\n') {
      pos_ += 2;
    } else if (n == '$' || n == '`' || n == '\\' || (n == '"' && !in_heredoc)) {
      w->text.push_back(n);
      pos_ += 2;
    } else {
      w->text.push_back(c);
      ++pos_;
    }
    return true;
  }
  if (c == '$') return ReadDollar(w, /*in_quotes=*/true);
  if (c == '`') return ReadBackquote(w, /*in_quotes=*/true);
  w->text.push_back(c);
  ++pos_;
  return true;
}

bool Parser::ReadDollar(LexedWord* w, bool in_quotes) {
  const char n = Peek(1);
  auto expanded = [&] {
    w->dynamic = true;
    if (!in_quotes) w->splits = true;
  };
  if (n == '\'' && !in_quotes) return ReadAnsiC(w);
  if (n == '"' && !in_quotes) {
    ++pos_;
    w->dynamic = true;  // $"…": translated by the locale's catalog
    return ReadDoubleQuoted(w);
  }
  if (n == '(' && Peek(2) == '(') {
    size_t end = ArithmeticEnd(pos_ + 3);
    if (end != absl::string_view::npos) {
      Arithmetic(s_.substr(pos_ + 3, end - pos_ - 3), "$(( ))");
      pos_ = end + 2;
      expanded();
      return true;
    }
  }
  if (n == '(') {
    pos_ += 2;
    if (!Expect(kStopParen, ")")) return false;
    expanded();
    return true;
  }
  if (n == '[') {
    size_t close = s_.find(']', pos_ + 2);
    if (close == absl::string_view::npos) return Fail("unclosed $[");
    Arithmetic(s_.substr(pos_ + 2, close - pos_ - 2), "$[ ]");
    pos_ = close + 1;
    expanded();
    return true;
  }
  if (n == '{') {
    if (!ReadParameter(in_quotes)) return false;
    expanded();
    return true;
  }
  if (IsNameStart(n)) {
    pos_ += 2;
    while (IsNameChar(Peek())) ++pos_;
    expanded();
    return true;
  }
  if (absl::ascii_isdigit(n) || (n != '\0' && absl::string_view("@*#?-$!").find(n) !=
                                                  absl::string_view::npos)) {
    pos_ += 2;
    expanded();
    return true;
  }
  w->text.push_back('$');
  ++pos_;
  return true;
}

bool Parser::ReadAnsiC(LexedWord* w) {
  pos_ += 2;
  w->quoted = true;
  while (true) {
    if (AtEnd()) return Fail("unclosed $'");
    char c = Peek();
    if (c == '\'') {
      ++pos_;
      return true;
    }
    if (c != '\\') {
      w->text.push_back(c);
      ++pos_;
      continue;
    }
    if (pos_ + 1 >= s_.size()) return Fail("unclosed $'");
    char e = Peek(1);
    pos_ += 2;
    auto digits = [&](int max, int base) {
      int value = 0, n = 0;
      while (n < max && !AtEnd()) {
        char d = Peek();
        int dv = absl::ascii_isdigit(d) ? d - '0'
                 : (base == 16 && absl::ascii_isxdigit(d)) ? absl::ascii_tolower(d) - 'a' + 10
                                                            : -1;
        if (dv < 0 || dv >= base) break;
        value = value * base + dv;
        ++n;
        ++pos_;
      }
      return n == 0 ? -1 : value;
    };
    int byte = -2;
    switch (e) {
      case 'a': byte = 7; break;
      case 'b': byte = 8; break;
      case 'e': case 'E': byte = 27; break;
      case 'f': byte = 12; break;
      case 'n': byte = 10; break;
      case 'r': byte = 13; break;
      case 't': byte = 9; break;
      case 'v': byte = 11; break;
      case '\\': case '\'': case '"': case '?': byte = e; break;
      case 'x': byte = digits(2, 16); break;
      default:
        if (e >= '0' && e <= '7') {
          --pos_;
          byte = digits(3, 8) & 0xff;
        }
    }
    if (byte == -2 || byte <= 0) {
      // \u, \U, \c, a NUL, or an escape bash keeps as written: not
      // worth decoding here.
      w->dynamic = true;
      if (byte == -2) w->text.push_back('\\');
      if (byte == -2 && e != '\0') w->text.push_back(e);
      continue;
    }
    w->text.push_back(static_cast<char>(byte));
  }
}

// ${...}: its end found by reading through the expansions inside it.
bool Parser::ReadParameter(bool in_quotes) {
  pos_ += 2;
  const size_t start = pos_;
  LexedWord scratch;
  while (true) {
    if (AtEnd()) return Fail("unclosed ${");
    const char c = Peek();
    if (c == '}') break;
    if (c == '\\') {
      pos_ += 2;
    } else if (c == '\'' && !in_quotes) {
      size_t close = s_.find('\'', pos_ + 1);
      if (close == absl::string_view::npos) return Fail("unclosed single quote");
      pos_ = close + 1;
    } else if (c == '"') {
      if (!ReadDoubleQuoted(&scratch)) return false;
    } else if (c == '$') {
      if (!ReadDollar(&scratch, in_quotes)) return false;
    } else if (c == '`') {
      if (!ReadBackquote(&scratch, in_quotes)) return false;
    } else {
      ++pos_;
    }
  }
  CheckParameter(s_.substr(start, pos_ - start));
  ++pos_;
  return true;
}

void Parser::CheckParameter(absl::string_view p) {
  if (p.size() > 1 && p.front() == '!') {
    a_.Opaque("it expands a variable named by another (${!…})");
    return;
  }
  if (p.size() > 1 && p.front() == '#') p.remove_prefix(1);
  size_t i = 0;
  if (i < p.size() && IsNameStart(p[i])) {
    while (i < p.size() && IsNameChar(p[i])) ++i;
  } else if (i < p.size() && absl::ascii_isdigit(p[i])) {
    while (i < p.size() && absl::ascii_isdigit(p[i])) ++i;
  } else if (i < p.size()) {
    ++i;
  }
  absl::string_view name = p.substr(0, i), rest = p.substr(i);
  if (!rest.empty() && rest.front() == '[') {
    size_t close = rest.find(']');
    absl::string_view sub = rest.substr(1, close == absl::string_view::npos ? rest.size() - 1
                                                                           : close - 1);
    if (sub != "@" && sub != "*" && !IsLiteralArithmetic(sub)) {
      a_.Opaque("an array subscript is evaluated as arithmetic");
    }
    rest = close == absl::string_view::npos ? "" : rest.substr(close + 1);
  }
  if (rest.size() >= 2 && rest[0] == ':' && absl::string_view("-=?+").find(rest[1]) ==
                                                 absl::string_view::npos) {
    if (!IsLiteralArithmetic(rest.substr(1))) {
      a_.Opaque("a substring offset is evaluated as arithmetic");
    }
  }
  if (absl::StartsWith(rest, "@P")) a_.Opaque("${…@P} expands a value as a prompt");
  if (absl::StartsWith(rest, "=") || absl::StartsWith(rest, ":=")) a_.AssignName(name);
}

bool Parser::ReadBackquote(LexedWord* w, bool in_quotes) {
  ++pos_;
  std::string inner;
  while (true) {
    if (AtEnd()) return Fail("unclosed backquote");
    char c = Peek();
    if (c == '`') {
      ++pos_;
      break;
    }
    if (c == '\\') {
      char n = Peek(1);
      if (n == '$' || n == '`' || n == '\\' || (in_quotes && n == '"')) {
        inner.push_back(n);
        pos_ += 2;
        continue;
      }
    }
    inner.push_back(c);
    ++pos_;
  }
  a_.AnalyzeText(inner);
  w->dynamic = true;
  if (!in_quotes) w->splits = true;
  return true;
}

}  // namespace toolexec::command::internal
