// What a bash command line runs, found without running it
// (tools/process/command_line.h), checked by hand and against bash
// itself: bash -x traces every simple command it runs, and each must be one
// the analysis lists.
#include "tools/process/command_line.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "tests/unit/builtin/file_test_util.h"
#include "tools/process/environment.h"

namespace toolexec::command {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// Each listed command as one line.
std::vector<std::string> Commands(absl::string_view line) {
  CommandLineAnalysis a = AnalyzeCommandLine(line);
  EXPECT_TRUE(a.transparent()) << line << ": " << a.opaque;
  std::vector<std::string> out;
  for (const SimpleCommand& c : a.commands) out.push_back(RenderCommand(c));
  return out;
}

std::string OpaqueWhy(absl::string_view line) { return AnalyzeCommandLine(line).opaque; }

TEST(CommandLineTest, ListsEverySimpleCommandOfListsPipelinesAndGroups) {
  EXPECT_THAT(Commands("git --version; touch X"), ElementsAre("git --version", "touch X"));
  EXPECT_THAT(Commands("a && b || c & d | e |& f\ng"),
              ElementsAre("a", "b", "c", "d", "e", "f", "g"));
  EXPECT_THAT(Commands("(a; (b)) && { c; }"), ElementsAre("a", "b", "c"));
  EXPECT_THAT(Commands("if a; then b; elif c; then d; else e; fi > out"),
              ElementsAre("a", "b", "c", "d", "e"));
  EXPECT_THAT(Commands("while a; do b; done; until c; do d; done"),
              ElementsAre("a", "b", "c", "d"));
  EXPECT_THAT(Commands("for f in *.c; do cc \"$f\"; done"), ElementsAre("cc \"$f\""));
  EXPECT_THAT(Commands("case $x in a|b) one;; (c) two ;& *) three;;& esac"),
              ElementsAre("one", "two", "three"));
  EXPECT_THAT(Commands("! a | b; time -p c; [[ -f x && $y == z ]] && d"),
              ElementsAre("a", "b", "c", "d"));
  EXPECT_THAT(Commands("a # b; c\nd"), ElementsAre("a", "d"));
  EXPECT_THAT(Commands("a \\\n  b; c"), ElementsAre("a b", "c"));
}

TEST(CommandLineTest, CommandsInsideWordsRedirectionsAndHereDocuments) {
  EXPECT_THAT(Commands("echo $(a $(b)) `c` \"$(d)\" \"`e`\""),
              ElementsAre("b", "a $(b)", "c", "d", "e", "echo $(a $(b)) `c` \"$(d)\" \"`e`\""));
  EXPECT_THAT(Commands("diff <(a) >(b) > $(c) 2>&1"),
              ElementsAre("a", "b", "c", "diff <(a) >(b)"));
  EXPECT_THAT(Commands("cat <<EOF\n$(a) `b` ${x:-$(c)}\nEOF\nd"),
              ElementsAre("cat", "a", "b", "c", "d"));
  // A quoted delimiter: the body is text.
  EXPECT_THAT(Commands("cat <<'EOF'\n$(a)\nEOF\nd"), ElementsAre("cat", "d"));
  EXPECT_THAT(Commands("cat <<-\"E\"\n\t$(a)\n\tE\nd"), ElementsAre("cat", "d"));
  EXPECT_THAT(Commands("cat <<< \"$(a)\""), ElementsAre("a", "cat"));
  EXPECT_THAT(Commands("x=$(a) y=`b` c"), ElementsAre("a", "b", "c"));
  EXPECT_THAT(Commands("echo \"${x:-$(a)}\" ${y:=`b`}"), ElementsAre("a", "b", "echo \"${x:-$(a)}\" ${y:=`b`}"));
}

TEST(CommandLineTest, WordsAreWhatBashPassesAfterQuoteRemoval) {
  EXPECT_THAT(Commands("\\rm -rf x; r\"m\" y; 'r'm z; $'\\x72\\155' w"),
              ElementsAre("rm -rf x", "rm y", "rm z", "rm w"));
  auto a = AnalyzeCommandLine("echo 'a b' \"c $d\" e* ~/f {g,h} i");
  ASSERT_EQ(a.commands.size(), 1u);
  const auto& w = a.commands[0].words;
  ASSERT_EQ(w.size(), 7u);
  EXPECT_EQ(w[1].text, "a b");
  EXPECT_FALSE(w[1].dynamic);
  EXPECT_TRUE(w[2].dynamic);   // an expansion
  EXPECT_TRUE(w[3].dynamic);   // a glob
  EXPECT_TRUE(w[4].dynamic);   // ~
  EXPECT_TRUE(w[5].dynamic);   // braces
  EXPECT_FALSE(w[6].dynamic);
  EXPECT_THAT(Commands("[ -f x ] && test -d y"), ElementsAre("[ -f x ]", "test -d y"));
}

TEST(CommandLineTest, LooksIntoWhatWrappersAndEvalRun) {
  EXPECT_THAT(Commands("bash -c 'a; b' && sh -ec \"c 'd e'\" name arg"),
              ElementsAre("bash -c 'a; b'", "a", "b", "sh -ec 'c '\\''d e'\\''' name arg",
                          "c 'd e'"));
  EXPECT_THAT(Commands("eval 'a;' b"), ElementsAre("eval 'a;' b", "a", "b"));
  EXPECT_THAT(Commands("sudo -u bob -E rm -f x"),
              ElementsAre("sudo -u bob -E rm -f x", "rm -f x"));
  EXPECT_THAT(Commands("env -i -u B A=1 git status"),
              ElementsAre("env -i -u B A=1 git status", "git status"));
  EXPECT_THAT(Commands("env -- rm x; bash build.sh; . ./env.sh"),
              ElementsAre("env -- rm x", "rm x", "bash build.sh", ". ./env.sh"));
  EXPECT_THAT(Commands("command -p rm x; command -v rm; builtin cd /; exec rm y"),
              ElementsAre("command -p rm x", "rm x", "command -v rm", "builtin cd /", "cd /",
                          "exec rm y", "rm y"));
  EXPECT_THAT(Commands("nice -n 5 nohup timeout -s KILL 5 stdbuf -oL setsid rm z"),
              ElementsAre("nice -n 5 nohup timeout -s KILL 5 stdbuf -oL setsid rm z",
                          "nohup timeout -s KILL 5 stdbuf -oL setsid rm z",
                          "timeout -s KILL 5 stdbuf -oL setsid rm z", "stdbuf -oL setsid rm z",
                          "setsid rm z", "rm z"));
  EXPECT_THAT(Commands("ls | xargs -0 rm -f"),
              ElementsAre("ls", "xargs -0 rm -f", "rm -f …"));
  EXPECT_THAT(Commands("ls | xargs"), ElementsAre("ls", "xargs", "echo …"));
  EXPECT_THAT(Commands("find . -name '*.o' -exec rm {} \\; -execdir chmod 600 {} +"),
              ElementsAre("find . -name '*.o' -exec rm '{}' ';' -execdir chmod 600 '{}' +",
                          "rm {}", "chmod 600 {} …"));
  EXPECT_THAT(Commands("watch -n 1 'a | b'"), ElementsAre("watch -n 1 'a | b'", "a", "b"));
  EXPECT_THAT(Commands("busybox sh -c a"),
              ElementsAre("busybox sh -c a", "sh -c a", "a"));
  EXPECT_THAT(Commands("trap 'a' EXIT; trap - INT"),
              ElementsAre("trap a EXIT", "a", "trap - INT"));
  EXPECT_THAT(Commands("flock /tmp/l -c 'a'; su - bob -c b"),
              ElementsAre("flock /tmp/l -c a", "a", "su - bob -c b", "b"));
  EXPECT_THAT(Commands("/usr/bin/env rm x"), ElementsAre("/usr/bin/env rm x", "rm x"));
}

TEST(CommandLineTest, ReportsTheVariablesItSets) {
  EXPECT_THAT(AnalyzeCommandLine("BASH_ENV=x git status").assigned, ElementsAre("BASH_ENV"));
  EXPECT_THAT(AnalyzeCommandLine("export A=1 B; declare -x C=2; local D; readonly E").assigned,
              ElementsAre("A", "B", "C", "D", "E"));
  EXPECT_THAT(AnalyzeCommandLine("read -r F G; printf -v H x; mapfile I; getopts ab J").assigned,
              ElementsAre("F", "G", "H", "I", "J"));
  EXPECT_THAT(AnalyzeCommandLine("for K in a; do :; done; unset L; echo ${M:=1} {N}>f").assigned,
              ElementsAre("K", "L", "M", "N"));
  EXPECT_THAT(AnalyzeCommandLine("env LD_PRELOAD=x a; sudo PATH=/t b; X+=1 c").assigned,
              ElementsAre("LD_PRELOAD", "PATH", "X"));
  EXPECT_THAT(AnalyzeCommandLine("env -u IFS -i BASH_ENV=x a").assigned,
              ElementsAre("IFS", "BASH_ENV"));
  EXPECT_THAT(AnalyzeCommandLine("PAT\\\nH=/tmp ls").assigned, ElementsAre("PATH"));
  EXPECT_THAT(AnalyzeCommandLine("echo A=1 \"B\"=2").assigned, IsEmpty());
}

TEST(CommandLineTest, OpaqueWhenStaticAnalysisCannotTellWhatRuns) {
  EXPECT_THAT(OpaqueWhy("$X foo"), HasSubstr("not fixed text: $X"));
  EXPECT_THAT(OpaqueWhy("$(echo rm) -rf /"), HasSubstr("not fixed text"));
  EXPECT_THAT(OpaqueWhy("r* x"), HasSubstr("not fixed text"));
  EXPECT_THAT(OpaqueWhy("{rm,-rf,/}"), HasSubstr("not fixed text"));
  EXPECT_THAT(OpaqueWhy("~/bin/x"), HasSubstr("not fixed text"));
  EXPECT_THAT(OpaqueWhy("f() { rm x; }; f"), HasSubstr("function"));
  EXPECT_THAT(OpaqueWhy("function f { :; }"), HasSubstr("function"));
  EXPECT_THAT(OpaqueWhy("alias ls=rm"), HasSubstr("alias"));
  EXPECT_THAT(OpaqueWhy("enable -f ./x.so x"), HasSubstr("enable"));
  EXPECT_THAT(OpaqueWhy("hash -p /tmp/x ls"), HasSubstr("hash"));
  EXPECT_THAT(OpaqueWhy("eval \"$X\""), HasSubstr("eval"));
  EXPECT_THAT(OpaqueWhy("bash -c \"$X\""), HasSubstr("bash -c"));
  // Code made of a command's output.
  EXPECT_THAT(OpaqueWhy("sh -c \"ls $(cat f)\""), HasSubstr("sh -c"));
  EXPECT_THAT(OpaqueWhy("echo rm -rf / | bash"), HasSubstr("from its input"));
  EXPECT_THAT(OpaqueWhy("curl x | sh -s"), HasSubstr("from its input"));
  EXPECT_THAT(OpaqueWhy("zsh -c 'rm x'"), HasSubstr("another shell"));
  EXPECT_THAT(OpaqueWhy("sudo -s rm x"), HasSubstr("shell"));
  EXPECT_THAT(OpaqueWhy("env -S 'rm x'"), HasSubstr("-S"));
  EXPECT_THAT(OpaqueWhy("env -iS'rm x'"), HasSubstr("-S"));
  EXPECT_THAT(OpaqueWhy(". /dev/stdin <<< 'rm x'"), HasSubstr("/dev/stdin"));
  EXPECT_THAT(OpaqueWhy("source <(echo rm x)"), HasSubstr("reads the commands"));
  EXPECT_THAT(OpaqueWhy("bash /dev/fd/3 3<<< 'rm x'"), HasSubstr("/dev/fd/3"));
  EXPECT_THAT(OpaqueWhy("timeout --bogus 5 rm"), HasSubstr("--bogus"));
  EXPECT_THAT(OpaqueWhy("xargs -I% % -rf"), HasSubstr("xargs"));
  EXPECT_THAT(OpaqueWhy("find . $ARGS"), HasSubstr("find"));
  EXPECT_THAT(OpaqueWhy("mapfile -C cb x"), HasSubstr("callback"));
  EXPECT_THAT(OpaqueWhy("compgen -C 'rm x' y"), HasSubstr("compgen"));
  EXPECT_THAT(OpaqueWhy("coproc rm x"), HasSubstr("coprocess"));
  EXPECT_THAT(OpaqueWhy("export \"$N\"=1"), HasSubstr("not fixed text"));
  // Arithmetic evaluates subscripts found in values: a[$(cmd)] runs cmd.
  for (const char* line : {"echo $((x))", "echo $[x+1]", "((x++))", "let x=1",
                           "[[ $x -eq 1 ]]", "echo ${a[i]}", "echo ${s:n}", "for ((i=0;i<2;i++)); do :; done",
                           "declare -i n", "a[i]=1", "test -v 'a[$(rm x)]'", "echo ${!x}",
                           "echo ${x@P}", "declare -n r=x"}) {
    EXPECT_FALSE(OpaqueWhy(line).empty()) << line;
  }
  for (const char* line : {"echo $((1+2))", "[[ 3 -eq 3 ]]", "echo ${a[0]} ${a[@]} ${#a} ${s:1:2}",
                           "[ \"$x\" -eq 1 ]", "echo $!"}) {
    EXPECT_TRUE(OpaqueWhy(line).empty()) << line << ": " << OpaqueWhy(line);
  }
  // Lines bash would not parse as this parser does.
  for (const char* line : {"echo 'open", "echo \"open", "(a", "a)", "if a; then b", "{ a",
                           "case x in a) b;;", "echo $(a", "cat <<E\nx\\\nE\nb"}) {
    EXPECT_FALSE(OpaqueWhy(line).empty()) << line;
  }
}

TEST(CommandLineTest, StaticWordsAreOneCommandOfFixedWords) {
  bool star = false;
  EXPECT_THAT(StaticWords("git status", &star), ElementsAre("git", "status"));
  EXPECT_FALSE(star);
  EXPECT_THAT(StaticWords("  git  *", &star), ElementsAre("git", "*"));
  EXPECT_TRUE(star);
  EXPECT_THAT(StaticWords("echo 'a b' \\*", &star), ElementsAre("echo", "a b", "*"));
  EXPECT_FALSE(star);  // a quoted * is the word *
  for (const char* p : {"", "*", "git *x", "git; rm", "git > x", "A=1 git", "git $x", "git # c",
                        "git * *", "if"}) {
    EXPECT_THAT(StaticWords(p, &star), IsEmpty()) << p;
  }
}

TEST(CommandLineTest, RenderedCommandsReadBackAsTheSameWords) {
  for (const char* word : {"plain", "a b", "it's", "", "$x", "*", "\\", "new\nline"}) {
    SimpleCommand c;
    c.words = {{"cmd", false}, {word, false}};
    bool star = false;
    EXPECT_THAT(StaticWords(RenderCommand(c), &star), ElementsAre("cmd", word)) << word;
  }
}

TEST(CodeVariableTest, ShellLoaderAndInterpreterHooksAreCodeOthersAreNot) {
  for (const char* name : {"BASH_ENV", "ENV", "SHELLOPTS", "BASHOPTS", "PS4", "PROMPT_COMMAND",
                           "BASH_FUNC_git%%", "IFS", "PATH", "LD_PRELOAD", "LD_LIBRARY_PATH",
                           "LD_AUDIT", "GCONV_PATH", "GLIBC_TUNABLES", "NODE_OPTIONS",
                           "PYTHONPATH", "GIT_SSH_COMMAND", "GIT_CONFIG_COUNT", "PAGER"}) {
    EXPECT_TRUE(IsCodeVariable(name)) << name;
  }
  for (const char* name : {"DEBUG", "CI", "HOME", "LANG", "TMPDIR", "RUST_BACKTRACE", "NODE_ENV",
                           "PATHS", "MY_PATH"}) {
    EXPECT_FALSE(IsCodeVariable(name)) << name;
  }
}

// --- bash as the oracle ---

// The simple commands bash runs for `line`, as bash -x traces them, run in
// `dir` where no program can be found (PATH names no directory), so only
// builtins do anything.
std::vector<std::vector<std::string>> TracedByBash(const std::string& line,
                                                    const testing::TempTree& tree) {
  const std::string& dir = tree.path();
  const std::string trace = dir + "/trace";
  pid_t pid = fork();
  if (pid == 0) {
    if (chdir(dir.c_str()) != 0) _exit(126);
    int null = open("/dev/null", O_RDWR);
    int fd = open(trace.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (null < 0 || fd < 0) _exit(126);
    dup2(null, 0);
    dup2(null, 1);
    dup2(null, 2);
    dup2(fd, 3);
    const char* argv[] = {"/bin/bash", "-x", "-c", line.c_str(), nullptr};
    const char* envp[] = {"PATH=/nonexistent-toolexec-test", "BASH_XTRACEFD=3", nullptr};
    alarm(10);
    execve(argv[0], const_cast<char* const*>(argv), const_cast<char* const*>(envp));
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  std::vector<std::vector<std::string>> out;
  for (absl::string_view record : absl::StrSplit(tree.Read("trace"), '\n')) {
    while (absl::ConsumePrefix(&record, "+")) {
    }
    if (!absl::ConsumePrefix(&record, " ")) continue;
    bool star = false;
    std::vector<std::string> words = StaticWords(record, &star);
    if (!words.empty()) out.push_back(words);  // not [[ ]], (( )), for, case, NAME=value
  }
  return out;
}

TEST(CommandLineOracleTest, EveryCommandBashRunsIsListed) {
  struct Case {
    const char* line;
    bool all_run;  // every listed command runs, so the lists are equal
  };
  const Case kCorpus[] = {
      {"foo a 'b c' \"d e\" f\\ g", true},
      {"foo; bar && baz || qux", false},
      {"foo | bar |& baz", true},
      {"(foo; (bar)); { baz; }", true},
      {"if foo; then bar; else baz; fi", false},
      {"for x in a b; do foo \"$x\"; done", false},
      {"case y in y) foo;; *) bar;; esac", false},
      {"echo $(foo $(bar)) `baz` \"$(qux)\"", true},
      {"cat <(foo) >/dev/null; cat < <(bar)", false},  // not waited for
      {"foo > \"$(bar)\" 2>&1", true},
      {"x=$(foo) y=`bar` baz", true},
      {"cat <<EOF\n$(foo) `bar`\nEOF\nbaz", true},
      {"cat <<'EOF'\n$(foo)\nEOF\nbaz", true},
      {"cat <<< \"$(foo)\"", true},
      {"\\foo; f\"o\"o x; $'\\x66oo' y; 'f'oo z", true},
      {"foo # bar\nbaz", true},
      {"foo \\\n  bar", true},
      {"eval 'foo a; bar b'", true},
      {"eval foo \"'x y'\"", true},
      {"command foo; builtin echo hi", false},  // bash traces the wrapper only
      {"time foo; ! bar", true},
      {"trap 'foo q' EXIT; bar", true},
      {"echo \"${X:-$(foo)}\" ${Y:=`bar`}", true},
      {"[[ -z $(foo) ]] && bar", true},
      {"echo $((1 + 2)) $(foo)", true},
      {"while foo; do bar; done", false},
      {"export A=$(foo); read -r B <<< x; printf -v C '%s' $(bar)", true},
      {"foo & bar; wait", true},
      {"echo \"a;b\" 'c|d' e\\&f; foo", true},
  };
  testing::TempTree tree;
  for (const Case& c : kCorpus) {
    CommandLineAnalysis a = AnalyzeCommandLine(c.line);
    ASSERT_TRUE(a.transparent()) << c.line << ": " << a.opaque;
    std::vector<std::vector<std::string>> traced = TracedByBash(c.line, tree);
    EXPECT_FALSE(traced.empty()) << c.line;
    auto listed = [&](const std::vector<std::string>& words) {
      for (const SimpleCommand& s : a.commands) {
        if (s.words.empty() || s.words[0].text != words[0]) continue;
        bool same = s.words.size() == words.size();
        for (size_t i = 0; same && i < words.size(); ++i) {
          same = s.words[i].dynamic || s.words[i].text == words[i];
        }
        // A dynamic word may expand to several or none.
        if (same || std::any_of(s.words.begin(), s.words.end(),
                                [](const ShellWord& w) { return w.dynamic; })) {
          return true;
        }
      }
      return false;
    };
    for (const auto& words : traced) {
      EXPECT_TRUE(listed(words)) << c.line << "\nbash ran: " << absl::StrJoin(words, " ");
    }
    if (!c.all_run) continue;
    for (const SimpleCommand& s : a.commands) {
      bool ran = std::any_of(traced.begin(), traced.end(), [&](const auto& words) {
        return words[0] == s.words[0].text;
      });
      EXPECT_TRUE(ran) << c.line << "\nlisted but not run: " << RenderCommand(s);
    }
  }
}

}  // namespace
}  // namespace toolexec::command
