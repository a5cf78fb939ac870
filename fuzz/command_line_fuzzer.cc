// Fuzzes the static analysis of bash command lines
// (tools/process/command_line.h) that command patterns judge.
// Input: the command line itself.
// Checks: a line said to be transparent lists only commands whose name is
// fixed text and sets only valid names; each listed command of fixed words,
// rendered, reads back (StaticWords) as the same words; StaticWords of the
// input reads back from its own rendering.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "tools/process/command_line.h"

namespace {

using toolexec::command::AnalyzeCommandLine;
using toolexec::command::CommandLineAnalysis;
using toolexec::command::RenderCommand;
using toolexec::command::ShellQuote;
using toolexec::command::SimpleCommand;
using toolexec::command::StaticWords;

[[noreturn]] void Fail(absl::string_view line, const std::string& what) {
  std::fprintf(stderr, "line: [%s]\n%s\n", std::string(line).c_str(), what.c_str());
  std::abort();
}

bool ValidName(absl::string_view name) {
  if (name.empty() || !(std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_')) {
    return false;
  }
  for (char c : name) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  }
  return true;
}

// `words` rendered as a line reads back as the same words.
void CheckReadsBack(absl::string_view line, const std::vector<std::string>& words) {
  std::vector<std::string> quoted;
  for (const std::string& w : words) quoted.push_back(ShellQuote(w));
  const std::string rendered = absl::StrJoin(quoted, " ");
  bool star = false;
  std::vector<std::string> again = StaticWords(rendered, &star);
  if (again != words || star) {
    Fail(line, "rendered as [" + rendered + "], read back as [" + absl::StrJoin(again, "|") +
                   "] not [" + absl::StrJoin(words, "|") + "]");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 4096) return 0;
  const absl::string_view line(reinterpret_cast<const char*>(data), size);
  const CommandLineAnalysis a = AnalyzeCommandLine(line);
  if (a.transparent()) {
    for (const std::string& name : a.assigned) {
      if (!ValidName(name)) Fail(line, "assigned an invalid name: " + name);
    }
    for (const SimpleCommand& c : a.commands) {
      if (c.words.empty() || c.words[0].dynamic) {
        Fail(line, "listed a command without a fixed name: " + RenderCommand(c));
      }
      std::vector<std::string> words;
      bool fixed = true;
      for (const auto& w : c.words) {
        fixed = fixed && !w.dynamic;
        words.push_back(w.text);
      }
      if (fixed) CheckReadsBack(line, words);
    }
  }
  bool star = false;
  std::vector<std::string> words = StaticWords(line, &star);
  if (!words.empty() && !star) CheckReadsBack(line, words);
  return 0;
}
