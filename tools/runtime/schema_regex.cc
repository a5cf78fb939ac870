// valijson's RapidJSON adapter must come before any RapidJSON header (see
// schema.cc).
#include "valijson/adapters/rapidjson_adapter.hpp"
// clang-format off
#include "tools/runtime/schema_regex.h"
// clang-format on

#include <optional>
#include <regex>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "valijson/constraint_builder.hpp"
#include "valijson/constraints/concrete_constraints.hpp"
#include "valijson/schema_parser.hpp"
#include "valijson/validation_results.hpp"

namespace toolexec::schema_regex {
namespace {

// The keywords "pattern" and "format" become in the copy given to valijson.
constexpr char kPatternKeyword[] = "x-toolexec-pattern";
constexpr char kFormatKeyword[] = "x-toolexec-format";

// Keywords whose value is a name -> subschema map.
constexpr const char* kSubschemaMapKeywords[] = {"properties", "patternProperties", "definitions",
                                                 "$defs", "dependencies"};
// Keywords whose value is one subschema, or (items, allOf, anyOf, oneOf) a list.
constexpr const char* kSubschemaKeywords[] = {
    "items", "additionalItems", "additionalProperties", "contains", "propertyNames", "not", "if",
    "then", "else", "allOf", "anyOf", "oneOf"};
// Keywords whose value is data, never a schema.
constexpr const char* kDataKeywords[] = {"enum",  "const",       "default", "examples",
                                         "required", "type",     "$ref",    "$id",
                                         "$schema",  "$comment", "title",   "description"};

bool OneOf(absl::string_view key, absl::Span<const char* const> list) {
  for (const char* k : list) {
    if (key == k) return true;
  }
  return false;
}

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
    // Never destroyed: a call abandoned at shutdown may still validate.
    static const RE2& kDate = *new RE2("[0-9]+-(0[1-9]|1[012])-(0[1-9]|[12][0-9]|3[01])");
    static const RE2& kTime = *new RE2(
        "(?:[01][0-9]|2[0-3]):[0-5][0-9]:(?:[0-5][0-9]|60)(?:\\.[0-9]+)?"
        "(?:[Zz]|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])");
    static const RE2& kDateTime =
        *new RE2(absl::StrCat(kDate.pattern(), "[Tt]", kTime.pattern()));
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

// The rewritten keyword's value is the pattern's index in the table.
class PatternBuilder final : public valijson::ConstraintBuilder {
 public:
  explicit PatternBuilder(const PatternTable& patterns) : patterns_(patterns) {}
  Constraint* make(const Adapter& node) const override {
    size_t i = 0;
    if (!absl::SimpleAtoi(node.asString(), &i) || i >= patterns_.size()) {
      throw std::runtime_error("a pattern toolexec did not compile");
    }
    return new PatternConstraint(patterns_[i].text, patterns_[i].re);
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

struct Walk {
  Json::AllocatorType& alloc;
  PatternTable& patterns;
  RewriteResult& result;
};

// Rewrites one schema object and everything below it that could be a schema.
// `known`: draft 7 reads this position as a schema. Objects under keywords
// valijson does not know are walked too, because a $ref can point anywhere;
// there a pattern RE2 cannot compile is left alone instead of refused.
absl::Status RewriteNode(JsonValue& node, const std::string& where, bool known, Walk& w) {
  if (!node.IsObject()) return absl::OkStatus();
  for (auto& member : node.GetObject()) {
    absl::string_view key(member.name.GetString(), member.name.GetStringLength());
    JsonValue& value = member.value;
    std::string child = absl::StrCat(where, "/", key);
    if (absl::StartsWith(key, "x-toolexec-")) {
      return absl::InvalidArgumentError(absl::StrCat("invalid JSON Schema: the keyword \"", key,
                                                     "\" at ", where, " is reserved"));
    }
    if (key == "pattern" && value.IsString()) {
      std::string pattern(value.GetString(), value.GetStringLength());
      RE2::Options options;
      options.set_log_errors(false);
      auto re = std::make_shared<const RE2>(pattern, options);
      if (!re->ok()) {
        if (!known) continue;
        return absl::InvalidArgumentError(absl::StrCat(
            "invalid JSON Schema: the pattern \"", pattern, "\" at ", where,
            " is not RE2 syntax (no lookaround or backreferences): ", re->error()));
      }
      value.SetString(absl::StrCat(w.patterns.size()), w.alloc);
      w.patterns.push_back({std::move(pattern), std::move(re)});
      member.name.SetString(kPatternKeyword, w.alloc);
    } else if (key == "format" && value.IsString()) {
      member.name.SetString(kFormatKeyword, w.alloc);
    } else if (OneOf(key, kSubschemaMapKeywords) && value.IsObject()) {
      if (key == "patternProperties") {
        w.result.has_pattern_properties = true;
        for (const auto& entry : value.GetObject()) {
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
      for (auto& entry : value.GetObject()) {
        std::string name(entry.name.GetString(), entry.name.GetStringLength());
        if (auto s = RewriteNode(entry.value, absl::StrCat(child, "/", name), known, w); !s.ok()) {
          return s;
        }
      }
    } else if (OneOf(key, kDataKeywords)) {
      continue;
    } else {
      bool schema_here = known && OneOf(key, kSubschemaKeywords);
      if (value.IsObject()) {
        if (auto s = RewriteNode(value, child, schema_here, w); !s.ok()) return s;
      } else if (value.IsArray()) {
        for (rapidjson::SizeType i = 0; i < value.Size(); ++i) {
          if (auto s = RewriteNode(value[i], absl::StrCat(child, "/", i), schema_here, w);
              !s.ok()) {
            return s;
          }
        }
      }
    }
  }
  return absl::OkStatus();
}

// The path of the first over-long property name below `value`, built only
// on the way back from a find, or nullopt.
std::optional<std::string> FindLongName(const JsonValue& value, size_t* length) {
  if (value.IsObject()) {
    for (const auto& member : value.GetObject()) {
      absl::string_view name(member.name.GetString(), member.name.GetStringLength());
      if (name.size() > kMaxPatternPropertyName) {
        *length = name.size();
        return std::string();
      }
      if (auto below = FindLongName(member.value, length)) {
        return absl::StrCat(".", name.substr(0, 64), *below);
      }
    }
  } else if (value.IsArray()) {
    for (rapidjson::SizeType i = 0; i < value.Size(); ++i) {
      if (auto below = FindLongName(value[i], length)) return absl::StrCat("[", i, "]", *below);
    }
  }
  return std::nullopt;
}

}  // namespace

absl::Status Rewrite(JsonValue& schema, Json::AllocatorType& alloc, PatternTable& patterns,
                     RewriteResult& result) {
  Walk walk{alloc, patterns, result};
  return RewriteNode(schema, "#", /*known=*/true, walk);
}

void AddConstraintBuilders(valijson::SchemaParser& parser, const PatternTable& patterns) {
  parser.addConstraintBuilder(kPatternKeyword, new PatternBuilder(patterns));
  parser.addConstraintBuilder(kFormatKeyword, new FormatBuilder());
}

absl::Status CheckPropertyNameLengths(const JsonValue& args) {
  size_t length = 0;
  std::optional<std::string> path = FindLongName(args, &length);
  if (!path.has_value()) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("invalid arguments: args", *path, ": a property name of ", length,
                   " bytes is longer than the ", kMaxPatternPropertyName,
                   " this tool's schema (patternProperties) accepts"));
}

}  // namespace toolexec::schema_regex
