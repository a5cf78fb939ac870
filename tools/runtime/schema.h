// A tool's argument schema, parsed and compiled once at registration, and the
// S4 pipeline every call's arguments go through: coerce, validate, default.
// Thread safety: immutable after Compile(); Prepare() may run concurrently.
#ifndef TOOLEXEC_TOOLS_RUNTIME_SCHEMA_H_
#define TOOLEXEC_TOOLS_RUNTIME_SCHEMA_H_

#include <memory>
#include "absl/strings/string_view.h"

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "tools/runtime/json.h"

namespace valijson {
class Schema;
}

namespace toolexec {

class CompiledSchema final {
 public:
  // Parses JSON Schema text (draft 7). InvalidArgument with the reason if the
  // text is not JSON, not an object, or not a valid schema.
  static absl::StatusOr<std::unique_ptr<CompiledSchema>> Compile(absl::string_view schema_text);
  ~CompiledSchema();

  // S4 in order: Coerce, Validate, ApplyDefaults. InvalidArgument naming the
  // JSON path and the rule broken when validation fails.
  absl::Status Prepare(Json& args) const;

  // Converts values to the type the schema wants where that is unambiguous:
  // "3"->3 (integer), "0.5"->0.5 (number), "true"/"FALSE"->bool, 7->"7" (string),
  // JSON text -> array/object; recursively through properties, items and
  // ["T","null"] types. Anything else is left as it is.
  void Coerce(Json& args) const;
  absl::Status Validate(const JsonValue& args) const;
  // Fills absent optional properties that declare a "default".
  void ApplyDefaults(Json& args) const;

  // The schema document (what ListTools shows the model).
  const Json& document() const { return document_; }

 private:
  CompiledSchema() = default;

  Json document_;
  std::unique_ptr<valijson::Schema> compiled_;
  // The schema has patternProperties, which valijson matches with std::regex:
  // property names are bounded before validation.
  bool check_property_names_ = false;
};

}  // namespace toolexec

#endif  // TOOLEXEC_TOOLS_RUNTIME_SCHEMA_H_
