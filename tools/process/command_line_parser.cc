// bash's grammar, as far as it decides which words are commands: lists,
// pipelines, compound commands, redirections and here-documents, and the
// quoting and expansions inside words. What it does not know, it refuses
// (the line is then opaque). See command_line.h.
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "tools/process/command_line.h"
#include "tools/process/command_line_internal.h"

namespace toolexec::command::internal {

// The whole text as a command line.
bool Parser::ParseAll() {
  std::string found;
  return ParseList(kStopEnd, &found) && FinishHeredocs();
}

// The whole text as the inside of double quotes (an unquoted
// here-document's body): only its expansions matter.
bool Parser::ScanQuoted() {
  LexedWord scratch;
  while (!AtEnd()) {
    if (!QuotedChar(&scratch, /*in_heredoc=*/true)) return false;
  }
  return true;
}

void Parser::SkipBlanks() {
  while (!AtEnd()) {
    char c = Peek();
    if (c == ' ' || c == '\t') {
      ++pos_;
    } else if (c == '\\' && Peek(1) == '\n') {
      pos_ += 2;
    } else if (c == '#') {
      a_.NoteStructure();
      while (!AtEnd() && Peek() != '\n') ++pos_;
    } else {
      break;
    }
  }
}

// Past a newline token: the bodies of the here-documents it ends.
bool Parser::ConsumeNewline() {
  ++pos_;
  return ReadPendingHeredocs();
}

bool Parser::ReadPendingHeredocs() {
  std::vector<Heredoc> pending = std::move(pending_);
  pending_.clear();
  for (const Heredoc& h : pending) {
    if (!ReadHeredoc(h)) return false;
  }
  return true;
}

bool Parser::FinishHeredocs() {
  // bash takes the rest of the text as the body of a here-document whose
  // delimiter never comes.
  return ReadPendingHeredocs();
}

bool Parser::ReadHeredoc(const Heredoc& h) {
  std::string body;
  while (!AtEnd()) {
    size_t end = s_.find('\n', pos_);
    if (end == absl::string_view::npos) end = s_.size();
    absl::string_view line = s_.substr(pos_, end - pos_);
    pos_ = end < s_.size() ? end + 1 : end;
    absl::string_view check = line;
    if (h.strip_tabs) {
      while (!check.empty() && check.front() == '\t') check.remove_prefix(1);
    }
    if (check == h.delimiter) break;
    // bash joins a line ending in '\' to the next one before it looks for
    // the delimiter; rather than follow that, refuse it.
    if (!h.quoted && absl::EndsWith(line, "\\")) {
      a_.Opaque("a line of an unquoted here-document ends in a backslash");
      return Fail("here-document");
    }
    absl::StrAppend(&body, line, "\n");
  }
  if (h.quoted) return true;
  Parser sub(a_, body);
  if (!sub.ScanQuoted()) return Fail(sub.error());
  return true;
}

// A reserved word at the position (unquoted, delimited), or "".
absl::string_view Parser::PeekReserved() const {
  size_t end = pos_;
  while (end < s_.size() && !IsMeta(s_[end])) ++end;
  absl::string_view w = s_.substr(pos_, end - pos_);
  return IsReservedWord(w) ? w : absl::string_view();
}

bool Parser::ParseList(unsigned stops, std::string* found) {
  while (true) {
    SkipBlanks();
    if (AtEnd()) {
      if (stops & kStopEnd) {
        found->clear();
        return true;
      }
      return Fail("the line ends inside a command");
    }
    const char c = Peek();
    if (c == '\n' || c == ';' || c == '&' || c == '|' || c == ')' || c == '(' ||
        !PeekReserved().empty()) {
      a_.NoteStructure();
    }
    if (c == '\n') {
      if (!ConsumeNewline()) return false;
      continue;
    }
    if (c == ';') {
      for (absl::string_view t : {";;&", ";;", ";&"}) {
        if (!LookingAt(t)) continue;
        if (!(stops & kStopCaseItem)) return Fail(absl::StrCat("unexpected '", t, "'"));
        pos_ += t.size();
        *found = std::string(t);
        return true;
      }
      ++pos_;
      continue;
    }
    if (c == '&' && Peek(1) != '>') {
      pos_ += LookingAt("&&") ? 2 : 1;
      continue;
    }
    if (c == '|') {
      pos_ += (LookingAt("||") || LookingAt("|&")) ? 2 : 1;
      continue;
    }
    if (c == ')') {
      if (!(stops & kStopParen)) return Fail("unexpected ')'");
      ++pos_;
      *found = ")";
      return true;
    }
    bool stopped = false;
    if (!ParseCommand(stops, found, &stopped)) return false;
    if (stopped) return true;
  }
}

bool Parser::Expect(unsigned stop, absl::string_view want) {
  std::string found;
  if (!ParseList(stop, &found)) return false;
  if (found != want) return Fail(absl::StrCat("expected '", want, "'"));
  return true;
}

bool Parser::ParseCommand(unsigned stops, std::string* found, bool* stopped) {
  if (Peek() == '(') {
    if (Peek(1) == '(') {
      size_t end = ArithmeticEnd(pos_ + 2);
      if (end != absl::string_view::npos) {
        Arithmetic(s_.substr(pos_ + 2, end - pos_ - 2), "(( ))");
        pos_ = end + 2;
        return Redirections();
      }
    }
    ++pos_;
    return Expect(kStopParen, ")") && Redirections();
  }
  const absl::string_view r = PeekReserved();
  struct Closer {
    absl::string_view word;
    unsigned stop;
  };
  static constexpr Closer kClosers[] = {{"}", kStopBrace},   {"then", kStopThen},
                                        {"elif", kStopElse}, {"else", kStopElse},
                                        {"fi", kStopElse},   {"do", kStopDo},
                                        {"done", kStopDone}, {"esac", kStopEsac}};
  for (const Closer& cl : kClosers) {
    if (r != cl.word) continue;
    if (!(stops & cl.stop)) return Fail(absl::StrCat("unexpected '", r, "'"));
    ConsumeReserved(r);
    *found = std::string(r);
    *stopped = true;
    return true;
  }
  if (r == "{") {
    ConsumeReserved(r);
    return Expect(kStopBrace, "}") && Redirections();
  }
  if (r == "if") {
    ConsumeReserved(r);
    while (true) {
      if (!Expect(kStopThen, "then")) return false;
      std::string next;
      if (!ParseList(kStopElse, &next)) return false;
      if (next == "fi") break;
      if (next == "else") {
        if (!Expect(kStopElse, "fi")) return false;
        break;
      }
    }
    return Redirections();
  }
  if (r == "while" || r == "until") {
    ConsumeReserved(r);
    return Expect(kStopDo, "do") && Expect(kStopDone, "done") && Redirections();
  }
  if (r == "for" || r == "select") return ParseFor(r);
  if (r == "case") return ParseCase();
  if (r == "[[") return ParseConditional();
  if (r == "!") {
    ConsumeReserved(r);
    return true;
  }
  if (r == "time") {
    ConsumeReserved(r);
    SkipBlanks();
    if (LookingAt("-p") && (pos_ + 2 == s_.size() || IsMeta(s_[pos_ + 2]))) pos_ += 2;
    return true;
  }
  if (r == "function") {
    a_.Opaque("it defines a function");
    return Fail("function");
  }
  if (r == "coproc") {
    a_.Opaque("it starts a coprocess");
    return Fail("coproc");
  }
  return ParseSimpleCommand();
}

// Where the "))" closing arithmetic that starts at `from` is, or npos.
size_t Parser::ArithmeticEnd(size_t from) const {
  int depth = 0;
  for (size_t i = from; i < s_.size(); ++i) {
    if (s_[i] == '(') {
      ++depth;
    } else if (s_[i] == ')') {
      if (depth == 0) return i + 1 < s_.size() && s_[i + 1] == ')' ? i : absl::string_view::npos;
      --depth;
    }
  }
  return absl::string_view::npos;
}

void Parser::Arithmetic(absl::string_view text, absl::string_view what) {
  if (!IsLiteralArithmetic(text)) {
    a_.Opaque(absl::StrCat("it evaluates arithmetic on more than numbers (", what, ")"));
  }
}

// Skips ';' and newlines before a `do` or `{`.
bool Parser::SkipSeparators() {
  while (true) {
    SkipBlanks();
    if (Peek() == ';' && !LookingAt(";;")) {
      ++pos_;
    } else if (Peek() == '\n') {
      if (!ConsumeNewline()) return false;
    } else {
      return true;
    }
  }
}

bool Parser::LoopBody() {
  if (!SkipSeparators()) return false;
  absl::string_view r = PeekReserved();
  if (r == "do") {
    ConsumeReserved(r);
    return Expect(kStopDone, "done") && Redirections();
  }
  if (r == "{") {
    ConsumeReserved(r);
    return Expect(kStopBrace, "}") && Redirections();
  }
  return Fail("expected 'do'");
}

bool Parser::ParseFor(absl::string_view r) {
  ConsumeReserved(r);
  SkipBlanks();
  if (r == "for" && LookingAt("((")) {
    size_t end = ArithmeticEnd(pos_ + 2);
    if (end == absl::string_view::npos) return Fail("unclosed 'for (('");
    Arithmetic(s_.substr(pos_ + 2, end - pos_ - 2), "for (( ))");
    pos_ = end + 2;
    return LoopBody();
  }
  LexedWord name;
  if (!ReadWord(&name, Mode::kNormal)) return false;
  if (name.text.empty()) return Fail("expected a name after 'for'");
  a_.Assign(name);
  if (!SkipLines()) return false;
  if (PeekReserved() == "in") {
    ConsumeReserved("in");
    while (true) {
      SkipBlanks();
      if (AtEnd() || Peek() == ';' || Peek() == '\n') break;
      if (IsMeta(Peek())) return Fail("unexpected operator in a 'for' list");
      LexedWord w;
      if (!ReadWord(&w, Mode::kNormal)) return false;
    }
  }
  return LoopBody();
}

bool Parser::SkipLines() {
  while (true) {
    SkipBlanks();
    if (Peek() != '\n') return true;
    if (!ConsumeNewline()) return false;
  }
}

bool Parser::ParseCase() {
  ConsumeReserved("case");
  SkipBlanks();
  LexedWord subject;
  if (!ReadWord(&subject, Mode::kNormal)) return false;
  if (!SkipLines()) return false;
  if (PeekReserved() != "in") return Fail("expected 'in' after 'case'");
  ConsumeReserved("in");
  while (true) {
    if (!SkipLines()) return false;
    if (AtEnd()) return Fail("expected 'esac'");
    if (PeekReserved() == "esac") {
      ConsumeReserved("esac");
      return Redirections();
    }
    if (Peek() == '(') ++pos_;
    while (true) {
      SkipBlanks();
      LexedWord pattern;
      if (!ReadWord(&pattern, Mode::kNormal)) return false;
      SkipBlanks();
      if (Peek() == '|') {
        ++pos_;
        continue;
      }
      if (Peek() == ')') {
        ++pos_;
        break;
      }
      return Fail("expected ')' after a case pattern");
    }
    std::string found;
    if (!ParseList(kStopCaseItem | kStopEsac, &found)) return false;
    if (found == "esac") return Redirections();
  }
}

bool Parser::ParseConditional() {
  ConsumeReserved("[[");
  bool regex_next = false;
  bool arithmetic_next = false;
  bool subscript_next = false;
  LexedWord previous;
  bool has_previous = false;
  while (true) {
    if (!SkipLines()) return false;
    if (AtEnd()) return Fail("expected ']]'");
    if (PeekReserved() == "]]") {
      ConsumeReserved("]]");
      return Redirections();
    }
    if (LookingAt("&&") || LookingAt("||")) {
      pos_ += 2;
      continue;
    }
    if (Peek() == '(' || Peek() == ')' || Peek() == '<' || Peek() == '>') {
      ++pos_;
      continue;
    }
    LexedWord w;
    if (!ReadWord(&w, regex_next ? Mode::kRegex : Mode::kNormal)) return false;
    if (w.text.empty() && !w.quoted) return Fail("unexpected character in [[ ]]");
    const bool literal = !w.dynamic && IsLiteralArithmetic(w.text);
    if (arithmetic_next && !literal) {
      a_.Opaque("[[ ]] compares with arithmetic on more than numbers");
    }
    if (subscript_next && absl::StrContains(w.text, '[')) {
      a_.Opaque("[[ -v ]] evaluates a subscript");
    }
    regex_next = arithmetic_next = subscript_next = false;
    if (!w.dynamic) {
      static constexpr absl::string_view kArith[] = {"-eq", "-ne", "-lt", "-le", "-gt", "-ge"};
      for (absl::string_view op : kArith) {
        if (w.text != op) continue;
        arithmetic_next = true;
        if (has_previous && (previous.dynamic || !IsLiteralArithmetic(previous.text))) {
          a_.Opaque("[[ ]] compares with arithmetic on more than numbers");
        }
      }
      regex_next = w.text == "=~";
      subscript_next = w.text == "-v";
    }
    previous = std::move(w);
    has_previous = true;
  }
}

// Redirections after a compound command.
bool Parser::Redirections() {
  while (true) {
    SkipBlanks();
    if (!AtRedirection()) return true;
    if (!ParseRedirection()) return false;
  }
}

bool Parser::AtRedirection() const {
  size_t i = pos_;
  if (i < s_.size() && absl::ascii_isdigit(s_[i])) {
    while (i < s_.size() && absl::ascii_isdigit(s_[i])) ++i;
  } else if (i < s_.size() && s_[i] == '{') {
    size_t close = s_.find('}', i);
    if (close == absl::string_view::npos || !IsName(s_.substr(i + 1, close - i - 1))) {
      return false;
    }
    i = close + 1;
  } else if (i < s_.size() && s_[i] == '&') {
    return i + 1 < s_.size() && s_[i + 1] == '>';
  } else if (i < s_.size() && (s_[i] == '<' || s_[i] == '>')) {
    return !(i + 1 < s_.size() && s_[i + 1] == '(');
  }
  return i < s_.size() && (s_[i] == '<' || s_[i] == '>');
}

bool Parser::ParseRedirection() {
  a_.NoteStructure();
  if (Peek() == '{') {
    size_t close = s_.find('}', pos_);
    a_.AssignName(s_.substr(pos_ + 1, close - pos_ - 1));
    pos_ = close + 1;
  }
  while (absl::ascii_isdigit(Peek())) ++pos_;
  static constexpr absl::string_view kOps[] = {"&>>", "&>", "<<<", "<<-", "<<", "<>", "<&",
                                               ">>",  ">|", ">&",  "<",   ">"};
  absl::string_view op;
  for (absl::string_view o : kOps) {
    if (LookingAt(o)) {
      op = o;
      break;
    }
  }
  if (op.empty()) return Fail("expected a redirection");
  pos_ += op.size();
  SkipBlanks();
  LexedWord target;
  const bool heredoc = op == "<<" || op == "<<-";
  if (!ReadWord(&target, heredoc ? Mode::kDelimiter : Mode::kNormal)) return false;
  if (target.text.empty() && !target.quoted) return Fail("a redirection has no target");
  if (heredoc) pending_.push_back({target.text, target.quoted, op == "<<-"});
  return true;
}

bool Parser::ParseSimpleCommand() {
  RawCommand command;
  while (true) {
    SkipBlanks();
    if (AtEnd()) break;
    if (AtRedirection()) {
      if (!ParseRedirection()) return false;
      continue;
    }
    const char c = Peek();
    if (c == '(') {
      if (command.words.size() == 1 && command.assignments.empty()) {
        a_.Opaque("it defines a function");
        return Fail("function");
      }
      return Fail("unexpected '('");
    }
    if (IsMeta(c) && !((c == '<' || c == '>') && Peek(1) == '(')) break;
    LexedWord w;
    if (!ReadWord(&w, Mode::kNormal)) return false;
    if (command.words.empty() && w.assignment) {
      command.assignments.push_back(std::move(w));
    } else {
      command.words.push_back(std::move(w));
    }
  }
  a_.Command(std::move(command));
  return true;
}

bool IsName(absl::string_view text) {
  if (text.empty() || !IsNameStart(text.front())) return false;
  for (char c : text) {
    if (!IsNameChar(c)) return false;
  }
  return true;
}

bool IsReservedWord(absl::string_view word) {
  static constexpr absl::string_view kWords[] = {
      "if",   "then", "elif", "else",     "fi",     "do", "done", "while", "until", "for",
      "case", "esac", "in",   "function", "select", "{",  "}",    "!",     "[[",    "]]",
      "time", "coproc"};
  for (absl::string_view r : kWords) {
    if (word == r) return true;
  }
  return false;
}

bool IsLiteralArithmetic(absl::string_view text) {
  for (char c : text) {
    if (!absl::ascii_isdigit(c) &&
        absl::string_view(" \t\n+-*/%<>=!&|^~?:,()").find(c) == absl::string_view::npos) {
      return false;
    }
  }
  return true;
}

void Analyzer::AnalyzeText(absl::string_view text) {
  if (depth_ >= kMaxDepth) {
    Opaque("it nests commands too deeply");
    return;
  }
  ++depth_;
  Parser parser(*this, text);
  if (!parser.ParseAll()) {
    Opaque(absl::StrCat("it cannot be parsed here (", parser.error(), ")"));
  }
  --depth_;
}

}  // namespace toolexec::command::internal
