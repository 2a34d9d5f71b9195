// Python's str operations on UTF-8 strings, as the chat templates use them: lengths, indexing
// and slicing count characters (code points); whitespace is str.isspace()'s (Unicode); case
// mapping covers ASCII, Latin-1, Latin Extended-A, Greek and Cyrillic (Python's full Unicode
// tables are not built in: other scripts keep their case). Invalid UTF-8 bytes count as one
// character each and are kept as they are.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/util/strings.h"  // AppendUtf8

namespace unmask::jinja::py {

// The code point at s[i] and its length in bytes (an invalid byte: itself, length 1).
char32_t DecodeAt(const std::string& s, std::size_t i, std::size_t* length);
// The byte offset of every character, plus s.size() at the end.
std::vector<std::size_t> CharOffsets(const std::string& s);
std::size_t CharCount(const std::string& s);
std::vector<std::string> Chars(const std::string& s);

bool IsSpace(char32_t cp);  // str.isspace()
bool IsCased(char32_t cp);  // has an upper or lower case form (approximately Python's)
bool IsAlpha(char32_t cp);
bool IsDigit(char32_t cp);
char32_t SimpleUpper(char32_t cp);
char32_t SimpleLower(char32_t cp);

std::string Upper(const std::string& s);
std::string Lower(const std::string& s);
std::string Capitalize(const std::string& s);  // str.capitalize()
std::string Title(const std::string& s);       // str.title()

// str.strip / lstrip / rstrip: `chars` null: whitespace.
std::string Strip(const std::string& s, const std::string* chars, bool left, bool right);
// str.split / rsplit: `sep` null: runs of whitespace; maxsplit < 0: no limit.
std::vector<std::string> Split(const std::string& s, const std::string* sep, std::int64_t maxsplit);
std::vector<std::string> RSplit(const std::string& s, const std::string* sep, std::int64_t maxsplit);
std::vector<std::string> SplitLines(const std::string& s);
// str.replace (count < 0: all), str.find / rfind / count (in characters).
std::string Replace(const std::string& s, const std::string& old, const std::string& with, std::int64_t count,
                    std::size_t max_bytes);
std::int64_t Find(const std::string& s, const std::string& sub, bool reverse);
std::int64_t Count(const std::string& s, const std::string& sub);
bool StartsWith(const std::string& s, const std::string& prefix);
bool EndsWith(const std::string& s, const std::string& suffix);

// Python's slice arithmetic: the indices of s[start:stop:step] for a sequence of `length`.
std::vector<std::int64_t> SliceIndices(std::int64_t length, std::optional<std::int64_t> start,
                                       std::optional<std::int64_t> stop, std::optional<std::int64_t> step);

}  // namespace unmask::jinja::py
