// Small string helpers shared by the option parsers and the CLI.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ebb::internal {

std::string Trim(std::string_view s);
std::vector<std::string> Split(std::string_view s, char sep);

// Levenshtein distance (bytes).
size_t EditDistance(std::string_view a, std::string_view b);

// " (did you mean 'x'?)" for the closest candidate within a small edit distance, else "".
std::string DidYouMean(std::string_view word, std::span<const std::string_view> candidates);

// Parses "1,2,3" into int32 values; throws ebb::Error(InvalidArgument) naming `what`.
std::vector<int32_t> ParseIntList(std::string_view s, std::string_view what);

// Human-readable bytes: "1.5 MiB".
std::string FormatBytes(uint64_t bytes);

// A number in at most 6 significant digits ("0.5", "1.8e+308", "nan", "inf"), for messages.
std::string FormatNumber(double value);

// `s` with control bytes, backslashes and bytes that are not valid UTF-8 written
// as \xNN escapes, cut to `max_bytes` (then "..."): safe to put raw file bytes into a message.
std::string EscapeForMessage(std::string_view s, size_t max_bytes = 200);

// Whether `s` is valid UTF-8 (no overlong forms, surrogates or values above U+10FFFF): what a
// JSON document can carry as a string.
bool IsValidUtf8(std::string_view s);

// `s` on one line: runs of newlines/tabs (and surrounding spaces) become one space, trimmed.
std::string OneLine(std::string_view s);

}  // namespace ebb::internal
