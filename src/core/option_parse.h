// Typed value parsers shared by every option setter, so that one spelling is accepted
// everywhere. Each throws ebb::Error(InvalidArgument) naming the key, the value and what is
// accepted.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "ebb/options.h"

namespace ebb::internal {

// true/false (any case), 1/0.
bool ParseBool(std::string_view key, std::string_view value);
// A decimal integer in [min, max].
int64_t ParseInt(std::string_view key, std::string_view value, int64_t min, int64_t max);
// A finite decimal number in [min, max].
double ParseFloat(std::string_view key, std::string_view value, double min, double max);

// Whether a chat_template value is the template text itself ({{, {% or {# in it), not a file.
bool IsChatTemplateText(std::string_view value);

// Checks an ORT run option entry as ORT would take it: the key 1 to 1024 bytes, the value at most
// 4096, both valid UTF-8. Throws InvalidArgument naming the key; used wherever a run option is
// set (ModelOptions::Set, ModelControls::SetRunOption), so a bad key fails there, not later.
void CheckRunOptionEntry(const std::string& key, const std::string& value);

// Checks `value` against the spec's type and range (without applying it).
void ValidateOptionValue(const OptionSpec& spec, std::string_view value);

// Checks a number given as a typed field (GeneratorParams filled by a C++ caller, a config's
// search block) against the option table's range for `key`, so that a struct field and Set()
// accept exactly the same values. Throws InvalidArgument "KEY=VALUE is out of range: need LO to
// HI" (NaN and infinities too); `hint` (e.g. "0 = greedy") is appended in parentheses.
void CheckOptionRange(std::string_view key, double value, std::string_view hint = {});

// An enum row's choice for `value`: the choice itself, or the choice an alias names
// (spec.aliases, e.g. ORT_SEQUENTIAL -> sequential). Throws InvalidArgument listing the choices
// and aliases otherwise. The one enum validator: setters and genai_config.json's session_options
// (BuildSessionOptions) both call it, so a value means the same on every path.
std::string CanonicalEnumValue(const OptionSpec& spec, std::string_view value);

// Throws InvalidArgument for a key that is in no scope of the table: "unknown option 'x'
// (did you mean 'y'?)" listing the keys of `scope`.
[[noreturn]] void ThrowUnknownKey(std::string_view key, OptionScope scope,
                                  std::string_view extra_hint = {});
// A key that is in the table but not in `scope`: names the scope where it belongs.
[[noreturn]] void ThrowWrongScope(const OptionSpec& spec, OptionScope scope);

}  // namespace ebb::internal
