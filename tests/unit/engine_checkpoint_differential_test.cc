// Checkpoints against copies of the tree, at random: each sequence runs
// random batches in a session of an Engine with checkpoints on (the file
// tools, apply_patch and run_command lines that write text and binary
// files, delete, rename, chmod, make symlinks to files, directories and
// nowhere, make and remove (empty, nested) directories, change a file into a
// directory and back, rewrite a file keeping its size and mtime, and write
// .gitignore'd paths). Before each batch the workspace is copied with
// `cp -a`; the batch's checkpoint is taken by the engine first. At the end
// every checkpoint is restored, in random order, and the tree must be the
// copy taken at its moment: `diff -r --no-dereference` finds no difference,
// and an lstat walk of both sides has the same types, modes (07777), file
// contents and link targets. Ignored paths are left out of a checkpoint and
// never touched by a restore (README "Checkpoints"), so they are excluded
// from the comparison with the copy and must be as they were just before
// the restore instead, with the directories that hold them (where the copy
// has a file or link there, the restore cannot put it back and names it
// among what it did not restore). Now and then the restore's undo
// checkpoint is restored too and must give the tree as it was before.
//
// TOOLEXEC_CHECKPOINT_DIFF_SEED (a number, or "random"; default a fixed
// seed) and TOOLEXEC_CHECKPOINT_DIFF_SEQUENCES (default 500) choose the
// sequences; sequence i uses seed SEED+i, and a failure prints the seed and
// the batches that reproduce it alone (SEED=<that seed> SEQUENCES=1). Skipped
// under TSan (tests/common/sanitizers.h).
#include <dirent.h>
#include <fnmatch.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "core/engine.h"
#include "server/tool_catalogue.h"
#include "tests/common/sanitizers.h"
#include "tests/common/shell.h"
#include "tests/common/test_tools.h"
#include "tests/unit/builtin/file_test_util.h"
#include "tools/runtime/utf8.h"

namespace toolexec {
namespace {

using testing::Call;
using testing::Collector;
using testing::Quoted;
using testing::ShellQuote;
using testing::TempTree;

// The workspace's ignore rules; a path is ignored when any of its components
// matches one (both patterns match files and directories at any depth).
constexpr char kGitignore[] = "*.log\nignored_dir\n";
bool Ignored(const std::string& path) {
  size_t start = 0;
  for (;;) {
    const size_t slash = path.find('/', start);
    const std::string part = path.substr(start, slash == std::string::npos ? slash : slash - start);
    if (fnmatch("*.log", part.c_str(), 0) == 0 || part == "ignored_dir") return true;
    if (slash == std::string::npos) return false;
    start = slash + 1;
  }
}

// One entry of a tree as lstat and a read see it.
struct Node {
  char type = 'f';   // f, d, l
  mode_t mode = 0;   // 07777 (links: 0)
  std::string data;  // a file's content, a link's target
  bool operator==(const Node& o) const {
    return type == o.type && mode == o.mode && data == o.data;
  }
};
using Tree = std::map<std::string, Node>;  // by path relative to the root

std::string Describe(const Node& n) {
  if (n.type == 'd') return absl::StrCat("dir ", absl::StrFormat("%04o", n.mode));
  if (n.type == 'l') return absl::StrCat("link -> ", n.data);
  return absl::StrCat("file ", absl::StrFormat("%04o", n.mode), " ", n.data.size(), " bytes");
}

// The names in the directory `dir`.
std::vector<std::string> Names(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  while (const struct dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name != "." && name != "..") out.push_back(name);
  }
  closedir(d);
  return out;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Walks `root` without following links (its own mode is not an entry).
void ReadTree(const std::string& root, const std::string& rel, Tree* out) {
  const std::string dir = rel.empty() ? root : absl::StrCat(root, "/", rel);
  for (const std::string& name : Names(dir)) {
    const std::string path = rel.empty() ? name : absl::StrCat(rel, "/", name);
    const std::string abs = absl::StrCat(root, "/", path);
    struct stat st;
    if (lstat(abs.c_str(), &st) != 0) continue;
    Node n;
    if (S_ISDIR(st.st_mode)) {
      n.type = 'd';
      n.mode = st.st_mode & 07777;
      (*out)[path] = n;
      ReadTree(root, path, out);
      continue;
    }
    if (S_ISLNK(st.st_mode)) {
      n.type = 'l';
      char target[4096];
      const ssize_t len = readlink(abs.c_str(), target, sizeof target);
      n.data.assign(target, len > 0 ? static_cast<size_t>(len) : 0);
    } else {
      n.mode = st.st_mode & 07777;
      n.data = ReadFile(abs);
    }
    (*out)[path] = std::move(n);
  }
}

std::string Parent(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash);
}
std::string Base(const std::string& path) { return path.substr(path.rfind('/') + 1); }

// The differences between `want` and `got`, one line each.
std::vector<std::string> Differences(const Tree& want, const Tree& got) {
  std::vector<std::string> out;
  for (const auto& [path, w] : want) {
    auto it = got.find(path);
    if (it == got.end()) {
      out.push_back(absl::StrCat("missing ", path, " (", Describe(w), ")"));
    } else if (!(it->second == w)) {
      out.push_back(absl::StrCat("differs ", path, ": want ", Describe(w), ", got ",
                                 Describe(it->second),
                                 w.data != it->second.data ? " (other content)" : ""));
    }
  }
  for (const auto& [path, g] : got) {
    if (want.count(path) == 0) out.push_back(absl::StrCat("extra ", path, " (", Describe(g), ")"));
  }
  return out;
}

// `s` for bash: $'...' with every byte outside printable ASCII escaped, so
// a command line stays valid UTF-8 (JSON) whatever a file's name is.
std::string BashQuote(const std::string& s) {
  std::string out = "$'";
  for (unsigned char c : s) {
    if (c == '\'' || c == '\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(c));
    } else if (c < 0x20 || c >= 0x7f) {
      absl::StrAppend(&out, absl::StrFormat("\\x%02x", c));
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  return out + "'";
}

// Makes one sequence's random batches from the tree as it is.
class Generator {
 public:
  explicit Generator(uint64_t seed) : rng_(seed) {}

  // A batch's calls for the workspace at `ws`.
  std::vector<CallRequest> Batch(const std::string& ws) {
    tree_.clear();
    ReadTree(ws, "", &tree_);
    tree_.erase(".gitignore");
    // Up to two file tool calls and one command line of up to five steps.
    std::vector<CallRequest> calls;
    const int tools = Uniform(0, 2);
    const bool command = tools == 0 || Chance(0.4);
    for (int i = 0; i < tools; ++i) calls.push_back(FileToolCall(absl::StrCat(i + 1)));
    if (command) {
      std::vector<std::string> lines;
      const int k = Uniform(1, 5);
      for (int j = 0; j < k; ++j) lines.push_back(ShellOp());
      calls.insert(calls.begin() + Uniform(0, tools),
                   Call("c", "run_command", absl::StrCat(R"({"command_line":)",
                                                         Quoted(absl::StrJoin(lines, "; ")), "}")));
    }
    return calls;
  }

  int Uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  bool Chance(double p) { return std::bernoulli_distribution(p)(rng_); }
  template <typename T>
  const T& Pick(const std::vector<T>& v) {
    return v[static_cast<size_t>(Uniform(0, static_cast<int>(v.size()) - 1))];
  }
  std::mt19937_64& rng() { return rng_; }

 private:
  std::vector<std::string> Of(char type, bool utf8_only = false) const {
    std::vector<std::string> out;
    for (const auto& [path, n] : tree_) {
      if (n.type == type && (!utf8_only || IsValidUtf8(path))) out.push_back(path);
    }
    return out;
  }
  std::vector<std::string> All() const {
    std::vector<std::string> out;
    for (const auto& [path, n] : tree_) out.push_back(path);
    return out;
  }
  // "mkdir -p <parent> && " when `path`'s directory is not there yet.
  std::string MakeParent(const std::string& path) const {
    const std::string parent = Parent(path);
    auto it = tree_.find(parent);
    if (parent.empty() || (it != tree_.end() && it->second.type == 'd')) return "";
    return absl::StrCat("mkdir -p ", BashQuote(parent), " && ");
  }
  // A directory to make something in ("" = the root).
  std::string SomeDir() {
    std::vector<std::string> dirs = Of('d');
    if (dirs.empty() || Chance(0.3)) return "";
    return Pick(dirs);
  }
  std::string Name() {
    static const std::vector<std::string> kNames = {
        "a", "b.txt", "c.bin", "d", "sp ace", "\xc3\xa9t\xc3\xa9.md", ".hidden", "x", "y", "z"};
    if (Chance(0.08)) return Chance(0.5) ? "debug.log" : "ignored_dir";
    return Pick(kNames);
  }
  // A path that may or may not exist, up to two new directories deep.
  std::string NewPath() {
    std::string p = SomeDir();
    const int depth = Chance(0.2) ? Uniform(1, 2) : 0;
    for (int i = 0; i <= depth; ++i) p = p.empty() ? Name() : absl::StrCat(p, "/", Name());
    return p;
  }
  std::string Text() {
    std::string out;
    const int lines = Uniform(0, 6);
    for (int i = 0; i < lines; ++i) {
      absl::StrAppend(&out, Chance(0.2) ? "caf\xc3\xa9 " : "", "line ", Uniform(0, 99999), "\n");
    }
    if (Chance(0.2)) absl::StrAppend(&out, "no newline ", Uniform(0, 999));
    return out;
  }
  // Bytes for printf: NULs, high bytes, invalid UTF-8.
  std::string BinaryPrintf() {
    std::string out;
    const int n = Uniform(1, 40);
    for (int i = 0; i < n; ++i) {
      const int b = Chance(0.3) ? Pick(std::vector<int>{0, 0377, 0200, 0300, 0355}) : Uniform(0, 255);
      absl::StrAppend(&out, absl::StrFormat("\\%03o", b));
    }
    return out;
  }
  // A link target: a file or directory below `link`'s directory, a
  // missing name, or an absolute path that cannot be made. Never "..": a
  // link moved elsewhere still resolves inside the workspace, so the steps
  // that write through links (as a command may) stay in it.
  std::string Target(const std::string& link) {
    const std::string parent = Parent(link);
    const int kind = Uniform(0, 4);
    if (kind == 0) return "/proc/nonexistent-toolexec-checkpoint/target";
    if (kind == 1) return absl::StrCat("missing-", Uniform(0, 9));
    std::vector<std::string> below;
    for (const std::string& p : Of(kind == 2 ? 'd' : 'f')) {
      if (parent.empty()) {
        below.push_back(p);
      } else if (absl::StartsWith(p, parent + "/")) {
        below.push_back(p.substr(parent.size() + 1));
      }
    }
    return below.empty() ? "dangling" : Pick(below);
  }

  std::string ShellOp() {
    const std::vector<std::string> files = Of('f');
    const std::vector<std::string> dirs = Of('d');
    const std::vector<std::string> links = Of('l');
    const std::vector<std::string> all = All();
    // Modes change three times as often as the rest (a mode-only change
    // takes its own path through a restore).
    int op = Uniform(0, 19);
    if (op >= 16) op = op == 19 ? 8 : 7;
    switch (op) {
      case 0: {  // text, new or over a file
        const std::string p = !files.empty() && Chance(0.5) ? Pick(files) : NewPath();
        return absl::StrCat(MakeParent(p), "printf '%s' ",
                            ShellQuote(Text()), " > ", BashQuote(p));
      }
      case 1:  // append
        if (files.empty()) break;
        return absl::StrCat("echo more ", Uniform(0, 999), " >> ", BashQuote(Pick(files)));
      case 2: {  // binary
        const std::string p = !files.empty() && Chance(0.4) ? Pick(files) : NewPath();
        return absl::StrCat(MakeParent(p), "printf '",
                            BinaryPrintf(), "' > ", BashQuote(p));
      }
      case 3:  // delete a file or link
        if (files.empty() && links.empty()) break;
        return absl::StrCat("rm -f ",
                            BashQuote(!links.empty() && (files.empty() || Chance(0.3)) ? Pick(links)
                                                                                       : Pick(files)));
      case 4:  // delete a directory
        if (dirs.empty()) break;
        return absl::StrCat("rm -rf ", BashQuote(Pick(dirs)));
      case 5:  // nested directories
        return absl::StrCat("mkdir -p ", BashQuote(NewPath()), Chance(0.5) ? "/inner" : "");
      case 6:  // remove a directory if empty
        if (dirs.empty()) break;
        return absl::StrCat("rmdir ", BashQuote(Pick(dirs)), " 2>/dev/null");
      case 7: {  // file modes
        if (files.empty()) break;
        static const std::vector<std::string> kModes = {"600", "644", "755", "700", "444", "640",
                                                        "775", "400", "750", "+x", "-x", "u+x",
                                                        "4755", "2755"};
        return absl::StrCat("chmod ", Pick(kModes), " ", BashQuote(Pick(files)));
      }
      case 8: {  // directory modes (the owner keeps rwx)
        if (dirs.empty()) break;
        static const std::vector<std::string> kModes = {"700", "755", "750", "711", "775", "1777",
                                                        "2755"};
        return absl::StrCat("chmod ", Pick(kModes), " ", BashQuote(Pick(dirs)));
      }
      case 9: {  // symlink
        const std::string p = NewPath();
        return absl::StrCat(MakeParent(p), "ln -sfn ", BashQuote(Target(p)), " ", BashQuote(p));
      }
      case 10: {  // rename a file, link or directory (over a file, or into a directory)
        if (all.empty()) break;
        const std::string from = Pick(all);
        const std::string to = Chance(0.3) && !files.empty() ? Pick(files) : NewPath();
        return absl::StrCat(MakeParent(to), "mv -f ",
                            BashQuote(from), " ", BashQuote(to), " 2>/dev/null");
      }
      case 11:  // a file becomes a directory
        if (files.empty()) break;
        {
          const std::string p = Pick(files);
          return absl::StrCat("rm -f ", BashQuote(p), " && mkdir ", BashQuote(p), " && echo in > ",
                              BashQuote(p + "/inside"));
        }
      case 12:  // a directory becomes a file
        if (dirs.empty()) break;
        {
          const std::string p = Pick(dirs);
          return absl::StrCat("rm -rf ", BashQuote(p), " && echo was-a-dir > ", BashQuote(p));
        }
      case 13: {  // same size, same mtime, other content (only ctime tells)
        std::vector<std::string> nonempty;
        for (const std::string& f : files) {
          if (!tree_.at(f).data.empty()) nonempty.push_back(f);
        }
        if (nonempty.empty()) break;
        const std::string p = BashQuote(Pick(nonempty));
        return absl::StrCat("m=$(stat -c %y ", p, ") && printf '\\", Uniform(100, 377),
                            "' | dd of=", p, " conv=notrunc bs=1 seek=0 status=none && touch -d \"$m\" ",
                            p);
      }
      case 14:  // a name that is not UTF-8
      {
        const std::string dir = SomeDir();
        return absl::StrCat("printf 'odd' > ", dir.empty() ? "" : BashQuote(dir + "/"),
                            "\"$(printf 'n\\377me')\"");
      }
      case 15:  // touch: times change, content not
        if (files.empty()) break;
        return absl::StrCat("touch ", BashQuote(Pick(files)));
    }
    return absl::StrCat("mkdir -p ", BashQuote(NewPath()));
  }

  CallRequest FileToolCall(const std::string& id) {
    const std::vector<std::string> files = Of('f', true);
    switch (Uniform(0, 4)) {
      case 0:
      case 1: {  // create, or overwrite
        const bool over = !files.empty() && Chance(0.4);
        return Call(id, "create_file",
                    absl::StrCat(R"({"file_path":)", Quoted(over ? Pick(files) : NewPath()),
                                 R"(,"contents":)", Quoted(Text()),
                                 R"(,"overwrite":)", over || Chance(0.5) ? "true" : "false", "}"));
      }
      case 2: {  // edit a line that occurs once
        for (int tries = 0; tries < 5 && !files.empty(); ++tries) {
          const std::string& f = Pick(files);
          const std::string& text = tree_.at(f).data;
          if (!IsValidUtf8(text)) continue;
          std::vector<std::string> lines;
          for (size_t at = 0; at < text.size();) {
            size_t nl = text.find('\n', at);
            if (nl == std::string::npos) nl = text.size();
            const std::string line = text.substr(at, nl - at);
            if (!line.empty() && text.find(line) == text.rfind(line)) lines.push_back(line);
            at = nl + 1;
          }
          if (lines.empty()) continue;
          return Call(id, "edit_file",
                      absl::StrCat(R"({"file_path":)", Quoted(f), R"(,"edits":[{"old_string":)",
                                   Quoted(Pick(lines)), R"(,"new_string":)",
                                   Quoted(absl::StrCat("edited ", Uniform(0, 9999))), "}]}"));
        }
        break;
      }
      case 3:  // apply_patch: delete a file
        if (files.empty()) break;
        return Call(id, "apply_patch",
                    absl::StrCat(R"({"operation":{"type":"delete_file","path":)", Quoted(Pick(files)),
                                 "}}"));
      case 4:  // apply_patch: rename a file
        if (files.empty()) break;
        return Call(id, "apply_patch",
                    absl::StrCat(R"({"input":)",
                                 Quoted(absl::StrCat("*** Begin Patch\n*** Update File: ", Pick(files),
                                                     "\n*** Move to: ", NewPath(),
                                                     "\n*** End Patch\n")),
                                 "}"));
    }
    return Call(id, "create_file",
                absl::StrCat(R"({"file_path":)", Quoted(NewPath()), R"(,"contents":)", Quoted(Text()),
                             "}"));
  }

  std::mt19937_64 rng_;
  Tree tree_;
};

// One sequence: its own workspace, store, engine and session.
class Sequence {
 public:
  explicit Sequence(uint64_t seed) : seed_(seed), gen_(seed) {}

  // Runs the sequence; "" when every restore gave its copy, else what went
  // wrong with the batches that led to it.
  std::string Run() {
    tree_.Mkdir("ws");
    tree_.Mkdir("copies");
    ws_ = tree_.Abs("ws");
    tree_.Write("ws/.gitignore", kGitignore);
    EngineOptions options;
    options.workspace = ws_;
    options.checkpoints_enabled = true;
    options.checkpoints.store_dir = tree_.Abs("store");
    auto engine = CreateEngine(options, {});
    if (!engine.ok()) return engine.status().ToString();
    engine_ = *std::move(engine);
    auto session = engine_->OpenSession(caller_, OpenSessionSpec());
    if (!session.ok()) return session.status().ToString();
    session_ = session->session_id;

    const int batches = gen_.Uniform(2, 5);
    std::vector<std::pair<std::string, std::string>> taken;  // checkpoint id, its copy
    for (int b = 0; b < batches; ++b) {
      const std::string copy = tree_.Abs(absl::StrCat("copies/", b));
      int status = 0;
      const std::string cp = testing::Run({"cp", "-a", ws_, copy}, &status);
      if (status != 0) return Failure(absl::StrCat("cp -a exited ", status, ": ", cp));
      std::vector<CallRequest> calls = gen_.Batch(ws_);
      std::string shown = absl::StrCat("batch ", b, ":");
      for (const CallRequest& c : calls) absl::StrAppend(&shown, "\n  ", c.name, " ", c.args_json);
      log_.push_back(shown);
      const size_t before = List().size();
      Collector results;
      BatchSpec spec;
      spec.session_id = session_;
      spec.calls = std::move(calls);
      {
        auto batch = engine_->StartBatch(caller_, std::move(spec), &results);
        if (!batch.ok()) return Failure(batch.status().ToString());
        results.Wait();
      }
      for (const ToolCallResult& r : results.results) {
        if (!r.ok()) absl::StrAppend(&log_.back(), "\n  (call ", r.id, " failed: ", r.error_message, ")");
      }
      const std::vector<checkpoint::CheckpointInfo> listed = List();
      if (listed.size() != before + 1) {
        return Failure(absl::StrCat("batch ", b, " took ", listed.size() - before, " checkpoints"));
      }
      taken.emplace_back(listed.back().id, copy);
    }
    std::vector<size_t> order(taken.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::shuffle(order.begin(), order.end(), gen_.rng());
    for (size_t i : order) {
      if (std::string err = RestoreAndCompare(taken[i].first, taken[i].second,
                                              absl::StrCat("checkpoint of batch ", i));
          !err.empty()) {
        return Failure(err);
      }
      ++checked_;
    }
    return "";
  }

  int checked() const { return checked_; }

 private:
  std::vector<checkpoint::CheckpointInfo> List() {
    auto listed = engine_->ListCheckpoints(caller_, session_);
    return listed.ok() ? *listed : std::vector<checkpoint::CheckpointInfo>();
  }

  // Restores checkpoint `id`; "" when the tree is then its `copy`.
  std::string RestoreAndCompare(const std::string& id, const std::string& copy,
                                const std::string& what) {
    Tree before;
    ReadTree(ws_, "", &before);
    auto restored = engine_->RestoreCheckpoint(caller_, session_, id, {}, false);
    // Not ignored: as in the copy. Ignored: as before the restore, and so
    // the directories that hold it stay (with the copy's mode when the copy
    // has them); where the copy has a file or link instead, the restore
    // cannot put it back and names it in not_restored.
    Tree want, got;
    ReadTree(copy, "", &want);
    ReadTree(ws_, "", &got);
    for (auto it = want.begin(); it != want.end();) {
      it = Ignored(it->first) ? want.erase(it) : std::next(it);
    }
    std::set<std::string> kept, conflicts;
    for (const auto& [path, n] : before) {
      if (!Ignored(path)) continue;
      want[path] = n;
      for (std::string dir = Parent(path); !dir.empty(); dir = Parent(dir)) {
        if (!Ignored(dir)) kept.insert(dir);
      }
    }
    for (const std::string& dir : kept) {
      auto it = want.find(dir);
      if (it != want.end() && it->second.type == 'd') continue;
      if (it != want.end()) conflicts.insert(dir);
      want[dir] = before.at(dir);
    }
    if (!restored.ok()) {
      return absl::StrCat("restoring the ", what, ": ", restored.status().ToString());
    }
    std::set<std::string> in_the_way;
    for (const checkpoint::LeftOut& l : restored->not_restored) {
      if (l.reason == checkpoint::LeftOutReason::kInTheWay) in_the_way.insert(l.path);
    }
    if (in_the_way != conflicts) {
      return absl::StrCat("restoring the ", what, ": not restored for a directory in the way: {",
                          absl::StrJoin(in_the_way, ", "), "}, expected {",
                          absl::StrJoin(conflicts, ", "), "}");
    }
    std::string problems;
    for (const std::string& d : Differences(want, got)) absl::StrAppend(&problems, "\n  ", d);
    int status = 0;
    const std::string diff =
        testing::Run({"diff", "-r", "--no-dereference", "-x", "*.log", "-x", "ignored_dir", copy, ws_}, &status);
    if (status != 0 && status != 1) absl::StrAppend(&problems, "\n  diff -r exited ", status);
    // diff names a kept directory the copy does not have ("Only in"), or one
    // where the copy has a file or link.
    for (absl::string_view line : absl::StrSplit(diff, '\n', absl::SkipEmpty())) {
      bool expected = false;
      for (const std::string& dir : kept) {
        const std::string parent = Parent(dir);
        expected = expected ||
                   line == absl::StrCat("Only in ", ws_, parent.empty() ? "" : "/", parent, ": ",
                                        Base(dir)) ||
                   (conflicts.count(dir) != 0 &&
                    absl::EndsWith(line, absl::StrCat(" while file ", ws_, "/", dir, " is a directory")));
      }
      if (!expected) absl::StrAppend(&problems, "\n  diff -r: ", line);
    }
    // Now and then the restore's undo checkpoint must put back the tree as
    // it was before the restore (ignored content included: never touched).
    if (problems.empty() && restored.ok() && gen_.Chance(0.25)) {
      auto undone =
          engine_->RestoreCheckpoint(caller_, session_, restored->undo_checkpoint_id, {}, false);
      Tree back;
      ReadTree(ws_, "", &back);
      if (!undone.ok()) problems = absl::StrCat("\n  undoing it: ", undone.status().ToString());
      for (const std::string& d : Differences(before, back)) {
        absl::StrAppend(&problems, "\n  after undoing it: ", d);
      }
    }
    if (problems.empty()) return "";
    return absl::StrCat("after restoring the ", what, " (", id, "), the tree is not its copy:",
                        problems, restored.ok() ? "" : "\n  (restore: ",
                        restored.ok() ? "" : restored.status().ToString(), restored.ok() ? "" : ")");
  }

  std::string Failure(const std::string& what) {
    return absl::StrCat("sequence seed ", seed_,
                        " (TOOLEXEC_CHECKPOINT_DIFF_SEED=", seed_,
                        " TOOLEXEC_CHECKPOINT_DIFF_SEQUENCES=1 reproduces it):\n", what,
                        "\nbatches:\n", absl::StrJoin(log_, "\n"));
  }

  const uint64_t seed_;
  Generator gen_;
  TempTree tree_;
  std::string ws_;
  std::unique_ptr<Engine> engine_;
  CallerIdentity caller_;
  std::string session_;
  std::vector<std::string> log_;
  int checked_ = 0;
};

uint64_t EnvNumber(const char* name, uint64_t fallback) {
  const char* v = getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  if (std::string(v) == "random") return static_cast<uint64_t>(absl::ToUnixNanos(absl::Now()));
  return std::strtoull(v, nullptr, 10);
}

TEST(EngineCheckpointDifferentialTest, RestoringEachCheckpointGivesTheTreeCopiedAtItsMoment) {
  if (testing::kThreadSanitizer) GTEST_SKIP() << testing::kSkipCommandsUnderTsan;
  const uint64_t seed = EnvNumber("TOOLEXEC_CHECKPOINT_DIFF_SEED", 20261207);
  const uint64_t sequences = EnvNumber("TOOLEXEC_CHECKPOINT_DIFF_SEQUENCES", 500);
  std::cout << "seed " << seed << ", " << sequences << " sequences\n";
  // Two sequences at a time (each has its own tree, store and engine); the
  // first three failures are reported.
  std::atomic<uint64_t> next{0}, checked{0};
  absl::Mutex mu;
  std::vector<std::string> failures;
  auto worker = [&] {
    for (uint64_t i; (i = next++) < sequences;) {
      {
        absl::MutexLock lock(&mu);
        if (failures.size() >= 3) return;
      }
      Sequence s(seed + i);
      const std::string failure = s.Run();
      checked += static_cast<uint64_t>(s.checked());
      if (!failure.empty()) {
        absl::MutexLock lock(&mu);
        failures.push_back(failure);
      }
    }
  };
  std::thread other(worker);
  worker();
  other.join();
  for (const std::string& f : failures) ADD_FAILURE() << f;
  std::cout << checked << " checkpoints restored and compared\n";
}

}  // namespace
}  // namespace toolexec
