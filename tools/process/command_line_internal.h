// Shared by command_line_parser.cc (bash's grammar), command_line_words.cc
// (quoting and expansions) and command_line_commands.cc (what builtins and
// wrappers run). Not an API.
#ifndef TOOLEXEC_TOOLS_PROCESS_COMMAND_LINE_INTERNAL_H_
#define TOOLEXEC_TOOLS_PROCESS_COMMAND_LINE_INTERNAL_H_

#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/string_view.h"
#include "tools/process/command_line.h"

namespace toolexec::command::internal {

// A word as the parser read it.
struct LexedWord : ShellWord {
  // Some part of it was quoted or escaped (reserved words must not be).
  bool quoted = false;
  // An unquoted expansion, glob or brace: bash may split it into several
  // words, or none.
  bool splits = false;
  // It has the form NAME=value, NAME+=value or NAME[subscript]=value (an
  // assignment where bash takes one).
  bool assignment = false;
  std::string assign_name;
  std::string subscript;
};

// One simple command as written: its assignment prefix and its words.
struct RawCommand {
  std::vector<LexedWord> assignments;  // "NAME=value" words (text as written)
  std::vector<LexedWord> words;
};

// Collects the analysis of one line and of the lines nested in it.
class Analyzer {
 public:
  static constexpr int kMaxDepth = 16;

  explicit Analyzer(bool raw) : raw_(raw) {}

  // Parses `text` as a command line (command_line_parser.cc) one level
  // deeper; a parse error makes the whole line opaque.
  void AnalyzeText(absl::string_view text);

  // A parsed simple command (command_line_commands.cc).
  void Command(RawCommand command);
  // A command that runs (a parsed one, or one another command runs): listed,
  // then looked into. A name that is not fixed text makes the line opaque.
  void Emit(std::vector<LexedWord> words, bool more_args);

  void Opaque(absl::string_view why);
  // `name` is set, exported or unset; a name that is not fixed text, or
  // has a subscript (evaluated as arithmetic), makes the line opaque.
  void Assign(const ShellWord& name);
  void AssignName(absl::string_view name);

  bool raw() const { return raw_; }
  // Operators, redirections, comments and reserved words met so far.
  int structure() const { return structure_; }
  void NoteStructure() { ++structure_; }
  int depth() const { return depth_; }
  CommandLineAnalysis& out() { return out_; }
  // Raw mode: the simple commands as written, nothing looked into.
  std::vector<RawCommand>& raw_commands() { return raw_commands_; }

 private:
  const bool raw_;
  int depth_ = 0;
  int structure_ = 0;
  CommandLineAnalysis out_;
  std::vector<RawCommand> raw_commands_;
};

// Whether `text` is a bash identifier.
bool IsName(absl::string_view text);

// Whether bash reads `word`, unquoted where a command starts, as a reserved
// word.
bool IsReservedWord(absl::string_view word);

// Whether arithmetic `text` holds nothing but numbers and operators (bash
// evaluates a variable's value as an expression, subscripts included, so any
// name or expansion may run a command hidden in a value).
bool IsLiteralArithmetic(absl::string_view text);

// --- the parser: grammar in command_line_parser.cc, words in
// command_line_words.cc ---

inline bool IsMeta(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == ';' || c == '&' || c == '|' || c == '(' ||
         c == ')' || c == '<' || c == '>';
}
inline bool IsNameStart(char c) { return absl::ascii_isalpha(c) || c == '_'; }
inline bool IsNameChar(char c) { return absl::ascii_isalnum(c) || c == '_'; }

enum Stop : unsigned {
  kStopEnd = 1u << 0,
  kStopParen = 1u << 1,     // )
  kStopBrace = 1u << 2,     // }
  kStopThen = 1u << 3,      // then
  kStopElse = 1u << 4,      // elif else fi
  kStopDo = 1u << 5,        // do
  kStopDone = 1u << 6,      // done
  kStopEsac = 1u << 7,      // esac
  kStopCaseItem = 1u << 8,  // ;; ;& ;;&
};

enum class Mode { kNormal, kDelimiter, kRegex };

struct Heredoc {
  std::string delimiter;
  bool quoted = false;
  bool strip_tabs = false;
};

// Reads one text (a line, or an eval's or a -c's code) into its Analyzer.
class Parser {
 public:
  Parser(Analyzer& a, absl::string_view s) : a_(a), s_(s) {}

  // The whole text as a command line.
  bool ParseAll();
  // The whole text as the inside of double quotes (an unquoted
  // here-document's body): only its expansions matter.
  bool ScanQuoted();
  const std::string& error() const { return error_; }

 private:
  bool AtEnd() const { return pos_ >= s_.size(); }
  char Peek(size_t k = 0) const { return pos_ + k < s_.size() ? s_[pos_ + k] : '\0'; }
  bool LookingAt(absl::string_view t) const {
    return pos_ < s_.size() && absl::StartsWith(s_.substr(pos_), t);
  }
  bool Fail(absl::string_view why) {
    if (error_.empty()) error_ = std::string(why);
    return false;
  }

  void SkipBlanks();

  // Past a newline token: the bodies of the here-documents it ends.
  bool ConsumeNewline();
  bool ReadPendingHeredocs();
  bool FinishHeredocs();

  bool ReadHeredoc(const Heredoc& h);

  // A reserved word at the position (unquoted, delimited), or "".
  absl::string_view PeekReserved() const;
  void ConsumeReserved(absl::string_view r) { pos_ += r.size(); }

  bool ParseList(unsigned stops, std::string* found);

  bool Expect(unsigned stop, absl::string_view want);

  bool ParseCommand(unsigned stops, std::string* found, bool* stopped);

  // Where the "))" closing arithmetic that starts at `from` is, or npos.
  size_t ArithmeticEnd(size_t from) const;

  void Arithmetic(absl::string_view text, absl::string_view what);

  // Skips ';' and newlines before a `do` or `{`.
  bool SkipSeparators();

  bool LoopBody();

  bool ParseFor(absl::string_view r);
  // Skips blanks and newlines (reading the here-documents they end).
  bool SkipLines();

  bool ParseCase();

  bool ParseConditional();

  // Redirections after a compound command.
  bool Redirections();

  bool AtRedirection() const;

  bool ParseRedirection();

  bool ParseSimpleCommand();

  // --- words ---

  // Reads one word at the position into `w` (empty when the position holds
  // an operator).
  bool ReadWord(LexedWord* w, Mode mode);

  bool ReadArrayValue();

  bool ReadDoubleQuoted(LexedWord* w);

  // One character (or escape, or expansion) inside double quotes or an
  // unquoted here-document.
  bool QuotedChar(LexedWord* w, bool in_heredoc);

  bool ReadDollar(LexedWord* w, bool in_quotes);

  bool ReadAnsiC(LexedWord* w);

  // ${...}: its end found by reading through the expansions inside it.
  bool ReadParameter(bool in_quotes);

  void CheckParameter(absl::string_view p);

  bool ReadBackquote(LexedWord* w, bool in_quotes);

  Analyzer& a_;
  const absl::string_view s_;
  size_t pos_ = 0;
  std::vector<Heredoc> pending_;
  std::string error_;
};

}  // namespace toolexec::command::internal

#endif  // TOOLEXEC_TOOLS_PROCESS_COMMAND_LINE_INTERNAL_H_
