#include "worker/sources/json_prefix.h"

#include <cstddef>
#include <string>

namespace keyflow {
namespace {

// How scanning one token (string, number, literal) went.
enum class Scan {
  kDone,     // the token is complete; the index is past it
  kEnded,    // the text ended inside the token, which is valid so far
  kInvalid,  // no continuation makes it valid
};

bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}
bool IsDigit(char c) {
  return c >= '0' && c <= '9';
}
bool IsHexDigit(char c) {
  return IsDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

// A string whose opening quote is at text[*i].
Scan ScanString(std::string_view text, size_t* i) {
  size_t p = *i + 1;
  while (p < text.size()) {
    const auto c = static_cast<unsigned char>(text[p]);
    if (c == '"') {
      *i = p + 1;
      return Scan::kDone;
    }
    if (c == '\\') {
      if (p + 1 >= text.size()) return Scan::kEnded;
      const char e = text[p + 1];
      if (e == 'u') {
        for (size_t k = 2; k < 6; ++k) {
          if (p + k >= text.size()) return Scan::kEnded;
          if (!IsHexDigit(text[p + k])) return Scan::kInvalid;
        }
        p += 6;
      } else if (e == '"' || e == '\\' || e == '/' || e == 'b' || e == 'f' || e == 'n' ||
                 e == 'r' || e == 't') {
        p += 2;
      } else {
        return Scan::kInvalid;
      }
      continue;
    }
    if (c < 0x20) return Scan::kInvalid;  // control characters must be escaped
    if (c < 0x80) {
      ++p;
      continue;
    }
    // A UTF-8 sequence (RFC 3629: no overlong forms, no surrogates, at most U+10FFFF): the lead
    // byte gives the number of continuation bytes and the range of the first one.
    size_t continuation = 0;
    unsigned char low = 0x80, high = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) {
      continuation = 1;
    } else if (c == 0xE0) {
      continuation = 2;
      low = 0xA0;
    } else if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) {
      continuation = 2;
    } else if (c == 0xED) {
      continuation = 2;
      high = 0x9F;
    } else if (c == 0xF0) {
      continuation = 3;
      low = 0x90;
    } else if (c >= 0xF1 && c <= 0xF3) {
      continuation = 3;
    } else if (c == 0xF4) {
      continuation = 3;
      high = 0x8F;
    } else {
      return Scan::kInvalid;
    }
    for (size_t k = 1; k <= continuation; ++k) {
      if (p + k >= text.size()) return Scan::kEnded;
      const auto b = static_cast<unsigned char>(text[p + k]);
      if (k == 1 ? (b < low || b > high) : (b < 0x80 || b > 0xBF)) return Scan::kInvalid;
    }
    p += continuation + 1;
  }
  return Scan::kEnded;
}

// A number starting at text[*i]: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
Scan ScanNumber(std::string_view text, size_t* i) {
  size_t p = *i;
  auto at_end = [&] { return p >= text.size(); };
  if (text[p] == '-') ++p;
  if (at_end()) return Scan::kEnded;
  if (text[p] == '0') {
    ++p;
  } else if (IsDigit(text[p])) {
    while (!at_end() && IsDigit(text[p])) ++p;
  } else {
    return Scan::kInvalid;
  }
  if (at_end()) return Scan::kEnded;
  if (text[p] == '.') {
    ++p;
    if (at_end()) return Scan::kEnded;
    if (!IsDigit(text[p])) return Scan::kInvalid;
    while (!at_end() && IsDigit(text[p])) ++p;
    if (at_end()) return Scan::kEnded;
  }
  if (text[p] == 'e' || text[p] == 'E') {
    ++p;
    if (at_end()) return Scan::kEnded;
    if (text[p] == '+' || text[p] == '-') ++p;
    if (at_end()) return Scan::kEnded;
    if (!IsDigit(text[p])) return Scan::kInvalid;
    while (!at_end() && IsDigit(text[p])) ++p;
    if (at_end()) return Scan::kEnded;
  }
  *i = p;
  return Scan::kDone;
}

// `word` (true, false, null) starting at text[*i].
Scan ScanLiteral(std::string_view text, size_t* i, std::string_view word) {
  for (size_t k = 0; k < word.size(); ++k) {
    if (*i + k >= text.size()) return Scan::kEnded;
    if (text[*i + k] != word[k]) return Scan::kInvalid;
  }
  *i += word.size();
  return Scan::kDone;
}

}  // namespace

bool IsIncompleteJsonObject(std::string_view text) {
  enum class Expect { kValue, kFirstKeyOrEnd, kKey, kColon, kFirstValueOrEnd, kCommaOrEnd, kNone };
  std::string open;  // the containers not yet closed, outermost first: '{' or '['
  size_t i = 0;
  while (i < text.size() && IsSpace(text[i])) ++i;
  if (i == text.size() || text[i] != '{') return false;
  Expect expect = Expect::kValue;
  // Closes the innermost container if `c` is its end.
  auto close = [&](char c) {
    if (c != (open.back() == '{' ? '}' : ']')) return false;
    open.pop_back();
    ++i;
    expect = open.empty() ? Expect::kNone : Expect::kCommaOrEnd;
    return true;
  };
  while (true) {
    while (i < text.size() && IsSpace(text[i])) ++i;
    if (i == text.size()) return !open.empty();
    const char c = text[i];
    Scan scan = Scan::kDone;
    switch (expect) {
      case Expect::kNone:  // something after the object
        return false;
      case Expect::kColon:
        if (c != ':') return false;
        ++i;
        expect = Expect::kValue;
        continue;
      case Expect::kCommaOrEnd:
        if (c == ',') {
          ++i;
          expect = open.back() == '{' ? Expect::kKey : Expect::kValue;
          continue;
        }
        if (close(c)) continue;
        return false;
      case Expect::kFirstKeyOrEnd:
        if (close(c)) continue;
        [[fallthrough]];
      case Expect::kKey:
        if (c != '"') return false;
        scan = ScanString(text, &i);
        if (scan != Scan::kDone) return scan == Scan::kEnded;
        expect = Expect::kColon;
        continue;
      case Expect::kFirstValueOrEnd:
        if (close(c)) continue;
        [[fallthrough]];
      case Expect::kValue:
        if (c == '{' || c == '[') {
          open.push_back(c);
          ++i;
          expect = c == '{' ? Expect::kFirstKeyOrEnd : Expect::kFirstValueOrEnd;
          continue;
        }
        if (c == '"') {
          scan = ScanString(text, &i);
        } else if (c == '-' || IsDigit(c)) {
          scan = ScanNumber(text, &i);
        } else if (c == 't') {
          scan = ScanLiteral(text, &i, "true");
        } else if (c == 'f') {
          scan = ScanLiteral(text, &i, "false");
        } else if (c == 'n') {
          scan = ScanLiteral(text, &i, "null");
        } else {
          return false;
        }
        // Every value is inside the object: one that the text ends in leaves it open.
        if (scan != Scan::kDone) return scan == Scan::kEnded;
        expect = Expect::kCommaOrEnd;
        continue;
    }
  }
}

}  // namespace keyflow
