// What a bash command line runs, found without running it: the simple
// commands it is made of, the variables it sets, or why that cannot be told.
// The policy layer judges a command line by this (core/permissions.h), so the
// analysis errs one way only: it may list a command that would not run (both
// branches of an `if`, a command of a line bash would refuse), never miss one
// that would.
//
// What is a simple command: every command of a pipeline, list (`;`, `&`,
// `&&`, `||`, newlines), subshell `( )`, group `{ }`, `if`/`while`/`until`/
// `for`/`select`/`case` body and condition; every command inside a command
// substitution `$( )` or backquotes, a process substitution `<( )` `>( )`,
// a here-document whose delimiter is unquoted, a redirection target or a
// `${...}` operand. Words are what bash passes after quote removal (`'r'm`,
// `\rm` and `$'\x72m'` are the word `rm`). Words that expand (`$x`, `$(…)`,
// globs, braces, `~`) are marked dynamic and keep their spelling.
//
// Commands that run other commands are looked into, and what they run is
// listed too, after them: `eval`, `trap`, `bash`/`sh`/`dash`/`ash -c`,
// `builtin`, `command`, `exec`, `env`, `sudo`, `doas`, `su`/`runuser -c`,
// `nohup`, `nice`, `time`, `timeout`, `stdbuf`, `setsid`, `ionice`,
// `taskset`, `busybox`, `xargs`, `find -exec/-execdir/-ok/-okdir`, `watch`,
// `flock`, `script -c`. Other programs' own ways of running code (`make`,
// `python -c`, git aliases, a script file) are not looked into.
//
// The line is opaque (CommandLineAnalysis::opaque says why) when static
// analysis cannot tell what it runs: bash would not parse it as this parser
// does; a command name, a wrapped command, an `eval`/`-c` string or a
// variable name is not fixed text; it defines a function or an alias, loads
// a builtin (`enable`), changes command lookup (`hash -p`), makes bash read
// commands from standard input (`… | bash`), runs a callback (`mapfile -C`,
// `compgen -C/-F`, `${x@P}`), or evaluates arithmetic on anything but
// literal numbers (bash evaluates array subscripts in variable values, so
// `$((x))`, `[[ $x -eq 1 ]]`, `let`, `${a[i]}`, `declare -i`, `${!x}` can run
// commands hidden in a value).
//
// Assigned: every variable the line sets, exports or unsets (prefix
// assignments, `export`/`declare`/`local`/`readonly`/`typeset`, `read`,
// `printf -v`, `mapfile`, `getopts`, `for`/`select` names, `${x:=…}`,
// `env NAME=…`, `sudo NAME=…`, `{fd}>` names), so the caller can judge
// variables that make a shell or the loader run code (IsCodeVariable).
//
// Pure functions; thread-safe.
#ifndef TOOLEXEC_TOOLS_PROCESS_COMMAND_LINE_H_
#define TOOLEXEC_TOOLS_PROCESS_COMMAND_LINE_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace toolexec::command {

struct ShellWord {
  // The word's value after quote removal when it is static; its spelling in
  // the line when it is dynamic.
  std::string text;
  // Its value is known only when it runs (an expansion, a glob, braces, ~).
  bool dynamic = false;
};

struct SimpleCommand {
  std::vector<ShellWord> words;  // words[0] is the command's name, static
  // It runs with further arguments that are not in the line (xargs, find's
  // `-exec … +`).
  bool more_args = false;
};

struct CommandLineAnalysis {
  // In the order bash meets them; a wrapped command right after its wrapper.
  std::vector<SimpleCommand> commands;
  // Variables the line sets, exports or unsets, each once, in order.
  std::vector<std::string> assigned;
  // Why static analysis cannot tell what the line runs; "" when it can.
  std::string opaque;
  bool transparent() const { return opaque.empty(); }
};

CommandLineAnalysis AnalyzeCommandLine(absl::string_view line);

// The words of `line` if it is exactly one simple command of static words
// (no operator, redirection, assignment or expansion), each as bash would
// pass it; the last word may be an unquoted `*`, returned as "*" with
// `*trailing_star` set. Empty when it is not. For command patterns.
std::vector<std::string> StaticWords(absl::string_view line, bool* trailing_star);

// `word` quoted for bash when it needs it ('…' with ' as '\''), wherever it
// stands: a reserved word and NAME=value are quoted too.
std::string ShellQuote(absl::string_view word);

// The command as one line: static words quoted, dynamic ones as spelled, and
// " …" when it takes more arguments than the line shows.
std::string RenderCommand(const SimpleCommand& command);

}  // namespace toolexec::command

#endif  // TOOLEXEC_TOOLS_PROCESS_COMMAND_LINE_H_
