#include "tools/runtime/schema_graph.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/types/span.h"

namespace toolexec {
namespace {

// Draft 7's subschema keywords as valijson parses them. "In place" ones apply
// their subschemas to the value itself; the others to a part of it.
constexpr const char* kInPlaceOne[] = {"not", "if", "then", "else"};
constexpr const char* kInPlaceList[] = {"allOf", "anyOf", "oneOf"};
constexpr const char* kInPlaceMap[] = {"dependencies"};
constexpr const char* kDescendingOne[] = {"items", "additionalItems", "additionalProperties",
                                          "contains", "propertyNames"};
constexpr const char* kDescendingList[] = {"items"};
constexpr const char* kDescendingMap[] = {"properties", "patternProperties"};

// A JSON Pointer token as written in a location ("a/b" -> "a~1b").
std::string Escaped(absl::string_view key) {
  return absl::StrReplaceAll(key, {{"~", "~0"}, {"/", "~1"}});
}

// The node `pointer` (the part of a "$ref" after '#', trailing '/'s gone)
// names in `root`, resolved exactly as valijson resolves it (its token
// unescaping, %-decoding, empty tokens skipped, its array indices and member
// lookup), so that the walk follows every "$ref" valijson would. Null where
// valijson would fail (it then refuses the schema itself).
const JsonValue* Resolve(const JsonValue& root, const std::string& pointer) {
  const JsonValue* node = &root;
  size_t i = 0;
  while (i < pointer.size()) {
    if (pointer[i] != '/') return nullptr;
    size_t next = pointer.find('/', i + 1);
    if (next == std::string::npos) next = pointer.size();
    std::string token = pointer.substr(i + 1, next - i - 1);
    i = next;
    token = absl::StrReplaceAll(token, {{"~1", "/"}});
    token = absl::StrReplaceAll(token, {{"~0", "~"}});
    for (size_t n = token.find('%'); n != std::string::npos; n = token.find('%', n + 1)) {
      const std::string digits = token.substr(n + 1, 2);
      if (digits.size() != 2) return nullptr;
      char* end = nullptr;
      const unsigned long value = strtoul(digits.c_str(), &end, 16);
      if (end != digits.c_str() && *end != '\0') return nullptr;
      token.replace(n, 3, 1, static_cast<char>(value));
    }
    if (token.empty()) continue;
    if (node->IsArray()) {
      if (token == "-") return nullptr;
      uint64_t index = 0;
      try {
        index = std::stoul(token);
      } catch (...) {
        return nullptr;
      }
      if (node->Empty() || index > node->Size() - 1) return nullptr;
      node = &(*node)[static_cast<rapidjson::SizeType>(index)];
    } else if (node->IsObject()) {
      const JsonValue* found = nullptr;
      for (const auto& m : node->GetObject()) {
        if (m.name.GetStringLength() == token.size() &&
            strncmp(m.name.GetString(), token.c_str(), m.name.GetStringLength()) == 0) {
          found = &m.value;
          break;
        }
      }
      if (found == nullptr) return nullptr;
      node = found;
    } else {
      return nullptr;
    }
  }
  return node;
}

struct Edge {
  int to;
  bool in_place;
};

struct Vertex {
  const JsonValue* node;
  std::string where;  // "#/properties/a"; a "$ref"'s copy is named by its pointer
  std::vector<Edge> edges;
};

class Graph {
 public:
  explicit Graph(const JsonValue& root) : root_(root) {}

  absl::Status Build() {
    if (!root_.IsObject()) return absl::OkStatus();  // true/false
    if (absl::Status s = Add(&root_, "#", nullptr); !s.ok()) return s;
    while (!pending_.empty()) {
      int v = pending_.back();
      pending_.pop_back();
      if (absl::Status s = Expand(v); !s.ok()) return s;
    }
    return absl::OkStatus();
  }

  // A cycle of in-place steps, or a chain of them too long.
  absl::Status CheckInPlace() const {
    const int n = static_cast<int>(vertices_.size());
    std::vector<int> state(n, 0);  // 0 new, 1 on the stack, 2 done
    std::vector<int> longest(n, 0);
    std::vector<std::pair<int, size_t>> stack;  // vertex, next edge
    for (int start = 0; start < n; ++start) {
      if (state[start] != 0) continue;
      stack.push_back({start, 0});
      state[start] = 1;
      while (!stack.empty()) {
        auto& [v, next] = stack.back();
        const std::vector<Edge>& edges = vertices_[v].edges;
        if (next < edges.size()) {
          const Edge e = edges[next++];
          if (!e.in_place) continue;
          if (state[e.to] == 1) return Cycle(stack, e.to);
          if (state[e.to] == 0) {
            state[e.to] = 1;
            stack.push_back({e.to, 0});
          }
          continue;
        }
        int deepest = 0;
        for (const Edge& e : edges) {
          if (e.in_place) deepest = std::max(deepest, longest[e.to]);
        }
        longest[v] = deepest + 1;
        if (longest[v] > kMaxSchemaInPlaceDepth) {
          return absl::InvalidArgumentError(absl::StrCat(
              "schema: more than ", kMaxSchemaInPlaceDepth,
              " subschemas (\"$ref\", \"allOf\", \"anyOf\", ...) apply to one value in a chain "
              "from ",
              vertices_[v].where));
        }
        state[v] = 2;
        stack.pop_back();
      }
    }
    return absl::OkStatus();
  }

  // The longest path, each strongly connected part counted as its size (a
  // path through it visits each of its subschemas at most once).
  absl::Status CheckDepth() const {
    const int n = static_cast<int>(vertices_.size());
    // Tarjan's algorithm without recursion; parts come out in reverse
    // topological order (each after every part it reaches).
    std::vector<int> index(n, -1), low(n, 0), part(n, -1);
    std::vector<bool> on_stack(n, false);
    std::vector<int> members;
    std::vector<std::pair<int, size_t>> stack;
    std::vector<int> part_longest;
    int counter = 0;
    for (int start = 0; start < n; ++start) {
      if (index[start] >= 0) continue;
      stack.push_back({start, 0});
      index[start] = low[start] = counter++;
      members.push_back(start);
      on_stack[start] = true;
      while (!stack.empty()) {
        auto& [v, next] = stack.back();
        const std::vector<Edge>& edges = vertices_[v].edges;
        if (next < edges.size()) {
          const int w = edges[next++].to;
          if (index[w] < 0) {
            index[w] = low[w] = counter++;
            members.push_back(w);
            on_stack[w] = true;
            stack.push_back({w, 0});
          } else if (on_stack[w]) {
            low[v] = std::min(low[v], index[w]);
          }
          continue;
        }
        const int done = v;
        stack.pop_back();
        if (!stack.empty()) low[stack.back().first] = std::min(low[stack.back().first], low[done]);
        if (low[done] != index[done]) continue;
        const int id = static_cast<int>(part_longest.size());
        std::vector<int> in_part;
        int w;
        do {
          w = members.back();
          members.pop_back();
          on_stack[w] = false;
          part[w] = id;
          in_part.push_back(w);
        } while (w != done);
        int after = 0;
        for (int u : in_part) {
          for (const Edge& e : vertices_[u].edges) {
            if (part[e.to] != id) after = std::max(after, part_longest[part[e.to]]);
          }
        }
        const int size = static_cast<int>(in_part.size());
        part_longest.push_back(size + after);
        if (size + after > kMaxSchemaDepth) {
          return absl::InvalidArgumentError(absl::StrCat(
              "schema: nests deeper than ", kMaxSchemaDepth,
              " subschemas (counting each \"$ref\" followed) from ", vertices_[done].where));
        }
      }
    }
    return absl::OkStatus();
  }

 private:
  absl::Status Add(const JsonValue* node, std::string where, int* id) {
    if (vertices_.size() >= static_cast<size_t>(kMaxSchemaNodes)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "schema: more than ", kMaxSchemaNodes,
          " subschemas (each \"$ref\" counts what it refers to again)"));
    }
    vertices_.push_back({node, std::move(where), {}});
    pending_.push_back(static_cast<int>(vertices_.size()) - 1);
    if (id != nullptr) *id = static_cast<int>(vertices_.size()) - 1;
    return absl::OkStatus();
  }

  absl::Status Child(int v, const JsonValue& child, std::string where, bool in_place) {
    if (!child.IsObject()) return absl::OkStatus();  // true/false, or valijson refuses it
    int id = -1;
    if (absl::Status s = Add(&child, std::move(where), &id); !s.ok()) return s;
    vertices_[v].edges.push_back({id, in_place});
    return absl::OkStatus();
  }

  absl::Status Expand(int v) {
    const JsonValue& node = *vertices_[v].node;
    const std::string where = vertices_[v].where;
    // valijson reads a node with "$ref" as that reference alone.
    if (auto ref = node.FindMember("$ref"); ref != node.MemberEnd()) {
      if (!ref->value.IsString()) return absl::OkStatus();  // valijson refuses it
      absl::string_view text = StringOf(ref->value);
      if (!absl::StartsWith(text, "#")) {
        return absl::InvalidArgumentError(
            absl::StrCat("schema: \"$ref\" '", text.substr(0, 200), "' at ", where,
                         " is not a reference into the schema itself (\"#/...\")"));
      }
      std::string pointer(text.substr(1));
      pointer.erase(pointer.find_last_not_of('/') + 1);
      auto known = copies_.find(pointer);
      if (known != copies_.end()) {
        vertices_[v].edges.push_back({known->second, true});
        return absl::OkStatus();
      }
      const JsonValue* target = Resolve(root_, pointer);
      if (target == nullptr || !target->IsObject()) return absl::OkStatus();
      int id = -1;
      if (absl::Status s = Add(target, absl::StrCat("#", pointer), &id); !s.ok()) return s;
      copies_.emplace(pointer, id);
      vertices_[v].edges.push_back({id, true});
      return absl::OkStatus();
    }
    // valijson appends a relative "id" to the resolution scope each time it
    // meets it: through a cycle, without end.
    if (auto id = node.FindMember("id"); id != node.MemberEnd()) {
      const JsonValue& value = id->value;
      if ((value.IsString() && !absl::StrContains(StringOf(value), "://")) || value.IsNumber() ||
          value.IsBool()) {
        return absl::InvalidArgumentError(
            absl::StrCat("schema: \"id\" ", ToJsonString(value).substr(0, 200), " at ", where,
                         " is not an absolute URI"));
      }
    }
    for (const auto& m : node.GetObject()) {
      absl::string_view key = StringOf(m.name);
      const JsonValue& value = m.value;
      const std::string at = absl::StrCat(where, "/", Escaped(key));
      auto is = [&](absl::Span<const char* const> list) {
        return std::find(list.begin(), list.end(), key) != list.end();
      };
      const bool in_place = is(kInPlaceOne) || is(kInPlaceList) || is(kInPlaceMap);
      if (value.IsObject() && (is(kInPlaceOne) || is(kDescendingOne))) {
        if (absl::Status s = Child(v, value, at, in_place); !s.ok()) return s;
      } else if (value.IsArray() && (is(kInPlaceList) || is(kDescendingList))) {
        for (rapidjson::SizeType i = 0; i < value.Size(); ++i) {
          if (absl::Status s = Child(v, value[i], absl::StrCat(at, "/", i), in_place); !s.ok()) {
            return s;
          }
        }
      } else if (value.IsObject() && (is(kInPlaceMap) || is(kDescendingMap))) {
        for (const auto& entry : value.GetObject()) {
          if (absl::Status s = Child(v, entry.value,
                                     absl::StrCat(at, "/", Escaped(StringOf(entry.name))),
                                     in_place);
              !s.ok()) {
            return s;
          }
        }
      }
    }
    return absl::OkStatus();
  }

  absl::Status Cycle(const std::vector<std::pair<int, size_t>>& stack, int back_to) const {
    std::vector<std::string> steps;
    bool in = false;
    for (const auto& [v, next] : stack) {
      in = in || v == back_to;
      if (in) steps.push_back(vertices_[v].where);
    }
    steps.push_back(vertices_[back_to].where);
    return absl::InvalidArgumentError(
        absl::StrCat("schema: a \"$ref\" cycle: ", absl::StrJoin(steps, " -> "),
                     " (each step applies to the same value: checking it would never end)"));
  }

  const JsonValue& root_;
  std::vector<Vertex> vertices_;
  std::vector<int> pending_;
  // A "$ref"'s pointer -> the copy of what it refers to (valijson parses a
  // target once per spelling).
  absl::flat_hash_map<std::string, int> copies_;
};

}  // namespace

absl::Status CheckSchemaGraph(const JsonValue& document) {
  Graph graph(document);
  if (absl::Status s = graph.Build(); !s.ok()) return s;
  if (absl::Status s = graph.CheckInPlace(); !s.ok()) return s;
  return graph.CheckDepth();
}

}  // namespace toolexec
