// bench_checkpoint: the checkpoint store against git on the same tree, in the
// same run, interleaved (docs/DESIGN.md "What fast means"):
//   - after 3 files of a 10,000-file, ~200 MB tree changed: a checkpoint vs
//     `git add -A && git write-tree` in an identical copy that git has indexed
//     once (goal: <= 0.5x);
//   - the first checkpoint of the whole tree vs `git add -A` in a fresh copy
//     (goal: <= 1.5x).
// git runs as a process (`sh -c`), as a harness or Cline's shadow repository
// runs it; its process start is part of its cost. Both see a warm page cache.
// Correctness is checked, not assumed: every checkpoint must read exactly the
// files that changed (TakeStats::files_read), and a restore of the first
// checkpoint must give back the original tree (`diff -r`). Timings are reported,
// never asserted.
//
//   bench_checkpoint [--quick] [--rounds N] [--files N] [--dir DIR]
//
// Exit codes: 0 ok, 1 a check failed, 2 usage, 77 git missing.
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "tools/workspace/confined.h"
#include "tools/workspace/checkpoint/store.h"

namespace {

using toolexec::checkpoint::CheckpointStore;
using toolexec::checkpoint::StoreOptions;
using toolexec::checkpoint::TakeRequest;
using toolexec::checkpoint::TakeStats;
using Clock = std::chrono::steady_clock;

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

int Sh(const std::string& command) {
  const int raw = system(command.c_str());
  return WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
}

std::string Quote(const std::string& s) { return "'" + s + "'"; }

// Source-like text: words and lines, compressible as code is.
std::string Content(std::mt19937_64& rng, size_t bytes) {
  static const char* kWords[] = {"return", "int", "value", "const", "auto", "std::string", "if",
                                 "for", "while", "result", "status", "absl", "{", "}", "(", ")",
                                 "=", ";", "//", "namespace"};
  std::string out;
  out.reserve(bytes + 32);
  while (out.size() < bytes) {
    out += kWords[rng() % 20];
    out += (rng() % 8 == 0) ? '\n' : ' ';
    if (rng() % 50 == 0) absl::StrAppend(&out, rng() % 100000);
  }
  out.resize(bytes);
  return out;
}

void MakeTree(const std::string& root, int files, size_t total_bytes, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const size_t avg = total_bytes / static_cast<size_t>(files);
  for (int i = 0; i < files; ++i) {
    const std::string dir = absl::StrCat(root, "/pkg", i % 50, "/mod", (i / 50) % 20);
    std::filesystem::create_directories(dir);
    std::ofstream(absl::StrCat(dir, "/file", i, ".cc"), std::ios::binary)
        << Content(rng, avg / 2 + rng() % avg);
  }
}

// Changes 3 files of a tree the same way every time it is given the same round.
void ChangeThree(const std::string& root, int files, int round) {
  for (int k = 0; k < 3; ++k) {
    const int i = (round * 7919 + k * 104729) % files;
    const std::string path =
        absl::StrCat(root, "/pkg", i % 50, "/mod", (i / 50) % 20, "/file", i, ".cc");
    std::ofstream(path, std::ios::app) << "// round " << round << " change " << k << "\n";
  }
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false;
  int rounds = 7;
  int files = 10000;
  size_t total_bytes = size_t{200} << 20;
  const char* tmp = getenv("TMPDIR");
  std::string base = tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--quick") {
      quick = true;
    } else if (arg == "--rounds" && i + 1 < argc && absl::SimpleAtoi(argv[i + 1], &rounds)) {
      ++i;
    } else if (arg == "--files" && i + 1 < argc && absl::SimpleAtoi(argv[i + 1], &files)) {
      ++i;
    } else if (arg == "--dir" && i + 1 < argc) {
      base = argv[++i];
    } else {
      fprintf(stderr, "usage: bench_checkpoint [--quick] [--rounds N] [--files N] [--dir DIR]\n");
      return 2;
    }
  }
  if (quick) {
    rounds = 2;
    files = 1000;
    total_bytes = size_t{4} << 20;
  }
  if (Sh("git --version >/dev/null 2>&1") != 0) {
    fprintf(stderr, "bench_checkpoint: git is not installed\n");
    return 77;
  }
  std::string work = base + "/toolexec-bench-checkpoint-XXXXXX";
  if (mkdtemp(work.data()) == nullptr) return 2;
  const std::string ws = work + "/ws", git_ws = work + "/git", fresh = work + "/fresh";
  const std::string git = "git -c core.fsmonitor=false -c gc.auto=0 -c core.untrackedCache=false";
  setenv("GIT_CONFIG_NOSYSTEM", "1", 1);
  setenv("HOME", work.c_str(), 1);
  int failures = 0;
  auto check = [&](bool ok, const std::string& what) {
    if (!ok) {
      fprintf(stderr, "FAIL: %s\n", what.c_str());
      ++failures;
    }
  };

  MakeTree(ws, files, total_bytes, 20261206);
  check(Sh(absl::StrCat("cp -a ", Quote(ws), " ", Quote(git_ws), " && cp -a ", Quote(ws), " ",
                        Quote(fresh))) == 0,
        "copying the tree");
  Sh(absl::StrCat("find ", Quote(work), " -type f -exec cat {} + >/dev/null"));  // a warm page cache
  std::this_thread::sleep_for(std::chrono::milliseconds(50));

  StoreOptions options;
  options.store_dir = work + "/store";
  auto store = CheckpointStore::Open(options);
  auto root = toolexec::fs::ConfinedRoot::Open(ws);
  if (!store.ok() || !root.ok()) {
    fprintf(stderr, "cannot open the store or the tree\n");
    return 1;
  }
  const TakeRequest request{"bench", "", {"run_command"}, ""};

  // The first checkpoint vs git's first index of a fresh copy.
  auto t0 = Clock::now();
  check(Sh(absl::StrCat("cd ", Quote(fresh), " && ", git, " init -q && ", git, " add -A")) == 0,
        "git add -A (fresh)");
  const double git_first = Ms(Clock::now() - t0);
  TakeStats first;
  t0 = Clock::now();
  auto first_cp = (*store)->Take(*root, request, &first);
  const double ours_first = Ms(Clock::now() - t0);
  check(first_cp.ok(), "the first checkpoint");
  check(first.files_read == static_cast<uint64_t>(files), "the first checkpoint reads every file");
  check(Sh(absl::StrCat("cd ", Quote(git_ws), " && ", git, " init -q && ", git, " add -A && ", git,
                        " write-tree >/dev/null")) == 0,
        "git's first index of the copy");

  std::vector<double> ours, theirs;
  for (int round = 0; round < rounds; ++round) {
    ChangeThree(ws, files, round);
    ChangeThree(git_ws, files, round);
    // Past the window in which a just-written file's stat is not trusted.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    TakeStats stats;
    t0 = Clock::now();
    auto cp = (*store)->Take(*root, request, &stats);
    ours.push_back(Ms(Clock::now() - t0));
    check(cp.ok(), absl::StrCat("a checkpoint: ", cp.status().ToString()));
    check(stats.files_read == 3, absl::StrCat("round ", round, " read ", stats.files_read,
                                              " files, not the 3 that changed"));
    t0 = Clock::now();
    check(Sh(absl::StrCat("cd ", Quote(git_ws), " && ", git, " add -A && ", git,
                          " write-tree >/dev/null")) == 0,
          "git add -A && git write-tree");
    theirs.push_back(Ms(Clock::now() - t0));
  }

  // A restore of the first checkpoint gives back the tree as it was (the
  // fresh copy, which git indexed without changing it).
  if (first_cp.ok()) {
    auto restored = (*store)->Restore(*root, "bench", first_cp->id, {}, false,
                                      TakeRequest{"bench", "", {"restore"}, ""}, nullptr);
    check(restored.ok(), absl::StrCat("the restore: ", restored.status().ToString()));
    check(Sh(absl::StrCat("diff -r -q --no-dereference --exclude=.git ", Quote(ws), " ",
                          Quote(fresh))) == 0,
          "the restored tree equals the original");
  }

  const double ours_ms = Median(ours), git_ms = Median(theirs);
  printf("checkpoint of a %d-file, %zu MB tree, 3 files changed (median of %d rounds):\n", files,
         total_bytes >> 20, rounds);
  printf("  checkpoint                          %8.2f ms  (reads 3 files)\n", ours_ms);
  printf("  git add -A && git write-tree        %8.2f ms  (indexed copy)\n", git_ms);
  printf("  ratio                               %8.2fx  (goal <= 0.5x)\n",
         git_ms > 0 ? ours_ms / git_ms : 0);
  printf("first checkpoint of the whole tree:\n");
  printf("  checkpoint                          %8.2f ms  (%llu bytes stored)\n", ours_first,
         static_cast<unsigned long long>(first.bytes_stored));
  printf("  git add -A (fresh copy)             %8.2f ms\n", git_first);
  printf("  ratio                               %8.2fx  (goal <= 1.5x)\n",
         git_first > 0 ? ours_first / git_first : 0);
  std::error_code ec;
  std::filesystem::remove_all(work, ec);
  return failures == 0 ? 0 : 1;
}
