// A tool's argument schema, parsed and compiled once at registration, and the
// [Arguments] pipeline every call's arguments go through: coerce, validate, default.
// Regular expressions in a schema are matched with RE2, never std::regex
// (schema_regex.h).
// Thread safety: immutable after Compile(); Prepare() may run concurrently.
#ifndef TOOLEXEC_TOOLS_RUNTIME_SCHEMA_H_
#define TOOLEXEC_TOOLS_RUNTIME_SCHEMA_H_

#include <memory>
#include <string>
#include "absl/strings/string_view.h"

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "tools/runtime/json.h"

namespace valijson {
class Schema;
}

namespace toolexec {

namespace schema_regex {
class RegexTable;
}

class CompiledSchema final {
 public:
  // Parses JSON Schema text (draft 7). InvalidArgument with the reason if the
  // text is not JSON, not an object, or not a valid schema.
  // The schema must describe an object ("type": "object" or no type).
  static absl::StatusOr<std::unique_ptr<CompiledSchema>> Compile(absl::string_view schema_text);
  // A schema (object or boolean) for any JSON value, such as the finish tool's
  // output; messages name the value and paths from `value_name`
  // ("invalid output: output.items[1]: ..."). References resolve against
  // this schema as the document root.
  static absl::StatusOr<std::unique_ptr<CompiledSchema>> CompileForValue(
      absl::string_view schema_text, absl::string_view value_name);
  ~CompiledSchema();

  // [Arguments] in order: Coerce, Validate, ApplyDefaults. InvalidArgument naming the
  // JSON path and the rule broken when validation fails. Arguments must be a
  // JSON object; a value schema's value may be anything.
  absl::Status Prepare(Json& args) const;

  // Converts values to the type the schema wants where that is unambiguous:
  // "3"->3 (integer), "0.5"->0.5 (number), "true"/"FALSE"->bool, 7->"7" (string),
  // JSON text -> array/object; recursively through properties, items and
  // ["T","null"] types. Anything else is left as it is. Every integral number
  // (1.0, 1e2) within +-2^53 becomes an integer everywhere in the value, as
  // the Struct channel does, so it is an integer on both channels.
  void Coerce(Json& args) const;
  // Draft 7 validation. An integral number is an integer (1.0 is "integer").
  absl::Status Validate(const JsonValue& args) const;
  // Fills absent optional properties that declare a "default".
  void ApplyDefaults(Json& args) const;

  // The schema document (what ListTools shows the model).
  const Json& document() const { return document_; }

 private:
  CompiledSchema();
  static absl::StatusOr<std::unique_ptr<CompiledSchema>> Build(Json document);
  // Validate, for a value whose integral numbers are integers already.
  absl::Status ValidateExact(const JsonValue& args) const;

  Json document_;
  std::unique_ptr<valijson::Schema> compiled_;
  std::unique_ptr<const schema_regex::RegexTable> regexes_;
  // "args" for tool arguments, else the name CompileForValue was given.
  std::string value_name_ = "args";
};

}  // namespace toolexec

#endif  // TOOLEXEC_TOOLS_RUNTIME_SCHEMA_H_
