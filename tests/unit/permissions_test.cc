// [Deciding what runs]: permission coverage, grants, suggested grants, and policy evaluation
// (buckets, deny > ask > allow, conditions, profiles), without an engine.
#include "core/permissions.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include "core/policy.h"
#include "tests/unit/builtin/file_test_util.h"
#include "tests/unit/engine_test_util.h"

namespace toolexec {
namespace {

using Kind = PermissionRequirement::Kind;
using ::testing::HasSubstr;

PermissionRequirement Need(Kind kind, std::string value, PermissionLevel level,
                           bool recursive = false) {
  PermissionRequirement r;
  r.kind = kind;
  r.value = std::move(value);
  r.level = level;
  r.recursive = recursive;
  return r;
}

TEST(PermissionLevelTest, OrderedNoneReadWriteExecuteAdmin) {
  EXPECT_LT(PermissionLevel::kNone, PermissionLevel::kRead);
  EXPECT_LT(PermissionLevel::kRead, PermissionLevel::kWrite);
  EXPECT_LT(PermissionLevel::kWrite, PermissionLevel::kExecute);
  EXPECT_LT(PermissionLevel::kExecute, PermissionLevel::kAdmin);
  // A grant covers its level and below, never above.
  auto write = Need(Kind::kPath, "/ws", PermissionLevel::kWrite, true);
  EXPECT_TRUE(Covers(write, Need(Kind::kPath, "/ws/a", PermissionLevel::kRead)));
  EXPECT_TRUE(Covers(write, Need(Kind::kPath, "/ws/a", PermissionLevel::kWrite)));
  EXPECT_FALSE(Covers(write, Need(Kind::kPath, "/ws/a", PermissionLevel::kExecute)));
}

TEST(PathCoversTest, WholeComponentsOnly) {
  EXPECT_TRUE(PathCovers("/a/b", true, "/a/b/c", false));
  EXPECT_FALSE(PathCovers("/a/b", true, "/a/bc", false));
  EXPECT_FALSE(PathCovers("/ws", true, "/ws-evil/x", false));
  EXPECT_FALSE(PathCovers("/ws", false, "/ws-evil", false));
  EXPECT_FALSE(PathCovers("/a/b", true, "/a", false));
}

// Paths longer than a short string's inline buffer: their components are
// compared in the normalized strings, not in freed copies of them.
TEST(PathCoversTest, LongPaths) {
  EXPECT_TRUE(PathCovers("/workspace/projects/toolexec", true,
                         "/workspace/projects/toolexec/src/main.cc", false));
  EXPECT_FALSE(PathCovers("/workspace/projects/toolexec", true,
                          "/workspace/projects/toolexec-evil/x", false));
  EXPECT_TRUE(PathCovers("/home/someone/long-directory-name", false,
                         "/home/someone/long-directory-name/file.txt", false));
  EXPECT_FALSE(PathCovers("/home/someone/long-directory-name", true,
                          "/home/someone/other-directory-name/file.txt", false));
}

TEST(PathCoversTest, RecursiveCoversDescendantsOtherwiseItselfAndDirectChildren) {
  EXPECT_TRUE(PathCovers("/a", false, "/a", false));
  EXPECT_TRUE(PathCovers("/a", false, "/a/b", false));
  EXPECT_FALSE(PathCovers("/a", false, "/a/b/c", false));
  EXPECT_TRUE(PathCovers("/a", true, "/a/b/c/d", false));
  // A need on a whole tree is covered only by a recursive grant above it.
  EXPECT_FALSE(PathCovers("/a", false, "/a/b", true));
  EXPECT_TRUE(PathCovers("/a", true, "/a/b", true));
  // Spelling does not matter; ".." cannot climb out of the grant.
  EXPECT_TRUE(PathCovers("/a/", false, "/a/./b", false));
  EXPECT_FALSE(PathCovers("/a", true, "/a/../etc/passwd", false));
  EXPECT_FALSE(PathCovers("a", true, "/a/b", false));  // relative vs absolute
}

TEST(DomainCoversTest, WildcardCoversDomainAndSubdomains) {
  EXPECT_TRUE(DomainCovers("*.example.com", "example.com"));
  EXPECT_TRUE(DomainCovers("*.example.com", "api.example.com"));
  EXPECT_TRUE(DomainCovers("*.example.com", "a.b.EXAMPLE.com"));
  EXPECT_FALSE(DomainCovers("*.example.com", "badexample.com"));
  EXPECT_FALSE(DomainCovers("*.example.com", "example.com.evil.org"));
  EXPECT_TRUE(DomainCovers("example.com", "example.com"));
  EXPECT_FALSE(DomainCovers("example.com", "api.example.com"));
  EXPECT_TRUE(DomainCovers("*", "anything.org"));
}

TEST(CommandCoversTest, StarCoversTheCommandAndItsArguments) {
  EXPECT_TRUE(CommandCovers("git *", "git"));
  EXPECT_TRUE(CommandCovers("git *", "git status"));
  EXPECT_TRUE(CommandCovers("git *", "  git log -1 "));
  EXPECT_FALSE(CommandCovers("git *", "gitk"));
  EXPECT_FALSE(CommandCovers("git", "git status"));
  EXPECT_TRUE(CommandCovers("git", "git"));
  EXPECT_TRUE(CommandCovers("git status *", "git status --short"));
  EXPECT_FALSE(CommandCovers("git status *", "git stash"));
  EXPECT_TRUE(CommandCovers("*", "rm -rf /tmp/x"));
}

TEST(CommandCoversTest, EveryCommandOfTheLineMustBeCovered) {
  EXPECT_FALSE(CommandCovers("git *", "git --version; touch X"));
  EXPECT_FALSE(CommandCovers("git *", "git log | sh"));
  EXPECT_FALSE(CommandCovers("git *", "git $(touch X)"));
  EXPECT_FALSE(CommandCovers("git *", "sudo git status"));  // sudo runs too
  EXPECT_TRUE(CommandCovers("git *", "git log | git hash-object --stdin && git status"));
  // Words, not text: quoting and spacing change nothing, expansions match
  // only the final *.
  EXPECT_TRUE(CommandCovers("git status", "'git'   \"status\""));
  EXPECT_TRUE(CommandCovers("git log *", "git log $REV"));
  EXPECT_FALSE(CommandCovers("git log", "git log $REV"));
  EXPECT_FALSE(CommandCovers("git log -1", "git log $REV"));
  EXPECT_FALSE(CommandCovers("git *", "/tmp/git status"));
  // A line no analysis sees through, or that runs nothing: only "*".
  for (const char* line : {"$X status", "eval \"$X\"", "f() { :; }; f", "A=1", ""}) {
    EXPECT_FALSE(CommandCovers("git *", line)) << line;
    if (*line != '\0') {
      EXPECT_TRUE(CommandCovers("*", line)) << line;
    }
  }
  // A variable that makes bash or the loader run code, set in the line.
  EXPECT_FALSE(CommandCovers("git *", "BASH_ENV=x git status"));
  EXPECT_FALSE(CommandCovers("git *", "export LD_PRELOAD=x.so; git status"));
  EXPECT_TRUE(CommandCovers("git *", "GIT_AUTHOR_NAME=x git status"));
}

TEST(CommandPatternTest, PatternsAreTheWordsOfOneCommand) {
  for (const char* p : {"git *", "git", "make test", "*", " git  status * ", "echo 'a b'"}) {
    EXPECT_TRUE(CommandPattern::Parse(p).ok()) << p;
  }
  for (const char* p : {"", "git*", "git * x", "git; rm *", "A=1 git", "git > x", "$X *",
                        "git 'open"}) {
    auto parsed = CommandPattern::Parse(p);
    EXPECT_FALSE(parsed.ok()) << p;
    EXPECT_THAT(parsed.status().message(), HasSubstr("only wildcard")) << p;
  }
}

TEST(CommandMayMatchTest, DenyPatternsMatchAnyCommandThatMayBeTheirs) {
  auto rm = *CommandPattern::Parse("rm *");
  auto need = [](std::string line, std::vector<std::string> env = {}) {
    PermissionRequirement r = Need(Kind::kCommand, std::move(line), PermissionLevel::kExecute);
    r.env = std::move(env);
    return AnalyzeCommandNeed(r);
  };
  for (const char* line : {"true && rm x", "/bin/rm x", "\\rm x", "env rm x", "xargs rm",
                           "$CMD x", "bash -c 'rm x'", "eval rm x", "find . -delete -exec rm {} +"}) {
    EXPECT_TRUE(CommandMayMatch(rm, need(line))) << line;
  }
  EXPECT_FALSE(CommandMayMatch(rm, need("ls -l; git rm x")));
  EXPECT_TRUE(CommandMayMatch(rm, need("ls", {"BASH_ENV=$(rm x)"})));
  EXPECT_FALSE(CommandMayMatch(rm, need("ls", {"DEBUG=1"})));
  auto push = *CommandPattern::Parse("git push *");
  EXPECT_TRUE(CommandMayMatch(push, need("git $SUB origin")));
  EXPECT_FALSE(CommandMayMatch(push, need("git pull")));
}

TEST(CommandCoversTest, CodeVariablesInTheNeedsEnvironmentNeedARuleThatNamesThem) {
  auto git = *CommandPattern::Parse("git --version");
  PermissionRequirement n = Need(Kind::kCommand, "git --version", PermissionLevel::kExecute);
  n.env = {"BASH_ENV=$(touch X)", "DEBUG=1"};
  CommandNeed need = AnalyzeCommandNeed(n);
  EXPECT_THAT(need.code_variables, ::testing::ElementsAre("BASH_ENV"));
  EXPECT_FALSE(CommandCovers({&git}, need));
  EXPECT_TRUE(CommandCovers({&git}, need, {"BASH_ENV"}));
  EXPECT_THAT(DescribeNeed(n), HasSubstr("git --version (with environment "
                                         "BASH_ENV='$(touch X)' DEBUG=1) [it sets BASH_ENV"));
  GrantSet grants;
  grants.Add({Need(Kind::kCommand, "git *", PermissionLevel::kExecute)});
  EXPECT_FALSE(grants.Covers(n, absl::Now()));
  n.env = {"DEBUG=1"};
  EXPECT_TRUE(grants.Covers(n, absl::Now()));
}

TEST(CoversTest, ToolTargetsAndKindsMustAgree) {
  EXPECT_TRUE(Covers(Need(Kind::kTool, "get_weather", PermissionLevel::kExecute),
                     Need(Kind::kTool, "get_weather", PermissionLevel::kExecute)));
  EXPECT_FALSE(Covers(Need(Kind::kTool, "get_weather", PermissionLevel::kExecute),
                      Need(Kind::kTool, "counter", PermissionLevel::kRead)));
  EXPECT_FALSE(Covers(Need(Kind::kCommand, "*", PermissionLevel::kAdmin),
                      Need(Kind::kTool, "run_command", PermissionLevel::kRead)));
}

TEST(GrantSetTest, ExpiredGrantsStopCovering) {
  GrantSet grants;
  absl::Time now = absl::Now();
  grants.Add({Need(Kind::kCommand, "git *", PermissionLevel::kExecute), now + absl::Seconds(10)});
  auto need = Need(Kind::kCommand, "git status", PermissionLevel::kExecute);
  EXPECT_TRUE(grants.Covers(need, now));
  EXPECT_FALSE(grants.Covers(need, now + absl::Seconds(11)));
  EXPECT_FALSE(grants.Covers(need, now));  // dropped
}

TEST(GrantSetTest, ALineIsCoveredWhenEachCommandIsCoveredByOneGrant) {
  GrantSet grants;
  grants.Add({Need(Kind::kCommand, "git *", PermissionLevel::kExecute)});
  auto line = Need(Kind::kCommand, "git diff | grep -c x", PermissionLevel::kExecute);
  EXPECT_FALSE(grants.Covers(line, absl::Now()));
  grants.Add({Need(Kind::kCommand, "grep *", PermissionLevel::kRead)});
  EXPECT_FALSE(grants.Covers(line, absl::Now()));  // a grant below the need's level
  grants.Add({Need(Kind::kCommand, "grep *", PermissionLevel::kExecute)});
  EXPECT_TRUE(grants.Covers(line, absl::Now()));
  EXPECT_FALSE(grants.Covers(Need(Kind::kCommand, "git diff | $PAGER", PermissionLevel::kExecute),
                             absl::Now()));
}

TEST(SuggestGrantsTest, PathsByParentCommandsByFirstWord) {
  std::vector<PermissionRequirement> needs = {
      Need(Kind::kPath, "/ws/src/a.cc", PermissionLevel::kRead),
      Need(Kind::kCommand, "git status", PermissionLevel::kExecute),
      Need(Kind::kPath, "/ws/src/b.cc", PermissionLevel::kWrite),
      Need(Kind::kCommand, "git log -1", PermissionLevel::kExecute),
      Need(Kind::kPath, "/ws/docs", PermissionLevel::kRead, /*recursive=*/true),
  };
  auto grants = SuggestGrants(needs);
  ASSERT_EQ(grants.size(), 3u);
  EXPECT_EQ(grants[0].target.value, "/ws/src");
  EXPECT_FALSE(grants[0].target.recursive);
  EXPECT_EQ(grants[0].target.level, PermissionLevel::kWrite);  // the highest member
  EXPECT_THAT(grants[0].members, ::testing::ElementsAre(0u, 2u));
  EXPECT_EQ(grants[1].target.value, "git *");
  EXPECT_THAT(grants[1].members, ::testing::ElementsAre(1u, 3u));
  EXPECT_EQ(grants[2].target.value, "/ws/docs");
  EXPECT_TRUE(grants[2].target.recursive);
  // Each suggestion covers what it groups.
  for (const auto& g : grants) {
    for (size_t m : g.members) EXPECT_TRUE(Covers(g.target, needs[m])) << needs[m].value;
  }
}

TEST(SuggestGrantsTest, ALineAsksForEachCommandItRuns) {
  std::vector<PermissionRequirement> needs = {
      Need(Kind::kCommand, "git --version; touch X", PermissionLevel::kExecute),
      Need(Kind::kCommand, "git log | 'my tool' -x", PermissionLevel::kExecute),
      Need(Kind::kCommand, "$X y", PermissionLevel::kExecute),
  };
  auto grants = SuggestGrants(needs);
  ASSERT_EQ(grants.size(), 4u);
  EXPECT_EQ(grants[0].target.value, "git *");
  EXPECT_THAT(grants[0].members, ::testing::ElementsAre(0u, 1u));
  EXPECT_EQ(grants[1].target.value, "touch *");
  EXPECT_EQ(grants[2].target.value, "'my tool' *");
  EXPECT_EQ(grants[3].target.value, "$X y");  // no pattern can cover it: as itself
  EXPECT_THAT(DescribeNeed(needs[2]), HasSubstr("cannot tell what this line runs"));
}

// ---- policies ----

using testing::PathRule;
using testing::Rule;

std::shared_ptr<const Policy> Make(std::vector<PolicyRuleOptions> rules,
                                   std::optional<PolicyDecision> def = std::nullopt) {
  auto p = Policy::Create({"test", def, std::move(rules)});
  EXPECT_TRUE(p.ok()) << p.status();
  return *p;
}

CallFacts Facts(std::string tool, std::vector<PermissionRequirement> needs = {},
                std::string server = "") {
  CallFacts f;
  f.tool = std::move(tool);
  f.server_name = std::move(server);
  f.needs = std::move(needs);
  f.workspaces = {"/ws"};
  return f;
}

TEST(PolicyTest, DefaultIsAllowWithoutRules) {
  auto p = Make({});
  EXPECT_TRUE(p->allows_everything());
  EXPECT_EQ(p->Evaluate(Facts("run_command")).decision, PolicyDecision::kAllow);
  auto deny = Make({}, PolicyDecision::kDeny);
  PolicyVerdict v = deny->Evaluate(Facts("x"));
  EXPECT_EQ(v.decision, PolicyDecision::kDeny);
  EXPECT_EQ(v.Explain(), "the default decision of policy 'test'");
}

TEST(PolicyTest, ReadOnlyToolsAreJudgedByTheToolTheNameHasNow) {
  PolicyProfileOptions o{"read_only", PolicyDecision::kDeny, {}};
  o.allow_read_only_tools = true;
  auto p = Policy::Create(o);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_FALSE((*p)->allows_everything());
  CallFacts reader = Facts("lookup");
  reader.read_only = true;
  PolicyVerdict v = (*p)->Evaluate(reader);
  EXPECT_EQ(v.decision, PolicyDecision::kAllow);
  EXPECT_EQ(v.rule, "read-only tool");
  // The same name, now another (e.g. an MCP server's) tool that writes.
  CallFacts writer = Facts("lookup");
  writer.read_only = false;
  v = (*p)->Evaluate(writer);
  EXPECT_EQ(v.decision, PolicyDecision::kDeny);
  EXPECT_EQ(v.Explain(), "the default decision of policy 'read_only'");
}

TEST(PolicyTest, SpecificBeatsPrefixBeatsGlobal) {
  auto p = Make({Rule("all", "*", PolicyDecision::kDeny),
                 Rule("github", "github/*", PolicyDecision::kAsk),
                 Rule("issues", "list_issues", PolicyDecision::kAllow)});
  EXPECT_EQ(p->Evaluate(Facts("list_issues", {}, "github")).rule, "issues");
  EXPECT_EQ(p->Evaluate(Facts("list_issues", {}, "github")).decision, PolicyDecision::kAllow);
  EXPECT_EQ(p->Evaluate(Facts("create_issue", {}, "github")).decision, PolicyDecision::kAsk);
  EXPECT_EQ(p->Evaluate(Facts("run_command")).decision, PolicyDecision::kDeny);
  EXPECT_EQ(p->Evaluate(Facts("run_command")).rule, "all");
}

TEST(PolicyTest, WithinABucketDenyBeatsAskBeatsAllow) {
  auto p = Make({Rule("a", "run_command", PolicyDecision::kAllow),
                 Rule("q", "run_command", PolicyDecision::kAsk),
                 Rule("d", "run_command", PolicyDecision::kDeny)});
  EXPECT_EQ(p->Evaluate(Facts("run_command")).rule, "d");
  auto p2 = Make({Rule("a", "*", PolicyDecision::kAllow), Rule("q", "*", PolicyDecision::kAsk)});
  EXPECT_EQ(p2->Evaluate(Facts("x")).decision, PolicyDecision::kAsk);
}

TEST(PolicyTest, ConditionsNarrowARule) {
  PolicyRuleOptions rm = Rule("no rm", "run_command", PolicyDecision::kDeny);
  rm.command_pattern = "rm *";
  PolicyRuleOptions env = Rule("no env files", "*", PolicyDecision::kDeny);
  env.path_glob = "*.env";
  PolicyRuleOptions out = Rule("outside", "*", PolicyDecision::kAsk);
  out.outside_workspace = true;
  PolicyRuleOptions web = Rule("web", "*", PolicyDecision::kAsk);
  web.domain = "*.example.com";
  auto p = Make({rm, env, out, web});
  auto cmd = [](std::string c) { return Need(Kind::kCommand, c, PermissionLevel::kExecute); };
  auto path = [](std::string v) { return Need(Kind::kPath, v, PermissionLevel::kRead); };
  EXPECT_EQ(p->Evaluate(Facts("run_command", {cmd("rm -rf x")})).rule, "no rm");
  EXPECT_EQ(p->Evaluate(Facts("run_command", {cmd("ls")})).decision, PolicyDecision::kAllow);
  EXPECT_EQ(p->Evaluate(Facts("view_file", {path("/ws/app/prod.env")})).rule, "no env files");
  EXPECT_EQ(p->Evaluate(Facts("view_file", {path("/ws/app/main.cc")})).decision,
            PolicyDecision::kAllow);
  // Antigravity's case: /ws-evil is not inside /ws.
  EXPECT_EQ(p->Evaluate(Facts("view_file", {path("/ws-evil/x")})).rule, "outside");
  EXPECT_EQ(p->Evaluate(Facts("fetch", {Need(Kind::kDomain, "api.example.com",
                                             PermissionLevel::kRead)})).rule,
            "web");
}

TEST(PolicyTest, AllowRulesCoverEveryCommandDenyRulesAnyAndSayWhenTheyCannotSee) {
  PolicyRuleOptions make = Rule("make", "run_command", PolicyDecision::kAllow);
  make.command_pattern = "make *";
  make.allow_code_env = {"LD_LIBRARY_PATH"};
  PolicyRuleOptions rm = Rule("no rm", "run_command", PolicyDecision::kDeny);
  rm.command_pattern = "rm *";
  auto p = Make({make, rm}, PolicyDecision::kAsk);
  auto cmd = [](std::string c, std::vector<std::string> env = {}) {
    auto n = Need(Kind::kCommand, std::move(c), PermissionLevel::kExecute);
    n.env = std::move(env);
    return n;
  };
  EXPECT_EQ(p->Evaluate(Facts("run_command", {cmd("make test")})).rule, "make");
  EXPECT_EQ(p->Evaluate(Facts("run_command", {cmd("make test", {"LD_LIBRARY_PATH=lib"})})).rule,
            "make");
  // A variable no allow rule vouches for may make it run anything: rm too.
  PolicyVerdict preload =
      p->Evaluate(Facts("run_command", {cmd("make test", {"LD_PRELOAD=x.so"})}));
  EXPECT_EQ(preload.rule, "no rm");
  EXPECT_THAT(preload.Explain(), HasSubstr("it sets LD_PRELOAD"));
  EXPECT_EQ(p->Evaluate(Facts("run_command", {cmd("make test && curl x")})).decision,
            PolicyDecision::kAsk);
  PolicyVerdict v = p->Evaluate(Facts("run_command", {cmd("make; rm -rf /")}));
  EXPECT_EQ(v.rule, "no rm");
  EXPECT_TRUE(v.note.empty());
  v = p->Evaluate(Facts("run_command", {cmd("$(echo rm) -rf /")}));
  EXPECT_EQ(v.rule, "no rm");
  EXPECT_THAT(v.Explain(), HasSubstr("cannot tell what this line runs"));
}

TEST(PolicyTest, AnAllowPathRuleCoversACallOnlyWhenItCoversEveryPathOfIt) {
  auto p = Make({PathRule("sources", "apply_patch", PolicyDecision::kAllow, "src/**"),
                 PathRule("no env files", "*", PolicyDecision::kDeny, "*.env"),
                 PathRule("docs need a yes", "*", PolicyDecision::kAsk, "docs/**")},
                PolicyDecision::kDeny);
  auto write = [](std::string v) { return Need(Kind::kPath, v, PermissionLevel::kWrite); };
  EXPECT_EQ(p->Evaluate(Facts("apply_patch", {write("/ws/src/ok.txt"), write("/ws/src/b/c.h")}))
                .rule,
            "sources");
  // One path the allow rule does not name: the rule does not allow the call.
  PolicyVerdict v = p->Evaluate(
      Facts("apply_patch", {write("/ws/src/ok.txt"), write("/ws/.github/workflows/evil.yml")}));
  EXPECT_EQ(v.decision, PolicyDecision::kDeny);
  EXPECT_EQ(v.rule, "");
  // A call with no path at all is not allowed by a path rule either.
  EXPECT_EQ(p->Evaluate(Facts("apply_patch")).rule, "");
  // Deny and ask rules match when any one path does.
  EXPECT_EQ(p->Evaluate(Facts("view_file", {write("/ws/a.txt"), write("/ws/app/prod.env")})).rule,
            "no env files");
  EXPECT_EQ(p->Evaluate(Facts("view_file", {write("/ws/a.txt"), write("/ws/docs/x.md")})).rule,
            "docs need a yes");
}

TEST(PolicyTest, PathGlobsAreRelativeToTheDaemonsWorkspaceRootWhateverTheSessionsRoot) {
  auto p = Make({PathRule("private", "*", PolicyDecision::kDeny, "private/**")});
  auto read = [](std::string v) { return Need(Kind::kPath, v, PermissionLevel::kRead); };
  CallFacts f = Facts("view_file", {read("/ws/private/secret.txt")});
  f.workspaces = {"/ws/private"};  // the session's root
  f.roots = {"/ws"};               // the daemon's
  EXPECT_EQ(p->Evaluate(f).rule, "private");
  f.needs = {read("/ws/public/private/x")};
  EXPECT_EQ(p->Evaluate(f).decision, PolicyDecision::kAllow);
  // Outside the root: the absolute path.
  f.needs = {read("/etc/passwd")};
  EXPECT_EQ(Make({PathRule("etc", "*", PolicyDecision::kDeny, "/etc/**")})->Evaluate(f).rule,
            "etc");
}

TEST(PolicyTest, AWalkLeavesOutTheFilesAPathRuleDeniesOrAsksAboutUngranted) {
  // A default decision and a rule without a path judge the call, not its files.
  PolicyChain chain = {Make({PathRule("no env files", "*", PolicyDecision::kDeny, "*.env"),
                             PathRule("keys need a yes", "*", PolicyDecision::kAsk, "keys/**"),
                             Rule("searches need a yes", "grep_search", PolicyDecision::kAsk)},
                            PolicyDecision::kAsk)};
  CallFacts walk = Facts("view_file");
  walk.roots = {"/ws"};
  EXPECT_TRUE(LeftOutByPolicy(chain, walk, nullptr, "/ws/app/prod.env"));
  EXPECT_TRUE(LeftOutByPolicy(chain, walk, nullptr, "/ws/keys/id"));
  EXPECT_FALSE(LeftOutByPolicy(chain, walk, nullptr, "/ws/app/main.cc"));
  GrantSet grants;
  grants.Add({Need(Kind::kPath, "/ws/keys", PermissionLevel::kRead, true)});
  EXPECT_FALSE(LeftOutByPolicy(chain, walk, &grants, "/ws/keys/id"));
  EXPECT_TRUE(LeftOutByPolicy(chain, walk, &grants, "/ws/keys/prod.env"));
  // The specific rule beats the global ones for its tool, as for the call.
  CallFacts grep = walk;
  grep.tool = "grep_search";
  EXPECT_FALSE(LeftOutByPolicy(chain, grep, nullptr, "/ws/app/prod.env"));
}

TEST(ResolvePathTest, FollowsEveryLinkUpToWhatDoesNotExistYet) {
  testing::TempTree tree;
  tree.Write("private/secrets.env", "K=V\n");
  tree.Mkdir("a/b");
  tree.Mkdir("docs");
  ASSERT_EQ(symlink("../private/secrets.env", tree.Abs("docs/link.txt").c_str()), 0);
  ASSERT_EQ(symlink(tree.Abs("private").c_str(), tree.Abs("abs").c_str()), 0);
  ASSERT_EQ(symlink("a/b", tree.Abs("ab").c_str()), 0);
  ASSERT_EQ(symlink("nowhere/x.env", tree.Abs("dangling").c_str()), 0);
  ASSERT_EQ(symlink("loop", tree.Abs("loop").c_str()), 0);
  const std::string root = tree.path();
  EXPECT_EQ(ResolvePath(root + "/docs/link.txt"), root + "/private/secrets.env");
  EXPECT_EQ(ResolvePath(root + "/abs/new/file"), root + "/private/new/file");
  // ".." after a link climbs from where it leads, as the kernel does.
  EXPECT_EQ(ResolvePath(root + "/ab/../secrets.env"), root + "/a/secrets.env");
  EXPECT_EQ(ResolvePath(root + "/dangling"), root + "/nowhere/x.env");
  EXPECT_EQ(ResolvePath(root + "/./a//b/"), root + "/a/b");
  EXPECT_EQ(ResolvePath(root + "/loop/x"), root + "/loop/x");  // gives up, lexically
  EXPECT_EQ(ResolvePath("rel/../x"), "x");
}

TEST(PolicyTest, ChainTakesTheStrictestDecision) {
  PolicyChain chain = {Make({Rule("ok", "*", PolicyDecision::kAllow)}),
                       Make({Rule("ask shell", "run_command", PolicyDecision::kAsk)})};
  EXPECT_EQ(EvaluateChain(chain, Facts("run_command")).decision, PolicyDecision::kAsk);
  EXPECT_EQ(EvaluateChain(chain, Facts("view_file")).decision, PolicyDecision::kAllow);
}

TEST(PolicyOptionsTest, InvalidRulesAndProfilesAreRefusedByName) {
  PolicyOptions o;
  o.rules.push_back(Rule("", "*", PolicyDecision::kDeny));
  EXPECT_THAT(ValidatePolicyOptions(o).message(), HasSubstr("has no name"));
  o.rules = {Rule("r", "git*hub", PolicyDecision::kDeny)};
  EXPECT_THAT(ValidatePolicyOptions(o).message(), HasSubstr("rule 'r'"));
  PolicyRuleOptions glob = Rule("g", "*", PolicyDecision::kDeny);
  glob.path_glob = "[unclosed";
  o.rules = {glob};
  EXPECT_THAT(ValidatePolicyOptions(o).message(), HasSubstr("path_glob"));
  PolicyRuleOptions pattern = Rule("p", "run_command", PolicyDecision::kDeny);
  pattern.command_pattern = "rm -rf*";
  o.rules = {pattern};
  EXPECT_THAT(ValidatePolicyOptions(o).message(), HasSubstr("command_pattern"));
  PolicyRuleOptions code = Rule("c", "run_command", PolicyDecision::kDeny);
  code.command_pattern = "make *";
  code.allow_code_env = {"LD_LIBRARY_PATH"};
  o.rules = {code};
  EXPECT_THAT(ValidatePolicyOptions(o).message(), HasSubstr("allow rule"));
  code.decision = PolicyDecision::kAllow;
  code.allow_code_env = {"DEBUG"};
  o.rules = {code};
  EXPECT_THAT(ValidatePolicyOptions(o).message(), HasSubstr("needs no permission"));
  code.allow_code_env = {"LD_LIBRARY_PATH"};
  o.rules = {code};
  EXPECT_TRUE(ValidatePolicyOptions(o).ok());
  o.rules = {};
  o.profiles = {{"read_only", std::nullopt, {}}};
  EXPECT_THAT(ValidatePolicyOptions(o).message(), HasSubstr("built in"));
  o.profiles = {{"ci", std::nullopt, {}}, {"ci", std::nullopt, {}}};
  EXPECT_THAT(ValidatePolicyOptions(o).message(), HasSubstr("declared twice"));
  o.profiles = {{"ci", std::nullopt, {}}};
  EXPECT_TRUE(ValidatePolicyOptions(o).ok());
}

}  // namespace
}  // namespace toolexec
