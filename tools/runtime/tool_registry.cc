#include "tools/runtime/tool_registry.h"

#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

namespace toolexec {
namespace {

// Names the model can call: what every major model API accepts.
absl::Status ValidateToolName(absl::string_view name) {
  if (name.empty() || name.size() > 64) {
    return absl::InvalidArgumentError(
        absl::StrCat("tool name '", name, "' must be 1 to 64 characters"));
  }
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-' || c == '.';
    if (!ok) {
      return absl::InvalidArgumentError(absl::StrCat(
          "tool name '", name, "' may contain only letters, digits, '_', '-' and '.'"));
    }
  }
  return absl::OkStatus();
}

// The registry entry of `tool` from `source` (its position unset), or why
// toolexec cannot declare it.
absl::StatusOr<RegisteredTool> Compile(std::shared_ptr<Tool> tool, absl::string_view source) {
  if (tool == nullptr) return absl::InvalidArgumentError("cannot register a null tool");
  std::string name = tool->name();
  if (absl::Status s = ValidateToolName(name); !s.ok()) return s;
  auto schema = CompiledSchema::Compile(tool->spec().parameters_schema);
  if (!schema.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("tool '", name, "' (", source,
                                                   "): ", schema.status().message()));
  }
  RegisteredTool entry;
  entry.server_name = tool->spec().server_name;
  entry.tool = std::move(tool);
  entry.name = std::move(name);
  entry.source = std::string(source);
  entry.schema = std::move(*schema);
  return entry;
}

std::string DuplicateMessage(absl::string_view name, absl::string_view first,
                             absl::string_view second) {
  return absl::StrCat("duplicate tool name '", name, "': registered by ", first,
                      " and again by ", second);
}

}  // namespace

absl::Status ToolRegistry::Register(std::shared_ptr<Tool> tool, absl::string_view source) {
  if (tool == nullptr) return absl::InvalidArgumentError("cannot register a null tool");
  // [Names and order]: a duplicate is a start-up error naming both sources; never a silent replace.
  if (auto it = by_name_.find(tool->name()); it != by_name_.end()) {
    return absl::AlreadyExistsError(DuplicateMessage(tool->name(), it->second->source, source));
  }
  auto entry = Compile(std::move(tool), source);
  if (!entry.ok()) return entry.status();
  Append(*entry);
  return absl::OkStatus();
}

void ToolRegistry::Append(const RegisteredTool& entry) {
  auto copy = std::make_unique<RegisteredTool>(entry);
  copy->position = tools_.size();
  by_name_.emplace(copy->name, copy.get());
  tools_.push_back(std::move(copy));
}

const RegisteredTool* ToolRegistry::Find(absl::string_view name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

std::vector<std::string> ToolRegistry::names() const {
  std::vector<std::string> out;
  out.reserve(tools_.size());
  for (const auto& t : tools_) out.push_back(t->name);
  return out;
}

std::vector<std::shared_ptr<Tool>> ToolRegistry::Release() {
  std::vector<std::shared_ptr<Tool>> out;
  for (auto& t : tools_) out.push_back(std::move(t->tool));
  tools_.clear();
  by_name_.clear();
  return out;
}

std::shared_ptr<const ToolRegistry> UnownedSnapshot(const ToolRegistry* registry) {
  // The aliasing constructor with no owner: a pointer that owns nothing.
  return std::shared_ptr<const ToolRegistry>(std::shared_ptr<const ToolRegistry>(), registry);
}

// ---- LiveToolRegistry ----

LiveToolRegistry::LiveToolRegistry(ToolRegistry fixed, std::vector<std::string> sources)
    : source_names_(std::move(sources)),
      fixed_(std::make_shared<const ToolRegistry>(std::move(fixed))),
      offered_(source_names_.size()),
      current_(fixed_),
      refused_(source_names_.size()) {}

std::shared_ptr<const ToolRegistry> LiveToolRegistry::Snapshot() const {
  absl::ReaderMutexLock lock(&mu_);
  return current_;
}

std::vector<std::string> LiveToolRegistry::Refused(size_t index) const {
  absl::ReaderMutexLock lock(&mu_);
  return index < refused_.size() ? refused_[index] : std::vector<std::string>();
}

absl::Status LiveToolRegistry::Publish(size_t index, std::vector<std::shared_ptr<Tool>> tools,
                                       bool strict) {
  if (index >= source_names_.size()) {
    return absl::OutOfRangeError(absl::StrCat("no tool source #", index));
  }
  const std::string& source = source_names_[index];
  Offered offer;
  absl::flat_hash_set<std::string> offered_names;
  for (auto& tool : tools) {
    auto entry = Compile(std::move(tool), source);
    if (!entry.ok()) {
      offer.invalid.push_back(absl::StrCat("left out: ", entry.status().message()));
    } else if (!offered_names.insert(entry->name).second) {
      offer.invalid.push_back(
          absl::StrCat("tool '", entry->name, "' left out: ", source, " lists it twice"));
    } else {
      offer.tools.push_back(*std::move(entry));
    }
  }

  absl::MutexLock publishing(&publish_mu_);
  // Who gets each name: fixed tools first; then the source holding it now;
  // then the first source in order offering it.
  auto offered_by = [&](size_t s) -> const Offered& { return s == index ? offer : offered_[s]; };
  absl::flat_hash_map<std::string, size_t> owner;  // dynamic names -> source
  for (size_t s = 0; s < source_names_.size(); ++s) {
    for (const RegisteredTool& t : offered_by(s).tools) {
      auto held = holder_.find(t.name);
      if (held != holder_.end() && held->second == s && fixed_->Find(t.name) == nullptr) {
        owner.emplace(t.name, s);
      }
    }
  }
  std::vector<std::vector<std::string>> refused(source_names_.size());
  for (size_t s = 0; s < source_names_.size(); ++s) {
    for (const RegisteredTool& t : offered_by(s).tools) {
      const RegisteredTool* fixed = fixed_->Find(t.name);
      auto it = fixed != nullptr ? owner.end() : owner.emplace(t.name, s).first;
      if (fixed == nullptr && it->second == s) continue;
      const std::string& first = fixed != nullptr ? fixed->source : source_names_[it->second];
      if (strict && s == index) {
        return absl::AlreadyExistsError(DuplicateMessage(t.name, first, source_names_[s]));
      }
      refused[s].push_back(absl::StrCat("tool '", t.name, "' not registered: ",
                                        DuplicateMessage(t.name, first, source_names_[s])));
    }
  }
  ToolRegistry next;
  for (const auto& t : fixed_->tools()) next.Append(*t);
  for (size_t s = 0; s < source_names_.size(); ++s) {
    for (const RegisteredTool& t : offered_by(s).tools) {
      auto it = owner.find(t.name);
      if (it != owner.end() && it->second == s) next.Append(t);
    }
    for (const std::string& why : offered_by(s).invalid) refused[s].push_back(why);
  }
  offered_[index] = std::move(offer);
  holder_ = std::move(owner);
  absl::MutexLock lock(&mu_);
  next.generation_ = current_->generation() + 1;
  current_ = std::make_shared<const ToolRegistry>(std::move(next));
  refused_ = std::move(refused);
  return absl::OkStatus();
}

}  // namespace toolexec
