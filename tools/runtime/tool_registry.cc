#include "tools/runtime/tool_registry.h"

#include <utility>

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

}  // namespace

absl::Status ToolRegistry::Register(std::unique_ptr<Tool> tool, absl::string_view source) {
  if (tool == nullptr) return absl::InvalidArgumentError("cannot register a null tool");
  std::string name = tool->name();
  if (absl::Status s = ValidateToolName(name); !s.ok()) return s;
  // S1: a duplicate is a start-up error naming both sources; never a silent replace.
  if (auto it = by_name_.find(name); it != by_name_.end()) {
    return absl::AlreadyExistsError(absl::StrCat("duplicate tool name '", name, "': registered by ",
                                                 it->second->source, " and again by ", source));
  }
  auto schema = CompiledSchema::Compile(tool->spec().parameters_schema);
  if (!schema.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("tool '", name, "' (", source,
                                                   "): ", schema.status().message()));
  }
  auto entry = std::make_unique<RegisteredTool>();
  entry->tool = std::move(tool);
  entry->name = name;
  entry->source = std::string(source);
  entry->server_name = entry->tool->spec().server_name;
  entry->schema = std::move(*schema);
  entry->position = tools_.size();
  by_name_.emplace(name, entry.get());
  tools_.push_back(std::move(entry));
  return absl::OkStatus();
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

std::vector<std::unique_ptr<Tool>> ToolRegistry::Release() {
  std::vector<std::unique_ptr<Tool>> out;
  for (auto& t : tools_) out.push_back(std::move(t->tool));
  tools_.clear();
  by_name_.clear();
  return out;
}

}  // namespace toolexec
