// bench_grep: grep_search (through the tool API: registry + ToolRunner, as the
// daemon runs it) against ripgrep on the same tree and queries, in the same
// run, interleaved, best of N wall times (docs/DESIGN.md "What fast means":
// within 1.5x of ripgrep over a 170 MB, 11k-file tree).
//
// Both must find the same files (and, in count mode, the same per-file line
// counts); any difference exits 1. Timings are reported, never asserted.
//
//   bench_grep [--quick] [--runs N] [DIR...]     (default DIR: /usr/include)
//
// ripgrep is run as `rg --no-config --no-ignore-global --no-ignore-parent
// --no-require-git --no-messages <mode> PATTERN DIR...`, so it applies the
// same rules as grep_search: .gitignore/.ignore inside the tree (also outside a
// git repository), hidden files and binaries skipped, symlinks not followed.
// Exit codes: 0 ok, 1 results differ or a call failed, 2 usage, 77 rg missing
// (ctest's SKIP_RETURN_CODE).
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "tools/builtin.h"
#include "tools/workspace/confined.h"
#include "tools/runtime/json.h"
#include "tools/runtime/tool_registry.h"
#include "tools/runtime/tool_runner.h"

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;
using Counts = std::map<std::string, uint64_t>;  // path -> matching lines (1 in files mode)

struct Query {
  std::string name;
  std::string pattern;
  std::string mode;  // files_with_matches | count
  bool case_insensitive = false;
};

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

double CpuMs(const struct rusage& ru) {
  return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
         (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}

// CPU time (user + system) this process has used so far, in ms.
double SelfCpuMs() {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return CpuMs(ru);
}

// Runs argv, returns its stdout; *status gets the wait status and *cpu_ms
// the child's CPU time.
std::string RunProcess(const std::vector<std::string>& args, int* status,
                       double* cpu_ms = nullptr) {
  int pipefd[2];
  if (pipe(pipefd) != 0) {
    *status = -1;
    return "";
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipefd[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, pipefd[0]);
  posix_spawn_file_actions_addclose(&actions, pipefd[1]);
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(pipefd[1]);
  std::string out;
  if (rc == 0) {
    char buf[1 << 16];
    for (;;) {
      const ssize_t n = read(pipefd[0], buf, sizeof buf);
      if (n <= 0) break;
      out.append(buf, static_cast<size_t>(n));
    }
  }
  close(pipefd[0]);
  if (rc != 0) {
    *status = -1;
    return "";
  }
  struct rusage ru;
  wait4(pid, status, 0, &ru);
  if (cpu_ms != nullptr) *cpu_ms = CpuMs(ru);
  return out;
}

bool HaveRipgrep() {
  int status = 0;
  RunProcess({"rg", "--version"}, &status);
  return status == 0;
}

// The deepest directory containing every one of `dirs`.
std::string CommonAncestor(const std::vector<std::string>& dirs) {
  std::vector<std::string> common;
  bool first = true;
  for (const std::string& d : dirs) {
    std::vector<std::string> parts = absl::StrSplit(d, '/', absl::SkipEmpty());
    if (first) {
      common = parts;
      first = false;
      continue;
    }
    size_t n = 0;
    while (n < common.size() && n < parts.size() && common[n] == parts[n]) ++n;
    common.resize(n);
  }
  return "/" + absl::StrJoin(common, "/");
}

struct Tree {
  uint64_t files = 0;
  uint64_t bytes = 0;
};

// What ripgrep and grep_search would walk: no hidden entries, no symlinks.
Tree Measure(const std::vector<std::string>& dirs) {
  Tree t;
  namespace fs = std::filesystem;
  for (const std::string& d : dirs) {
    std::error_code ec;
    for (auto it =
             fs::recursive_directory_iterator(d, fs::directory_options::skip_permission_denied, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      const std::string name = it->path().filename().string();
      if (!name.empty() && name[0] == '.') {
        if (it->is_directory(ec)) it.disable_recursion_pending();
        continue;
      }
      if (it->is_symlink(ec)) continue;
      if (it->is_regular_file(ec)) {
        ++t.files;
        t.bytes += it->file_size(ec);
      }
    }
  }
  return t;
}

class Bench {
 public:
  Bench(std::vector<std::string> dirs, int runs) : dirs_(std::move(dirs)), runs_(runs) {
    workspace_ = CommonAncestor(dirs_);
    toolexec::BuiltinOptions options;
    options.search_max_results = 1u << 30;  // every file: the sets are compared
    if (absl::Status s = toolexec::RegisterSearchTools(registry_, options); !s.ok()) {
      fprintf(stderr, "register: %s\n", s.ToString().c_str());
      exit(1);
    }
    toolexec::ToolRunner::Options ro;
    auto root = toolexec::fs::ConfinedRoot::Open(workspace_);
    if (!root.ok()) {
      fprintf(stderr, "workspace: %s\n", root.status().ToString().c_str());
      exit(1);
    }
    ro.default_workspace = *root;
    runner_ = std::make_unique<toolexec::ToolRunner>(&registry_, ro);
  }

  // grep_search over every dir (one concurrent batch, one call per dir).
  bool RunTool(const Query& q, Counts* out) {
    toolexec::BatchRequest req;
    for (const std::string& d : dirs_) {
      std::string path = d.size() > workspace_.size() ? d.substr(workspace_.size()) : ".";
      while (!path.empty() && path.front() == '/') path.erase(0, 1);
      toolexec::Json args = toolexec::MakeObject();
      auto& a = args.GetAllocator();
      args.AddMember("pattern", toolexec::JsonValue(q.pattern.c_str(), a), a);
      args.AddMember("path", toolexec::JsonValue(path.c_str(), a), a);
      args.AddMember("output_mode", toolexec::JsonValue(q.mode.c_str(), a), a);
      args.AddMember("case_insensitive", q.case_insensitive, a);
      toolexec::CallRequest call;
      call.id = path;
      call.name = "grep_search";
      call.args = std::move(args);
      req.calls.push_back(std::move(call));
    }
    auto results = runner_->Run(std::move(req));
    if (!results.ok()) {
      fprintf(stderr, "grep_search batch: %s\n", results.status().ToString().c_str());
      return false;
    }
    const std::string prefix = workspace_ == "/" ? "/" : workspace_ + "/";
    for (const toolexec::ToolCallResult& r : *results) {
      if (!r.ok()) {
        fprintf(stderr, "grep_search failed: %s\n", r.error_message.c_str());
        return false;
      }
      if (r.payload["truncated"].GetBool()) {
        fprintf(stderr, "grep_search truncated its result\n");
        return false;
      }
      if (q.mode == "count") {
        for (const auto& c : r.payload["counts"].GetArray()) {
          (*out)[prefix + c["file"].GetString()] = c["count"].GetUint64();
        }
      } else {
        for (const auto& f : r.payload["files"].GetArray()) (*out)[prefix + f.GetString()] = 1;
      }
    }
    return true;
  }

  bool RunRipgrep(const Query& q, Counts* out, double* cpu_ms = nullptr) {
    std::vector<std::string> args = {"rg",
                                     "--no-config",
                                     "--no-ignore-global",
                                     "--no-ignore-parent",
                                     "--no-require-git",
                                     "--no-messages"};
    args.push_back(q.mode == "count" ? "--count" : "--files-with-matches");
    if (q.case_insensitive) args.push_back("--ignore-case");
    args.push_back("--regexp");
    args.push_back(q.pattern);
    for (const std::string& d : dirs_) args.push_back(d);
    int status = 0;
    const std::string text = RunProcess(args, &status, cpu_ms);
    // rg exits 1 when nothing matched.
    if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) > 1) {
      fprintf(stderr, "rg failed (status %d)\n", status);
      return false;
    }
    for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
      if (q.mode == "count") {
        const size_t colon = line.rfind(':');
        (*out)[std::string(line.substr(0, colon))] =
            std::stoull(std::string(line.substr(colon + 1)));
      } else {
        (*out)[std::string(line)] = 1;
      }
    }
    return true;
  }

  // Returns false if the results differ or a run failed.
  bool Measure(const Query& q) {
    Counts tool_result;
    Counts rg_result;
    // Warm-up (page cache, lazily built state), untimed.
    if (!RunTool(q, &tool_result) || !RunRipgrep(q, &rg_result)) return false;
    double best_tool = 1e18;
    double best_rg = 1e18;
    double cpu_tool = 1e18;
    double cpu_rg = 1e18;
    for (int i = 0; i < runs_; ++i) {
      Counts a;
      Counts b;
      const double c0 = SelfCpuMs();
      auto t0 = Clock::now();
      if (!RunTool(q, &a)) return false;
      auto t1 = Clock::now();
      const double c1 = SelfCpuMs();
      double rg_cpu = 0;
      if (!RunRipgrep(q, &b, &rg_cpu)) return false;
      auto t2 = Clock::now();
      best_tool = std::min(best_tool, Ms(t1 - t0));
      best_rg = std::min(best_rg, Ms(t2 - t1));
      cpu_tool = std::min(cpu_tool, c1 - c0);
      cpu_rg = std::min(cpu_rg, rg_cpu);
      if (a != tool_result || b != rg_result) {
        fprintf(stderr, "%s: results changed between runs\n", q.name.c_str());
        return false;
      }
    }
    uint64_t lines = 0;
    for (const auto& [path, n] : tool_result) lines += n;
    printf(
        "%-34s %-18s %6zu files %-11s wall: grep_search %7.1f ms  rg %7.1f ms  ratio %.2f"
        " | cpu: %7.1f ms vs %7.1f ms\n",
        q.name.c_str(), q.mode.c_str(), tool_result.size(),
        q.mode == "count" ? absl::StrCat(lines, " lines").c_str() : "", best_tool, best_rg,
        best_tool / best_rg, cpu_tool, cpu_rg);
    if (tool_result != rg_result) {
      int shown = 0;
      for (const auto& [path, n] : tool_result) {
        auto it = rg_result.find(path);
        if (it == rg_result.end() || it->second != n) {
          if (shown++ < 10)
            fprintf(stderr, "  only/different in grep_search: %s (%llu)\n", path.c_str(),
                    static_cast<unsigned long long>(n));
        }
      }
      for (const auto& [path, n] : rg_result) {
        auto it = tool_result.find(path);
        if (it == tool_result.end() || it->second != n) {
          if (shown++ < 20)
            fprintf(stderr, "  only/different in rg: %s (%llu)\n", path.c_str(),
                    static_cast<unsigned long long>(n));
        }
      }
      fprintf(stderr, "%s: grep_search and rg found different results (%zu vs %zu files)\n",
              q.name.c_str(), tool_result.size(), rg_result.size());
      return false;
    }
    ratios_.push_back(best_tool / best_rg);
    return true;
  }

  const std::vector<double>& ratios() const { return ratios_; }
  const std::string& workspace() const { return workspace_; }

 private:
  std::vector<std::string> dirs_;
  int runs_;
  std::string workspace_;
  toolexec::ToolRegistry registry_;
  std::unique_ptr<toolexec::ToolRunner> runner_;
  std::vector<double> ratios_;
};

}  // namespace

int main(int argc, char** argv) {
  // As toolexecd's main does: Debian's abseil checks every Mutex acquisition
  // for lock-order cycles, which production turns off; measure what it runs.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  bool quick = false;
  int runs = 5;
  std::vector<std::string> dirs;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--quick") {
      quick = true;
    } else if (arg == "--runs" && i + 1 < argc) {
      runs = std::max(1, atoi(argv[++i]));
    } else if (arg == "--help" || arg == "-h" || (!arg.empty() && arg[0] == '-')) {
      fprintf(stderr, "usage: bench_grep [--quick] [--runs N] [DIR...]  (default /usr/include)\n");
      return 2;
    } else {
      std::error_code ec;
      const std::filesystem::path p = std::filesystem::canonical(arg, ec);
      if (ec || !std::filesystem::is_directory(p)) {
        fprintf(stderr, "not a directory: %s\n", arg.c_str());
        return 2;
      }
      dirs.push_back(p.string());
    }
  }
  if (dirs.empty()) dirs.push_back("/usr/include");
  if (quick) runs = 1;
  if (!HaveRipgrep()) {
    fprintf(stderr, "rg (Debian's ripgrep) is not installed; nothing to compare with\n");
    return 77;
  }

  const Tree tree = Measure(dirs);
  printf("tree: %s (%llu files, %.1f MB); workspace %s; %u hardware threads; best of %d\n",
         absl::StrJoin(dirs, " ").c_str(), static_cast<unsigned long long>(tree.files),
         static_cast<double>(tree.bytes) / 1e6, CommonAncestor(dirs).c_str(),
         std::thread::hardware_concurrency(), runs);

  std::vector<Query> queries = {
      {"literal PATH_MAX", "PATH_MAX", "files_with_matches", false},
      {"regex \\bstd::[a-z_]+_ptr<", "\\bstd::[a-z_]+_ptr<", "files_with_matches", false},
      {"regex \\bstd::[a-z_]+_ptr< (count)", "\\bstd::[a-z_]+_ptr<", "count", false},
  };
  if (!quick) {
    queries.push_back({"literal -i path_max", "path_max", "files_with_matches", true});
    queries.push_back({"regex [A-Z]{20} (no literal)", "[A-Z]{20}", "files_with_matches", false});
    queries.push_back({"no match zQxJvW", "zQxJvW", "files_with_matches", false});
  }
  Bench bench(dirs, runs);
  bool ok = true;
  for (const Query& q : queries) ok = bench.Measure(q) && ok;
  if (!bench.ratios().empty()) {
    const double worst = *std::max_element(bench.ratios().begin(), bench.ratios().end());
    printf("worst ratio grep_search/rg: %.2f (goal <= 0.80: %s)\n", worst,
           worst <= 0.80 ? "met" : "NOT met");
  }
  if (!ok) {
    fprintf(stderr, "FAILED: grep_search and rg disagree (or a run failed)\n");
    return 1;
  }
  printf("results identical to rg\n");
  return 0;
}
