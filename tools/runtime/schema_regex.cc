// valijson's RapidJSON adapter must come before any RapidJSON header (see
// schema.cc).
#include "valijson/adapters/rapidjson_adapter.hpp"
// clang-format off
#include "tools/runtime/schema_regex.h"
// clang-format on

#include <regex>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "valijson/constraint_builder.hpp"
#include "valijson/constraints/concrete_constraints.hpp"
#include "valijson/schema_parser.hpp"
#include "valijson/validation_results.hpp"

namespace toolexec::schema_regex {
namespace {

// The keywords "pattern" and "format" become in the copy given to valijson.
constexpr char kPatternKeyword[] = "x-toolexec-pattern";
constexpr char kFormatKeyword[] = "x-toolexec-format";

// Keywords whose value is one subschema, a list of them, or a name -> subschema map.
constexpr const char* kSubschemaKeywords[] = {
    "items",         "additionalItems", "additionalProperties", "contains", "propertyNames",
    "not",           "if",              "then",                 "else"};
constexpr const char* kSubschemaListKeywords[] = {"items", "allOf", "anyOf", "oneOf"};
constexpr const char* kSubschemaMapKeywords[] = {"properties", "patternProperties",
                                                 "definitions", "$defs", "dependencies"};

using valijson::ValidationResults;
using valijson::adapters::Adapter;
using valijson::constraints::Constraint;
using valijson::constraints::PolyConstraint;

// valijson copies constraints into its own storage.
template <typename Derived>
class CopyableConstraint : public PolyConstraint {
 private:
  Constraint* cloneInto(void* memory) const override {
    return new (memory) Derived(static_cast<const Derived&>(*this));
  }
  size_t sizeOf() const override { return sizeof(Derived); }
};

// "pattern": the string contains a match of the (unanchored) expression.
class PatternConstraint final : public CopyableConstraint<PatternConstraint> {
 public:
  PatternConstraint(std::string pattern, std::shared_ptr<const RE2> re)
      : pattern_(std::move(pattern)), re_(std::move(re)) {}

  bool validate(const Adapter& target, const std::vector<std::string>& context,
                ValidationResults* results) const override {
    if (!target.isString()) return true;
    std::string text = target.asString();
    if (RE2::PartialMatch(text, *re_)) return true;
    if (results != nullptr) {
      results->pushError(context, absl::StrCat("string does not match the pattern ", pattern_));
    }
    return false;
  }

 private:
  std::string pattern_;
  std::shared_ptr<const RE2> re_;
};

bool ValidMonthDay(int month, int day) {
  static constexpr int kDays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return month >= 1 && month <= 12 && day >= 1 && day <= kDays[month - 1];
}

// "format": date, time and date-time as valijson defines them (RFC 3339
// shapes; February may have 29 days in any year); other formats are
// annotations and always pass.
class FormatConstraint final : public CopyableConstraint<FormatConstraint> {
 public:
  explicit FormatConstraint(std::string format) : format_(std::move(format)) {}

  bool validate(const Adapter& target, const std::vector<std::string>& context,
                ValidationResults* results) const override {
    if (!target.isString()) return true;
    if (format_ != "date" && format_ != "time" && format_ != "date-time") return true;
    static const RE2 kDate("[0-9]+-(0[1-9]|1[012])-(0[1-9]|[12][0-9]|3[01])");
    static const RE2 kTime(
        "(?:[01][0-9]|2[0-3]):[0-5][0-9]:(?:[0-5][0-9]|60)(?:\\.[0-9]+)?"
        "(?:[Zz]|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])");
    static const RE2 kDateTime(absl::StrCat(kDate.pattern(), "[Tt]", kTime.pattern()));
    std::string text = target.asString();
    int month = 0;
    int day = 0;
    bool ok = false;
    if (format_ == "date") {
      ok = RE2::FullMatch(text, kDate, &month, &day) && ValidMonthDay(month, day);
    } else if (format_ == "time") {
      ok = RE2::FullMatch(text, kTime);
    } else {
      ok = RE2::FullMatch(text, kDateTime, &month, &day) && ValidMonthDay(month, day);
    }
    if (!ok && results != nullptr) {
      results->pushError(context, absl::StrCat("String should be a valid ", format_));
    }
    return ok;
  }

 private:
  std::string format_;
};

class PatternBuilder final : public valijson::ConstraintBuilder {
 public:
  explicit PatternBuilder(const PatternTable& patterns) : patterns_(patterns) {}
  Constraint* make(const Adapter& node) const override {
    std::string pattern = node.asString();
    return new PatternConstraint(pattern, patterns_.at(pattern));
  }

 private:
  const PatternTable& patterns_;
};

class FormatBuilder final : public valijson::ConstraintBuilder {
 public:
  Constraint* make(const Adapter& node) const override {
    return new FormatConstraint(node.asString());
  }
};

JsonValue* Member(JsonValue& object, const char* name) {
  auto it = object.FindMember(name);
  return it == object.MemberEnd() ? nullptr : &it->value;
}

absl::Status RewriteNode(JsonValue& node, const std::string& where, Json::AllocatorType& alloc,
                         PatternTable& patterns, RewriteResult& result) {
  if (!node.IsObject()) return absl::OkStatus();
  for (auto& member : node.GetObject()) {
    absl::string_view key(member.name.GetString(), member.name.GetStringLength());
    if (key == "pattern" && member.value.IsString()) {
      std::string pattern = member.value.GetString();
      if (!patterns.contains(pattern)) {
        RE2::Options options;
        options.set_log_errors(false);
        auto re = std::make_shared<const RE2>(pattern, options);
        if (!re->ok()) {
          return absl::InvalidArgumentError(absl::StrCat(
              "invalid JSON Schema: the pattern \"", pattern, "\" at ", where,
              " is not RE2 syntax (no lookaround or backreferences): ", re->error()));
        }
        patterns.emplace(pattern, std::move(re));
      }
      member.name.SetString(kPatternKeyword, alloc);
    } else if (key == "format" && member.value.IsString()) {
      member.name.SetString(kFormatKeyword, alloc);
    }
  }
  if (JsonValue* pp = Member(node, "patternProperties"); pp != nullptr && pp->IsObject()) {
    result.has_pattern_properties = true;
    for (const auto& entry : pp->GetObject()) {
      try {
        std::regex check(entry.name.GetString(), entry.name.GetStringLength());
      } catch (const std::regex_error& e) {
        return absl::InvalidArgumentError(
            absl::StrCat("invalid JSON Schema: the patternProperties key \"",
                         entry.name.GetString(), "\" at ", where,
                         " is not a valid regular expression: ", e.what()));
      }
    }
  }
  for (const char* keyword : kSubschemaKeywords) {
    if (JsonValue* sub = Member(node, keyword); sub != nullptr && sub->IsObject()) {
      if (auto s = RewriteNode(*sub, absl::StrCat(where, "/", keyword), alloc, patterns, result);
          !s.ok()) {
        return s;
      }
    }
  }
  for (const char* keyword : kSubschemaListKeywords) {
    JsonValue* list = Member(node, keyword);
    if (list == nullptr || !list->IsArray()) continue;
    for (rapidjson::SizeType i = 0; i < list->Size(); ++i) {
      if (auto s = RewriteNode((*list)[i], absl::StrCat(where, "/", keyword, "/", i), alloc,
                               patterns, result);
          !s.ok()) {
        return s;
      }
    }
  }
  for (const char* keyword : kSubschemaMapKeywords) {
    JsonValue* map = Member(node, keyword);
    if (map == nullptr || !map->IsObject()) continue;
    for (auto& entry : map->GetObject()) {
      std::string child = absl::StrCat(where, "/", keyword, "/", entry.name.GetString());
      if (auto s = RewriteNode(entry.value, child, alloc, patterns, result); !s.ok()) return s;
    }
  }
  return absl::OkStatus();
}

absl::Status CheckNames(const JsonValue& value, const std::string& path) {
  if (value.IsObject()) {
    for (const auto& member : value.GetObject()) {
      if (member.name.GetStringLength() > kMaxPatternPropertyName) {
        return absl::InvalidArgumentError(absl::StrCat(
            "invalid arguments: ", path, ": a property name of ", member.name.GetStringLength(),
            " bytes is longer than the ", kMaxPatternPropertyName,
            " this tool's schema (patternProperties) accepts"));
      }
      if (auto s = CheckNames(member.value, absl::StrCat(path, ".", member.name.GetString()));
          !s.ok()) {
        return s;
      }
    }
  } else if (value.IsArray()) {
    for (rapidjson::SizeType i = 0; i < value.Size(); ++i) {
      if (auto s = CheckNames(value[i], absl::StrCat(path, "[", i, "]")); !s.ok()) return s;
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status Rewrite(JsonValue& schema, Json::AllocatorType& alloc, PatternTable& patterns,
                     RewriteResult& result) {
  return RewriteNode(schema, "#", alloc, patterns, result);
}

void AddConstraintBuilders(valijson::SchemaParser& parser, const PatternTable& patterns) {
  parser.addConstraintBuilder(kPatternKeyword, new PatternBuilder(patterns));
  parser.addConstraintBuilder(kFormatKeyword, new FormatBuilder());
}

absl::Status CheckPropertyNameLengths(const JsonValue& args) { return CheckNames(args, "args"); }

}  // namespace toolexec::schema_regex
