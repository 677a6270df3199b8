// IsIncompleteJsonObject: tells a JSON Lines line that its writer has not finished from one that
// is malformed. FileSplitReader asks it about a last line without "\n" that JsonRecordParser
// rejected: an incomplete one is input not yet written (left for a later read), not a bad record.
//
// Threading: a pure function.
#pragma once

#include <string_view>

namespace keyflow {

// True if `text` is a proper prefix of a JSON object: after optional leading whitespace it
// starts with '{', every byte so far is valid JSON (UTF-8 included), and the object is still
// open — inside a string, an escape, a multi-byte character, a number, a literal, a nested array
// or object, or between members. Appending bytes could then make it a valid line.
// False for a complete object (with or without trailing whitespace), for blank text, for text
// that is not an object, and for text that no continuation could make valid JSON.
bool IsIncompleteJsonObject(std::string_view text);

}  // namespace keyflow
