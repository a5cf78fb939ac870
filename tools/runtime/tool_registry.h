// The registry of tools [Names and order]: names are unique and registration order is kept,
// because that is the order the model sees.
//
// ToolRegistry is one fixed list. Built by Register() (not thread-safe), then
// shared read-only: every const method may run concurrently.
//
// LiveToolRegistry is the daemon's tools as they change at runtime: a fixed
// part (built-ins, declared, example, command and embedder tools) that never
// changes, then the tools of dynamic sources (the MCP servers, in config
// order, each in its own order) that each source replaces as a whole when its
// list changes. Design:
//   - It publishes immutable snapshots, std::shared_ptr<const ToolRegistry>,
//     each with a generation one higher than the last. Readers take one with
//     Snapshot() (a shared_ptr copy under a short reader lock) and use that
//     snapshot throughout an operation: a batch resolves, checks policy and
//     runs every call against one snapshot, which it holds until it ends; a
//     ListTools answers from one. So no reader ever sees a half-updated list,
//     and a tool removed while a call of it runs stays alive (its Tool is
//     shared by every snapshot listing it) until that call's batch lets go.
//   - Publish() runs on a source's own thread (an MCP server's supervisor) or
//     at start-up; publishers are serialized by their own mutex, build the
//     new snapshot without blocking readers, and swap it in under the reader
//     lock. Fixed tools keep their positions in every snapshot.
//   - Names stay unique in every snapshot. A dynamic tool whose name a fixed
//     tool has, or another source's tool had first, is not registered: at
//     start-up (`strict`) that is the duplicate error; later it is refused,
//     logged naming both sources, and listed by Refused() until the name is
//     free and the source lists it again (each publish re-decides every
//     source's offered tools: the tool that holds a name keeps it; a free
//     name goes to the first source in order that offers it).
//   - Derived data (tool sets, declaration caches, provider formats) is
//     computed from a snapshot, or cached keyed by its generation().
#ifndef TOOLEXEC_TOOLS_RUNTIME_TOOL_REGISTRY_H_
#define TOOLEXEC_TOOLS_RUNTIME_TOOL_REGISTRY_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "tools/runtime/schema.h"
#include "tools/runtime/tool.h"

namespace toolexec {

struct RegisteredTool {
  // Shared by every registry snapshot that lists the tool.
  std::shared_ptr<Tool> tool;
  std::string name;
  // Where it came from, for error messages: "built-in", "example", "config", ...
  std::string source;
  std::string server_name;  // tool->spec().server_name
  std::shared_ptr<const CompiledSchema> schema;
  size_t position = 0;  // registration order, in this registry
};

class ToolRegistry final {
 public:
  ToolRegistry() = default;
  ToolRegistry(ToolRegistry&&) = default;
  ToolRegistry& operator=(ToolRegistry&&) = default;

  // Compiles the tool's schema and appends it. AlreadyExists naming the tool
  // and both sources on a duplicate name (never replaces); InvalidArgument for
  // an empty or malformed name or an invalid schema.
  absl::Status Register(std::shared_ptr<Tool> tool, absl::string_view source);

  // nullptr when no tool has that name.
  const RegisteredTool* Find(absl::string_view name) const;
  // In registration order.
  const std::vector<std::unique_ptr<RegisteredTool>>& tools() const { return tools_; }
  std::vector<std::string> names() const;
  size_t size() const { return tools_.size(); }
  // Which LiveToolRegistry snapshot this is (0 for a registry built once).
  uint64_t generation() const { return generation_; }

  // Empties the registry, handing back its tools in registration order (to
  // register a chosen subset elsewhere).
  std::vector<std::shared_ptr<Tool>> Release();

 private:
  friend class LiveToolRegistry;
  // Appends an entry compiled before (its position is set here).
  void Append(const RegisteredTool& entry);

  std::vector<std::unique_ptr<RegisteredTool>> tools_;
  absl::flat_hash_map<std::string, const RegisteredTool*> by_name_;
  uint64_t generation_ = 0;
};

// Some of the tools of one registry snapshot, which it keeps alive: the
// pointers stay valid as long as the list, whatever is published meanwhile.
class ToolList final {
 public:
  ToolList() = default;
  ToolList(std::shared_ptr<const ToolRegistry> registry, std::vector<const RegisteredTool*> tools)
      : registry_(std::move(registry)), tools_(std::move(tools)) {}

  const std::vector<const RegisteredTool*>& tools() const { return tools_; }
  // The snapshot the tools come from (its generation keys caches).
  const std::shared_ptr<const ToolRegistry>& registry() const { return registry_; }
  std::vector<const RegisteredTool*>::const_iterator begin() const { return tools_.begin(); }
  std::vector<const RegisteredTool*>::const_iterator end() const { return tools_.end(); }
  size_t size() const { return tools_.size(); }
  bool empty() const { return tools_.empty(); }
  const RegisteredTool* operator[](size_t i) const { return tools_[i]; }

 private:
  std::shared_ptr<const ToolRegistry> registry_;
  std::vector<const RegisteredTool*> tools_;
};

// A registry that is not owned, as a snapshot (for a runner or a session
// manager given a fixed registry): `registry` must outlive every copy.
std::shared_ptr<const ToolRegistry> UnownedSnapshot(const ToolRegistry* registry);

class LiveToolRegistry final {
 public:
  // `fixed` comes first in every snapshot and never changes. `sources` name
  // the dynamic sources, in order, as messages name them ("MCP server
  // 'docs'"); each starts with no tools.
  LiveToolRegistry(ToolRegistry fixed, std::vector<std::string> sources);
  LiveToolRegistry(const LiveToolRegistry&) = delete;
  LiveToolRegistry& operator=(const LiveToolRegistry&) = delete;

  // The current snapshot (never null). Cheap: one shared_ptr copy.
  std::shared_ptr<const ToolRegistry> Snapshot() const;

  // Replaces the tools source `index` offers and publishes a new snapshot.
  // A tool whose name or schema toolexec refuses is left out (logged, and in
  // Refused). A name that is taken is left out too, unless `strict`: then it
  // is AlreadyExists naming the tool and both sources, and nothing changes.
  // OutOfRange for an unknown source.
  absl::Status Publish(size_t index, std::vector<std::shared_ptr<Tool>> tools, bool strict);

  // Why tools source `index` offers are not registered now, one line each.
  std::vector<std::string> Refused(size_t index) const;

 private:
  // A source's offered tools, compiled; `refused` for those that cannot be.
  struct Offered {
    std::vector<RegisteredTool> tools;
    std::vector<std::string> invalid;
  };

  const std::vector<std::string> source_names_;
  std::shared_ptr<const ToolRegistry> fixed_;

  absl::Mutex publish_mu_;  // serializes publishers
  std::vector<Offered> offered_ ABSL_GUARDED_BY(publish_mu_);
  // Which source holds each dynamic name in the current snapshot.
  absl::flat_hash_map<std::string, size_t> holder_ ABSL_GUARDED_BY(publish_mu_);

  mutable absl::Mutex mu_;  // readers; held only to copy or swap
  std::shared_ptr<const ToolRegistry> current_ ABSL_GUARDED_BY(mu_);
  std::vector<std::vector<std::string>> refused_ ABSL_GUARDED_BY(mu_);
};

}  // namespace toolexec

#endif  // TOOLEXEC_TOOLS_RUNTIME_TOOL_REGISTRY_H_
