#include "tools/runtime/schema_regex.h"

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "rapidjson/pointer.h"

namespace toolexec::schema_regex {
namespace {

// Keywords whose value is a name -> subschema map.
constexpr const char* kSubschemaMapKeywords[] = {"properties", "patternProperties", "definitions",
                                                 "$defs", "dependencies"};
// Keywords whose value is one subschema, or (items, allOf, anyOf, oneOf) a list.
constexpr const char* kSubschemaKeywords[] = {
    "items", "additionalItems", "additionalProperties", "contains", "propertyNames", "not", "if",
    "then", "else", "allOf", "anyOf", "oneOf"};
// valijson reads these as URIs where it parses a schema, and tells a URN with
// std::regex (recursing per character): longer ones are refused there.
constexpr const char* kUriKeywords[] = {"$ref", "id", "$id"};
constexpr size_t kMaxUriLength = 1024;

bool OneOf(absl::string_view key, absl::Span<const char* const> list) {
  for (const char* k : list) {
    if (key == k) return true;
  }
  return false;
}

thread_local const RegexTable* current_table = nullptr;

// Collects the patterns of one document. A node is walked as a schema
// (`known`) when draft 7 reads it as one, or a local "$ref" points at it;
// everything else (data keywords, keywords draft 7 does not define) is walked
// too, because a "$ref" may point anywhere: there a pattern RE2 cannot compile
// is left out (it is data), not refused.
class Collector {
 public:
  Collector(const JsonValue& root, absl::flat_hash_map<std::string, std::unique_ptr<const RE2>>& out)
      : root_(root), out_(out) {}

  absl::Status Run() {
    pending_.push_back({&root_, "#"});
    walked_as_schema_.insert(&root_);
    // "$ref" targets are queued rather than walked where they are found, so
    // a chain of references costs no stack.
    while (!pending_.empty()) {
      auto [node, where] = std::move(pending_.back());
      pending_.pop_back();
      if (absl::Status s = Walk(*node, where, /*known=*/true); !s.ok()) return s;
    }
    return absl::OkStatus();
  }

 private:
  absl::Status Add(absl::string_view pattern, const std::string& where, bool known,
                   absl::string_view what) {
    if (out_.contains(pattern)) return absl::OkStatus();
    if (pattern.find('\0') != absl::string_view::npos) {
      // valijson keeps a pattern only up to its first NUL.
      if (!known) return absl::OkStatus();
      return absl::InvalidArgumentError(absl::StrCat("invalid JSON Schema: the ", what, " at ",
                                                     where, " contains U+0000, which toolexec "
                                                     "cannot match"));
    }
    RE2::Options options;
    options.set_log_errors(false);
    auto re = std::make_unique<const RE2>(re2::StringPiece(pattern.data(), pattern.size()), options);
    if (!re->ok()) {
      if (!known) return absl::OkStatus();
      return absl::InvalidArgumentError(absl::StrCat(
          "invalid JSON Schema: the ", what, " \"", pattern, "\" at ", where,
          " is not RE2 syntax (toolexec matches patterns with RE2, which has no lookaround or "
          "backreferences): ",
          re->error()));
    }
    out_.emplace(std::string(pattern), std::move(re));
    return absl::OkStatus();
  }

  // Queues the node a local "$ref" points at to be walked as a schema.
  void Follow(absl::string_view ref) {
    if (ref.empty() || ref.front() != '#') return;  // remote: valijson refuses it
    rapidjson::Pointer pointer(ref.data(), ref.size());
    if (!pointer.IsValid()) return;
    const JsonValue* target = pointer.Get(root_);
    if (target == nullptr || !walked_as_schema_.insert(target).second) return;
    pending_.push_back({target, std::string(ref)});
  }

  absl::Status Walk(const JsonValue& node, const std::string& where, bool known) {
    if (node.IsArray()) {
      for (rapidjson::SizeType i = 0; i < node.Size(); ++i) {
        if (auto s = Walk(node[i], absl::StrCat(where, "/", i), known); !s.ok()) return s;
      }
      return absl::OkStatus();
    }
    if (!node.IsObject()) return absl::OkStatus();
    for (const auto& member : node.GetObject()) {
      absl::string_view key = StringOf(member.name);
      const JsonValue& value = member.value;
      std::string child = absl::StrCat(where, "/", key);
      if (known && value.IsString() && OneOf(key, kUriKeywords)) {
        absl::string_view uri = StringOf(value);
        if (uri.substr(0, uri.find('#')).size() > kMaxUriLength) {
          return absl::InvalidArgumentError(
              absl::StrCat("invalid JSON Schema: the \"", key, "\" at ", where, " is longer than ",
                           kMaxUriLength, " bytes"));
        }
        if (key == "$ref") Follow(uri);
        continue;
      }
      if (key == "pattern" && value.IsString()) {
        if (auto s = Add(StringOf(value), where, known, "pattern"); !s.ok()) return s;
        continue;
      }
      if (key == "patternProperties" && value.IsObject()) {
        for (const auto& entry : value.GetObject()) {
          if (auto s = Add(StringOf(entry.name), where, known, "patternProperties key"); !s.ok()) {
            return s;
          }
        }
      }
      bool schema_here = known && (OneOf(key, kSubschemaMapKeywords) || OneOf(key, kSubschemaKeywords));
      if (known && OneOf(key, kSubschemaMapKeywords) && value.IsObject()) {
        for (const auto& entry : value.GetObject()) {
          if (auto s = Walk(entry.value, absl::StrCat(child, "/", StringOf(entry.name)), true);
              !s.ok()) {
            return s;
          }
        }
        continue;
      }
      if (auto s = Walk(value, child, schema_here); !s.ok()) return s;
    }
    return absl::OkStatus();
  }

  const JsonValue& root_;
  absl::flat_hash_map<std::string, std::unique_ptr<const RE2>>& out_;
  std::vector<std::pair<const JsonValue*, std::string>> pending_;
  std::set<const JsonValue*> walked_as_schema_;
};

// Shared by both adapters: the constraint's pattern, found in the current
// table or compiled now; null with `error` set when RE2 cannot compile it.
const RE2* RegexFor(absl::string_view pattern, std::unique_ptr<RE2>& local, std::string& error) {
  if (current_table != nullptr) {
    if (const RE2* re = current_table->Find(pattern)) return re;
  }
  RE2::Options options;
  options.set_log_errors(false);
  local = std::make_unique<RE2>(re2::StringPiece(pattern.data(), pattern.size()), options);
  if (local->ok()) return local.get();
  error = absl::StrCat("the schema's pattern \"", pattern,
                       "\" cannot be evaluated: it is not RE2 syntax: ", local->error());
  return nullptr;
}

// "pattern": the string contains a match of the (unanchored) expression.
template <typename AdapterType>
bool MatchPattern(const AdapterType& target, bool strict_types,
                  const std::vector<std::string>& context, valijson::ValidationResults* results,
                  const valijson::constraints::PatternConstraint& constraint) {
  if ((strict_types && !target.isString()) || !target.maybeString()) return true;
  std::string pattern = constraint.getPattern<std::string::allocator_type>();
  std::unique_ptr<RE2> local;
  std::string error;
  const RE2* re = RegexFor(pattern, local, error);
  if (re != nullptr && RE2::PartialMatch(target.asString(), *re)) return true;
  if (results != nullptr) {
    results->pushError(context, re == nullptr
                                    ? error
                                    : absl::StrCat("string does not match the pattern ", pattern));
  }
  return false;
}

bool ValidMonthDay(int month, int day) {
  static constexpr int kDays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return month >= 1 && month <= 12 && day >= 1 && day <= kDays[month - 1];
}

// "format": date, time and date-time as valijson defines them (RFC 3339
// shapes; February may have 29 days in any year); other formats are
// annotations and always pass.
template <typename AdapterType>
bool MatchFormat(const AdapterType& target, bool strict_types,
                 const std::vector<std::string>& context, valijson::ValidationResults* results,
                 const valijson::constraints::FormatConstraint& constraint) {
  if ((strict_types && !target.isString()) || !target.maybeString()) return true;
  const std::string format = constraint.getFormat();
  if (format != "date" && format != "time" && format != "date-time") return true;
  // Never destroyed: a call abandoned at shutdown may still validate.
  static const RE2& kDate = *new RE2("[0-9]+-(0[1-9]|1[012])-(0[1-9]|[12][0-9]|3[01])");
  static const RE2& kTime = *new RE2(
      "(?:[01][0-9]|2[0-3]):[0-5][0-9]:(?:[0-5][0-9]|60)(?:\\.[0-9]+)?"
      "(?:[Zz]|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])");
  static const RE2& kDateTime = *new RE2(absl::StrCat(kDate.pattern(), "[Tt]", kTime.pattern()));
  const std::string text = target.asString();
  int month = 0;
  int day = 0;
  bool ok = false;
  if (format == "date") {
    ok = RE2::FullMatch(text, kDate, &month, &day) && ValidMonthDay(month, day);
  } else if (format == "time") {
    ok = RE2::FullMatch(text, kTime);
  } else {
    ok = RE2::FullMatch(text, kDateTime, &month, &day) && ValidMonthDay(month, day);
  }
  if (!ok && results != nullptr) {
    results->pushError(context, absl::StrCat("String should be a valid ", format));
  }
  return ok;
}

}  // namespace

absl::StatusOr<RegexTable> RegexTable::Build(const JsonValue& schema) {
  RegexTable table;
  Collector collector(schema, table.regexes_);
  if (absl::Status s = collector.Run(); !s.ok()) return s;
  return table;
}

const RE2* RegexTable::Find(absl::string_view pattern) const {
  auto it = regexes_.find(pattern);
  return it == regexes_.end() ? nullptr : it->second.get();
}

ScopedRegexTable::ScopedRegexTable(const RegexTable* table) : previous_(current_table) {
  current_table = table;
}

ScopedRegexTable::~ScopedRegexTable() { current_table = previous_; }

}  // namespace toolexec::schema_regex

namespace valijson {

using toolexec::schema_regex::MatchFormat;
using toolexec::schema_regex::MatchPattern;
using toolexec::schema_regex::RegexFor;

template <>
bool ValidationVisitor<adapters::RapidJsonAdapter>::visit(
    const constraints::PatternConstraint& constraint) {
  return MatchPattern(m_target, m_strictTypes, m_context, m_results, constraint);
}

template <>
bool ValidationVisitor<adapters::StdStringAdapter>::visit(
    const constraints::PatternConstraint& constraint) {
  return MatchPattern(m_target, m_strictTypes, m_context, m_results, constraint);
}

template <>
bool ValidationVisitor<adapters::RapidJsonAdapter>::visit(
    const constraints::FormatConstraint& constraint) {
  return MatchFormat(m_target, m_strictTypes, m_context, m_results, constraint);
}

template <>
bool ValidationVisitor<adapters::StdStringAdapter>::visit(
    const constraints::FormatConstraint& constraint) {
  return MatchFormat(m_target, m_strictTypes, m_context, m_results, constraint);
}

// valijson's own, with "patternProperties" matched by RE2: "properties"
// first, then every pattern against every name (a property must satisfy the
// subschema of each pattern it matches), then "additionalProperties" for the
// names neither matched.
template <>
bool ValidationVisitor<adapters::RapidJsonAdapter>::visit(
    const constraints::PropertiesConstraint& constraint) {
  if ((m_strictTypes && !m_target.isObject()) || !m_target.maybeObject()) return true;
  bool validated = true;
  std::set<std::string> matched;
  const adapters::RapidJsonAdapter::Object object = m_target.asObject();
  constraint.applyToProperties(ValidatePropertySubschemas(object, m_context, true,
                                                          m_results != nullptr, true, m_strictTypes,
                                                          m_results, &matched, &validated,
                                                          m_regexesCache));
  if (!validated && m_results == nullptr) return false;

  constraint.applyToPatternProperties([&](const auto& key, const Subschema* subschema) {
    std::string pattern(key.data(), key.size());
    std::unique_ptr<RE2> local;
    std::string error;
    const RE2* re = RegexFor(pattern, local, error);
    if (re == nullptr) {
      if (m_results != nullptr) m_results->pushError(m_context, error);
      validated = false;
      return m_results != nullptr;
    }
    for (const adapters::RapidJsonAdapter::ObjectMember m : object) {
      if (!RE2::PartialMatch(m.first, *re)) continue;
      matched.insert(m.first);
      std::vector<std::string> context = m_context;
      context.push_back("[" + m.first + "]");
      ValidationVisitor validator(m.second, context, m_strictTypes, m_results, m_regexesCache);
      if (validator.validateSchema(*subschema)) continue;
      if (m_results == nullptr) {
        validated = false;
        return false;
      }
      m_results->pushError(m_context, absl::StrCat("Failed to validate against schema associated "
                                                   "with pattern '",
                                                   pattern, "'."));
      validated = false;
    }
    return true;
  });
  if (!validated && m_results == nullptr) return false;

  const Subschema* additional = constraint.getAdditionalPropertiesSubschema();
  if (additional == nullptr) {
    if (matched.size() == m_target.getObjectSize()) return validated;
    if (m_results != nullptr) {
      for (const adapters::RapidJsonAdapter::ObjectMember m : object) {
        if (matched.count(m.first) == 0) {
          m_results->pushError(m_context,
                               "Object contains a property that could not be validated using "
                               "'properties' or 'additionalProperties' constraints: '" +
                                   m.first + "'.");
          break;
        }
      }
    }
    return false;
  }
  for (const adapters::RapidJsonAdapter::ObjectMember m : object) {
    if (matched.count(m.first) != 0) continue;
    std::vector<std::string> context = m_context;
    context.push_back("[" + m.first + "]");
    ValidationVisitor validator(m.second, context, m_strictTypes, m_results, m_regexesCache);
    if (validator.validateSchema(*additional)) continue;
    if (m_results == nullptr) return false;
    m_results->pushError(m_context, "Failed to validate against additional properties schema");
    validated = false;
  }
  return validated;
}

// A property name is a string, never an object: the constraint holds.
template <>
bool ValidationVisitor<adapters::StdStringAdapter>::visit(const constraints::PropertiesConstraint&) {
  return true;
}

}  // namespace valijson
