// What a simple command runs beside itself: builtins that run their
// arguments as code, wrappers whose arguments are a command, and builtins
// that set variables. See command_line.h.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tools/process/command_line.h"
#include "tools/process/command_line_internal.h"

namespace toolexec::command {
namespace internal {
namespace {

using Words = std::vector<LexedWord>;

LexedWord Static(absl::string_view text) {
  LexedWord w;
  w.text = std::string(text);
  return w;
}

Words Tail(const Words& w, size_t from) {
  return from >= w.size() ? Words() : Words(w.begin() + static_cast<ptrdiff_t>(from), w.end());
}

// How a program takes options before its operands (getopt with '+': the
// first operand ends them).
struct Options {
  absl::string_view flags;     // short options without an argument
  absl::string_view with_arg;  // short options with one
  std::vector<absl::string_view> long_flags;
  std::vector<absl::string_view> long_with_arg;
  // A short option made of a number ("-5" for nice).
  bool numeric = false;
};

struct Seen {
  std::string option;  // the letter or the long name
  LexedWord value;
};

// The index of the first operand of `w` (w[0] is the program), filling
// `seen`; npos (and the line opaque) when an option is not known or not
// fixed text, so where the command starts cannot be told.
size_t ParseOptions(Analyzer& a, const Words& w, const Options& o, std::vector<Seen>* seen) {
  const std::string prog = w[0].text;
  auto unknown = [&](absl::string_view what) {
    a.Opaque(absl::StrCat("it cannot tell what ", prog, " runs (", what, ")"));
    return absl::string_view::npos;
  };
  for (size_t i = 1; i < w.size(); ++i) {
    const LexedWord& word = w[i];
    if (word.dynamic) return unknown(absl::StrCat("an option that is not fixed: ", word.text));
    absl::string_view t = word.text;
    if (t == "--") return i + 1;
    if (t.size() < 2 || t.front() != '-') return i;
    if (absl::StartsWith(t, "--")) {
      absl::string_view name = t.substr(2), value;
      const size_t eq = name.find('=');
      const bool has_value = eq != absl::string_view::npos;
      if (has_value) {
        value = name.substr(eq + 1);
        name = name.substr(0, eq);
      }
      const auto known = [&](const std::vector<absl::string_view>& list) {
        return std::find(list.begin(), list.end(), name) != list.end();
      };
      if (known(o.long_with_arg)) {
        if (!has_value) {
          if (i + 1 >= w.size()) return unknown(absl::StrCat("--", name, " without its value"));
          seen->push_back({std::string(name), w[++i]});
        } else {
          seen->push_back({std::string(name), Static(value)});
        }
      } else if (known(o.long_flags)) {
        seen->push_back({std::string(name), Static(value)});
      } else {
        return unknown(absl::StrCat("option --", name));
      }
      continue;
    }
    if (o.numeric && absl::ascii_isdigit(t[1])) continue;
    for (size_t k = 1; k < t.size(); ++k) {
      const char c = t[k];
      if (o.flags.find(c) != absl::string_view::npos) {
        seen->push_back({std::string(1, c), LexedWord()});
      } else if (o.with_arg.find(c) != absl::string_view::npos) {
        if (k + 1 < t.size()) {
          seen->push_back({std::string(1, c), Static(t.substr(k + 1))});
        } else if (i + 1 < w.size()) {
          seen->push_back({std::string(1, c), w[++i]});
        } else {
          return unknown(absl::StrCat("-", std::string(1, c), " without its value"));
        }
        break;
      } else {
        return unknown(absl::StrCat("option -", std::string(1, c)));
      }
    }
  }
  return w.size();
}

bool Has(const std::vector<Seen>& seen, absl::string_view option) {
  return std::any_of(seen.begin(), seen.end(), [&](const Seen& s) { return s.option == option; });
}
const LexedWord* ValueOf(const std::vector<Seen>& seen, absl::string_view option) {
  for (const Seen& s : seen) {
    if (s.option == option) return &s.value;
  }
  return nullptr;
}

// `text` (a -c string, an eval's words) as a command line of its own.
void Code(Analyzer& a, const LexedWord& text, absl::string_view what) {
  if (text.dynamic) {
    a.Opaque(absl::StrCat("the code ", what, " runs is not fixed text: ", text.text));
    return;
  }
  a.AnalyzeText(text.text);
}

// Runs what follows its options: `Options` then the command.
void Wrapper(Analyzer& a, const Words& w, const Options& o, size_t operands_before = 0,
             bool more_args = false) {
  std::vector<Seen> seen;
  size_t i = ParseOptions(a, w, o, &seen);
  if (i == absl::string_view::npos) return;
  i += operands_before;
  if (i < w.size()) a.Emit(Tail(w, i), more_args);
}

// A file of shell code: what it runs is not in the line, which is fine for
// a script of the workspace (it is a program like any other) but not for
// code read from the line's own input or an expansion.
void CodeFile(Analyzer& a, const LexedWord& file, absl::string_view who) {
  if (file.dynamic || absl::StartsWith(file.text, "/dev/") ||
      absl::StartsWith(file.text, "/proc/")) {
    a.Opaque(absl::StrCat(who, " reads the commands it runs from ", file.text));
  }
}

// bash, sh, dash, ash: -c runs its operand as code; no -c and no script
// reads the commands from standard input.
void Shell(Analyzer& a, const Words& w, bool parses_as_bash) {
  bool command_string = false, from_stdin = false;
  size_t i = 1;
  for (; i < w.size(); ++i) {
    const LexedWord& word = w[i];
    if (word.dynamic) {
      if (command_string) break;  // the code
      a.Opaque(absl::StrCat("it cannot tell what ", w[0].text, " runs (", word.text, ")"));
      return;
    }
    absl::string_view t = word.text;
    if (t == "--" || t == "-") {
      ++i;
      break;
    }
    if (t.size() < 2 || (t.front() != '-' && t.front() != '+')) break;
    if (absl::StartsWith(t, "--")) {
      if (t == "--rcfile" || t == "--init-file") ++i;
      continue;
    }
    bool takes_next = false;
    for (char c : t.substr(1)) {
      if (c == 'c') command_string = true;
      if (c == 's') from_stdin = true;
      if (c == 'o' || c == 'O') takes_next = true;
    }
    if (takes_next) ++i;
  }
  if (command_string) {
    if (i >= w.size()) return;  // bash refuses it
    if (!parses_as_bash) {
      a.Opaque(absl::StrCat(w[0].text, " -c runs code in another shell's language"));
      return;
    }
    Code(a, w[i], absl::StrCat(w[0].text, " -c"));
    return;
  }
  if (from_stdin || i >= w.size()) {
    a.Opaque(absl::StrCat(w[0].text, " reads the commands it runs from its input"));
    return;
  }
  CodeFile(a, w[i], w[0].text);
}

// env [OPTION]... [NAME=VALUE]... [COMMAND [ARG]...]
void Env(Analyzer& a, const Words& w) {
  static const Options kEnv = {"i0v", "uCS",
                               {"ignore-environment", "null", "debug", "list-signal-handling",
                                "default-signal", "ignore-signal", "block-signal"},
                               {"unset", "chdir", "split-string"}};
  std::vector<Seen> seen;
  size_t i = ParseOptions(a, w, kEnv, &seen);
  if (i == absl::string_view::npos) return;
  if (Has(seen, "S") || Has(seen, "split-string")) {
    return a.Opaque("env -S splits a string into the command it runs");
  }
  for (const Seen& s : seen) {
    if (s.option == "u" || s.option == "unset") a.Assign(s.value);
  }
  for (; i < w.size() && w[i].assignment; ++i) a.AssignName(w[i].assign_name);
  if (i < w.size()) a.Emit(Tail(w, i), false);
}

void Sudo(Analyzer& a, const Words& w) {
  static const Options kSudo = {
      "AbEeHiKklnPSsVvh", "CDgpRrTtUu",
      {"askpass", "background", "preserve-env", "edit", "set-home", "login", "remove-timestamp",
       "reset-timestamp", "list", "non-interactive", "preserve-groups", "stdin", "shell",
       "version", "validate", "help"},
      {"close-from", "chdir", "group", "host", "prompt", "chroot", "role", "type",
       "command-timeout", "other-user", "user"}};
  std::vector<Seen> seen;
  size_t i = ParseOptions(a, w, kSudo, &seen);
  if (i == absl::string_view::npos) return;
  while (i < w.size() && w[i].assignment) a.AssignName(w[i++].assign_name);
  if (i >= w.size()) {
    if (Has(seen, "s") || Has(seen, "i") || Has(seen, "shell") || Has(seen, "login")) {
      a.Opaque("sudo starts a shell that reads the commands it runs from its input");
    }
    return;
  }
  if (Has(seen, "s") || Has(seen, "i") || Has(seen, "shell") || Has(seen, "login") ||
      Has(seen, "e") || Has(seen, "edit")) {
    a.Opaque("sudo hands the command to a shell or an editor");
    return;
  }
  a.Emit(Tail(w, i), false);
}

// su, runuser: -c/--command runs code in the user's shell; without it, an
// interactive shell (runuser -u USER runs a command as given).
void Su(Analyzer& a, const Words& w) {
  for (size_t i = 1; i < w.size(); ++i) {
    absl::string_view t = w[i].text;
    if (w[i].dynamic) break;
    if ((t == "-c" || t == "--command" || t == "--session-command") && i + 1 < w.size()) {
      return Code(a, w[i + 1], absl::StrCat(w[0].text, " -c"));
    }
    for (absl::string_view p : {"--command=", "--session-command="}) {
      if (absl::StartsWith(t, p)) return Code(a, Static(t.substr(p.size())), "su -c");
    }
    if (absl::StartsWith(t, "-c") && t.size() > 2) return Code(a, Static(t.substr(2)), "su -c");
    if (t == "--") {
      if (i + 1 < w.size() && w[0].text == "runuser") a.Emit(Tail(w, i + 1), false);
      return;
    }
  }
  a.Opaque(absl::StrCat(w[0].text, " starts a shell that reads the commands it runs from its input"));
}

void Xargs(Analyzer& a, const Words& w) {
  static const Options kXargs = {
      "0oprtxeil", "aEdILnPs",
      {"null", "interactive", "no-run-if-empty", "open-tty", "verbose", "exit", "show-limits",
       "eof", "replace", "max-lines"},
      {"arg-file", "delimiter", "max-args", "max-procs", "max-chars", "process-slot-var"}};
  std::vector<Seen> seen;
  // -e, -i and -l take their value attached or not at all.
  Words normalized = {w[0]};
  for (size_t i = 1; i < w.size(); ++i) {
    const LexedWord& word = w[i];
    if (!word.dynamic && word.text.size() > 2 && word.text[0] == '-' && word.text[1] != '-' &&
        absl::string_view("eil").find(word.text[1]) != absl::string_view::npos) {
      seen.push_back({std::string(1, word.text[1]), Static(word.text.substr(2))});
      normalized.push_back(Static(word.text.substr(0, 2)));
      continue;
    }
    normalized.push_back(word);
  }
  size_t i = ParseOptions(a, normalized, kXargs, &seen);
  if (i == absl::string_view::npos) return;
  Words inner = i < w.size() ? Tail(w, i) : Words{Static("echo")};
  std::string replace;
  if (const LexedWord* r = ValueOf(seen, "I")) replace = r->text;
  if (Has(seen, "i") || Has(seen, "replace")) replace = "{}";
  if (const LexedWord* r = ValueOf(seen, "i"); r != nullptr && !r->text.empty()) replace = r->text;
  if (const LexedWord* r = ValueOf(seen, "replace"); r != nullptr && !r->text.empty()) {
    replace = r->text;
  }
  if (!replace.empty()) {
    for (size_t k = 0; k < inner.size(); ++k) {
      if (absl::StrContains(inner[k].text, replace)) {
        if (k == 0) {
          a.Opaque("xargs replaces text in the name of the command it runs");
          return;
        }
        inner[k].dynamic = true;
      }
    }
  }
  a.Emit(std::move(inner), true);
}

void Find(Analyzer& a, const Words& w) {
  bool open_quoted_dynamic = false;
  for (size_t i = 1; i < w.size(); ++i) {
    const LexedWord& word = w[i];
    if (word.splits) {
      a.Opaque(absl::StrCat("find's arguments are not fixed text (", word.text, ")"));
      return;
    }
    if (word.dynamic) {
      open_quoted_dynamic = true;
      continue;
    }
    if (word.text != "-exec" && word.text != "-execdir" && word.text != "-ok" &&
        word.text != "-okdir") {
      if ((word.text == ";" || word.text == "+") && open_quoted_dynamic) {
        a.Opaque("find's arguments are not fixed text, and may run a command");
        return;
      }
      continue;
    }
    size_t end = i + 1;
    while (end < w.size() && (w[end].dynamic || (w[end].text != ";" && w[end].text != "+"))) {
      ++end;
    }
    if (end >= w.size()) {
      a.Opaque("find -exec has no ';' or '+'");
      return;
    }
    Words inner(w.begin() + static_cast<ptrdiff_t>(i + 1), w.begin() + static_cast<ptrdiff_t>(end));
    for (LexedWord& iw : inner) {
      if (absl::StrContains(iw.text, "{}")) iw.dynamic = true;
    }
    if (!inner.empty()) a.Emit(std::move(inner), w[end].text == "+");
    i = end;
  }
}

void Watch(Analyzer& a, const Words& w) {
  static const Options kWatch = {"bcCdegprtwx", "nq",
                                 {"beep", "color", "no-color", "differences", "errexit",
                                  "chgexit", "precise", "no-rerun", "no-title", "no-wrap", "exec",
                                  "help", "version"},
                                 {"interval", "equexit"}};
  std::vector<Seen> seen;
  size_t i = ParseOptions(a, w, kWatch, &seen);
  if (i == absl::string_view::npos || i >= w.size()) return;
  if (Has(seen, "x") || Has(seen, "exec")) return a.Emit(Tail(w, i), false);
  std::vector<std::string> parts;
  for (size_t k = i; k < w.size(); ++k) {
    if (w[k].dynamic) return a.Opaque("the command watch runs is not fixed text");
    parts.push_back(w[k].text);
  }
  a.AnalyzeText(absl::StrJoin(parts, " "));
}

void Flock(Analyzer& a, const Words& w) {
  static const Options kFlock = {"sxunoFh", "wEc",
                                 {"shared", "exclusive", "unlock", "nonblock", "close",
                                  "no-fork", "verbose", "help"},
                                 {"timeout", "conflict-exit-code", "command"}};
  std::vector<Seen> seen;
  size_t i = ParseOptions(a, w, kFlock, &seen);
  if (i == absl::string_view::npos) return;
  const LexedWord* code = ValueOf(seen, "c");
  if (code == nullptr) code = ValueOf(seen, "command");
  // flock FILE -c CMD: the option may follow the file.
  if (code == nullptr && i + 2 < w.size() && !w[i + 1].dynamic &&
      (w[i + 1].text == "-c" || w[i + 1].text == "--command")) {
    code = &w[i + 2];
  }
  if (code != nullptr) return Code(a, *code, "flock -c");
  if (i + 1 < w.size()) a.Emit(Tail(w, i + 1), false);
}

void Script(Analyzer& a, const Words& w) {
  for (size_t i = 1; i < w.size(); ++i) {
    if (w[i].dynamic) break;
    if ((w[i].text == "-c" || w[i].text == "--command") && i + 1 < w.size()) {
      return Code(a, w[i + 1], "script -c");
    }
    if (absl::StartsWith(w[i].text, "--command=")) {
      return Code(a, Static(w[i].text.substr(10)), "script -c");
    }
  }
  a.Opaque("script starts a shell that reads the commands it runs from its input");
}

// declare, typeset, local, export, readonly.
void Declare(Analyzer& a, const Words& w) {
  for (size_t i = 1; i < w.size(); ++i) {
    const LexedWord& word = w[i];
    if (!word.dynamic && (word.text.front() == '-' || word.text.front() == '+') &&
        !word.assignment) {
      if (word.text.find_first_of("nifF") != std::string::npos) {
        a.Opaque(absl::StrCat(w[0].text, " ", word.text,
                              " makes names refer to others, values arithmetic, or exports "
                              "functions"));
        return;
      }
      continue;
    }
    if (word.assignment) {
      LexedWord name = Static(word.assign_name);
      if (!word.subscript.empty() && !IsLiteralArithmetic(word.subscript)) {
        a.Opaque("an array subscript is evaluated as arithmetic");
      }
      a.Assign(name);
      continue;
    }
    a.Assign(word);
  }
}

// read, mapfile/readarray, printf -v, getopts, unset, wait -p.
void Names(Analyzer& a, const Words& w) {
  const std::string& n = w[0].text;
  if (n == "printf" || n == "wait") {
    for (size_t i = 1; i + 1 < w.size(); ++i) {
      if (w[i].text == "-v" || w[i].text == "-p") a.Assign(w[i + 1]);
      if (w[i].text == "--") break;
    }
    return;
  }
  if (n == "getopts") {
    if (w.size() > 2) a.Assign(w[2]);
    return;
  }
  Options o;
  if (n == "read") o = {"ers", "adinNptu", {}, {}};
  if (n == "mapfile" || n == "readarray") o = {"t", "cdnOsuC", {}, {}};
  if (n == "unset") o = {"fvn", "", {}, {}};
  std::vector<Seen> seen;
  size_t i = ParseOptions(a, w, o, &seen);
  if (i == absl::string_view::npos) return;
  if (Has(seen, "C")) return a.Opaque("mapfile -C runs a callback");
  if (Has(seen, "f")) return;  // unset -f: functions
  if (const LexedWord* array = ValueOf(seen, "a")) a.Assign(*array);
  for (; i < w.size(); ++i) a.Assign(w[i]);
}

}  // namespace

void Analyzer::Opaque(absl::string_view why) {
  if (out_.opaque.empty()) out_.opaque = std::string(why);
}

void Analyzer::AssignName(absl::string_view name) {
  if (!IsName(name)) {
    Opaque(absl::StrCat("it sets a variable whose name is not fixed text: ", name));
    return;
  }
  auto& assigned = out_.assigned;
  if (std::find(assigned.begin(), assigned.end(), name) == assigned.end()) {
    assigned.emplace_back(name);
  }
}

void Analyzer::Assign(const ShellWord& name) {
  if (name.dynamic) {
    Opaque(absl::StrCat("it sets a variable whose name is not fixed text: ", name.text));
    return;
  }
  const size_t bracket = name.text.find('[');
  if (bracket != std::string::npos) {
    absl::string_view sub = absl::string_view(name.text).substr(bracket + 1);
    if (!sub.empty() && sub.back() == ']') sub.remove_suffix(1);
    if (!IsLiteralArithmetic(sub)) Opaque("an array subscript is evaluated as arithmetic");
    AssignName(absl::string_view(name.text).substr(0, bracket));
    return;
  }
  AssignName(name.text);
}

void Analyzer::Command(RawCommand command) {
  for (const LexedWord& a : command.assignments) {
    if (!a.subscript.empty() && !IsLiteralArithmetic(a.subscript)) {
      Opaque("an array subscript is evaluated as arithmetic");
    }
    AssignName(a.assign_name);
  }
  if (raw_) {
    raw_commands_.push_back(std::move(command));
    return;
  }
  if (!command.words.empty()) Emit(std::move(command.words), false);
}

void Analyzer::Emit(Words w, bool more_args) {
  if (w.empty()) return;
  if (w[0].dynamic) {
    Opaque(absl::StrCat("the name of a command it runs is not fixed text: ", w[0].text));
    return;
  }
  SimpleCommand listed;
  listed.more_args = more_args;
  for (const LexedWord& word : w) listed.words.push_back(ShellWord{word.text, word.dynamic});
  out_.commands.push_back(std::move(listed));
  if (depth_ >= kMaxDepth || out_.commands.size() > 4096) {
    Opaque("it nests commands too deeply");
    return;
  }

  absl::string_view name = w[0].text;
  if (size_t slash = name.rfind('/'); slash != absl::string_view::npos) {
    name = name.substr(slash + 1);
  }
  Analyzer& a = *this;
  ++depth_;
  if (name == "eval") {
    std::vector<std::string> parts;
    bool dynamic = false;
    for (size_t i = 1; i < w.size(); ++i) {
      dynamic = dynamic || w[i].dynamic;
      parts.push_back(w[i].text);
    }
    LexedWord code = Static(absl::StrJoin(parts, " "));
    code.dynamic = dynamic;
    Code(a, code, "eval");
  } else if (name == "trap") {
    size_t i = 1;
    while (i < w.size() && !w[i].dynamic && absl::StartsWith(w[i].text, "-") &&
           w[i].text != "-") {
      if (w[i].text == "--") {
        ++i;
        break;
      }
      ++i;
    }
    // trap ACTION SIGNAL...; a single operand is a signal to reset.
    if (i + 1 < w.size() && w[i].text != "-") Code(a, w[i], "trap");
  } else if (name == "bash" || name == "sh" || name == "dash" || name == "ash" ||
             name == "rbash") {
    Shell(a, w, /*parses_as_bash=*/true);
  } else if (name == "zsh" || name == "ksh" || name == "mksh" || name == "fish" ||
             name == "csh" || name == "tcsh" || name == "yash" || name == "posh" ||
             name == "ksh93" || name == "pwsh") {
    Shell(a, w, /*parses_as_bash=*/false);
  } else if (name == "source" || name == ".") {
    if (w.size() > 1) CodeFile(a, w[1], name);
  } else if (name == "builtin") {
    Emit(Tail(w, 1), false);
  } else if (name == "command") {
    std::vector<Seen> seen;
    size_t i = ParseOptions(a, w, {"pvV", "", {}, {}}, &seen);
    if (i != absl::string_view::npos && !Has(seen, "v") && !Has(seen, "V") && i < w.size()) {
      Emit(Tail(w, i), false);
    }
  } else if (name == "exec") {
    Wrapper(a, w, {"cl", "a", {}, {}});
  } else if (name == "nohup") {
    Wrapper(a, w, {"", "", {"help", "version"}, {}});
  } else if (name == "nice") {
    Wrapper(a, w, {"", "n", {"help", "version"}, {"adjustment"}, /*numeric=*/true});
  } else if (name == "time") {
    Wrapper(a, w, {"pvaq", "fo", {"portability", "verbose", "append", "quiet"},
                   {"format", "output"}});
  } else if (name == "timeout") {
    Wrapper(a, w, {"v", "ks", {"preserve-status", "foreground", "verbose"},
                   {"kill-after", "signal"}}, /*operands_before=*/1);
  } else if (name == "stdbuf") {
    Wrapper(a, w, {"", "ioe", {}, {"input", "output", "error"}});
  } else if (name == "setsid") {
    Wrapper(a, w, {"cfw", "", {"ctty", "fork", "wait"}, {}});
  } else if (name == "ionice") {
    std::vector<Seen> seen;
    size_t i = ParseOptions(a, w, {"t", "cnpPu", {}, {}}, &seen);
    if (i != absl::string_view::npos && !Has(seen, "p") && !Has(seen, "P") && !Has(seen, "u")) {
      Emit(Tail(w, i), false);
    }
  } else if (name == "taskset") {
    std::vector<Seen> seen;
    size_t i = ParseOptions(a, w, {"apc", "", {"all-tasks", "pid", "cpu-list"}, {}}, &seen);
    if (i != absl::string_view::npos && !Has(seen, "p") && !Has(seen, "pid")) {
      Emit(Tail(w, i + 1), false);
    }
  } else if (name == "busybox") {
    if (w.size() > 1 && !w[1].dynamic && !absl::StartsWith(w[1].text, "-")) {
      Emit(Tail(w, 1), false);
    } else if (w.size() > 1 && w[1].dynamic) {
      Opaque("the busybox applet it runs is not fixed text");
    }
  } else if (name == "env") {
    Env(a, w);
  } else if (name == "sudo") {
    Sudo(a, w);
  } else if (name == "doas") {
    std::vector<Seen> seen;
    size_t i = ParseOptions(a, w, {"ns", "uC", {}, {}}, &seen);
    if (i == absl::string_view::npos) {
    } else if (Has(seen, "s")) {
      Opaque("doas -s starts a shell that reads the commands it runs from its input");
    } else {
      Emit(Tail(w, i), false);
    }
  } else if (name == "su" || name == "runuser") {
    Su(a, w);
  } else if (name == "xargs") {
    Xargs(a, w);
  } else if (name == "find") {
    Find(a, w);
  } else if (name == "watch") {
    Watch(a, w);
  } else if (name == "flock") {
    Flock(a, w);
  } else if (name == "script") {
    Script(a, w);
  } else if (name == "declare" || name == "typeset" || name == "local" || name == "export" ||
             name == "readonly") {
    Declare(a, w);
  } else if (name == "read" || name == "mapfile" || name == "readarray" || name == "printf" ||
             name == "getopts" || name == "unset" || name == "wait") {
    Names(a, w);
  } else if (name == "let") {
    for (size_t i = 1; i < w.size(); ++i) {
      if (w[i].dynamic || !IsLiteralArithmetic(w[i].text)) {
        Opaque("let evaluates arithmetic on more than numbers");
      }
    }
  } else if (name == "test" || name == "[") {
    for (size_t i = 1; i + 1 < w.size(); ++i) {
      if (w[i].text == "-v" && absl::StrContains(w[i + 1].text, '[')) {
        Opaque("test -v evaluates a subscript");
      }
    }
  } else if (name == "alias") {
    Opaque("it defines an alias");
  } else if (name == "enable") {
    Opaque("enable loads or switches builtins");
  } else if (name == "fc") {
    Opaque("fc runs commands from the history");
  } else if (name == "hash") {
    for (size_t i = 1; i < w.size(); ++i) {
      if (w[i].dynamic || absl::StrContains(w[i].text, 'p')) {
        Opaque("hash -p changes which program a name runs");
      }
    }
  } else if (name == "compgen" || name == "complete") {
    for (size_t i = 1; i < w.size(); ++i) {
      if (w[i].dynamic || absl::StrContains(w[i].text, "-C") || absl::StrContains(w[i].text, "-F")) {
        Opaque(absl::StrCat(name, " -C/-F runs a command or a function"));
      }
    }
  }
  --depth_;
}

}  // namespace internal

using internal::Analyzer;

CommandLineAnalysis AnalyzeCommandLine(absl::string_view line) {
  Analyzer a(/*raw=*/false);
  a.AnalyzeText(line);
  return std::move(a.out());
}

std::vector<std::string> StaticWords(absl::string_view line, bool* trailing_star) {
  *trailing_star = false;
  Analyzer a(/*raw=*/true);
  a.AnalyzeText(line);
  std::vector<internal::RawCommand>& raw = a.raw_commands();
  if (!a.out().transparent() || a.structure() > 0 || !a.out().assigned.empty() || raw.size() != 1 ||
      !raw[0].assignments.empty() || raw[0].words.empty()) {
    return {};
  }
  // Nothing but the words: no operator, redirection or comment around them.
  std::vector<std::string> words;
  const std::vector<internal::LexedWord>& w = raw[0].words;
  for (size_t i = 0; i < w.size(); ++i) {
    const bool last = i + 1 == w.size();
    if (w[i].dynamic) {
      if (!(last && i > 0 && w[i].text == "*")) return {};
      *trailing_star = true;
    }
    words.push_back(w[i].text);
  }
  return words;
}

namespace {

// `word` quoted for bash; where a command's name stands, a reserved word and
// NAME=value are quoted too.
std::string Quote(absl::string_view word, bool command_name) {
  if (word == "[" || word == "]") return std::string(word);
  // NAME=value would read back as an assignment.
  absl::string_view before_eq = word.substr(0, word.find('='));
  if (absl::EndsWith(before_eq, "+")) before_eq.remove_suffix(1);
  const bool assignment = word.find('=') != absl::string_view::npos && internal::IsName(before_eq);
  if (!(command_name && (assignment || internal::IsReservedWord(word))) && !word.empty() && std::all_of(word.begin(), word.end(), [](char c) {
        return absl::ascii_isalnum(c) || absl::string_view("_@%+=:,./-").find(c) !=
                                             absl::string_view::npos;
      })) {
    return std::string(word);
  }
  std::string out = "'";
  for (char c : word) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out.push_back(c);
    }
  }
  out.push_back('\'');
  return out;
}

}  // namespace

std::string ShellQuote(absl::string_view word) { return Quote(word, /*command_name=*/true); }

std::string RenderCommand(const SimpleCommand& command) {
  std::string out;
  for (size_t i = 0; i < command.words.size(); ++i) {
    if (i > 0) out.push_back(' ');
    const ShellWord& w = command.words[i];
    out += w.dynamic ? w.text : Quote(w.text, /*command_name=*/i == 0);
  }
  if (command.more_args) out += " …";
  return out;
}

}  // namespace toolexec::command
