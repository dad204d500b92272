#include "gavel/cli/display_text.h"

#include <cstdint>
#include <cstdio>

namespace gavel::cli {
namespace {

void AppendHexByte(std::string& out, unsigned char byte) {
  char text[8];
  std::snprintf(text, sizeof text, "\\x%02x", byte);
  out += text;
}

void AppendCodePoint(std::string& out, std::uint32_t code_point) {
  char text[12];
  std::snprintf(text, sizeof text, "\\u%04x", code_point);
  out += text;
}

bool IsInvisibleControl(std::uint32_t cp) {
  return (cp >= 0x80 && cp <= 0x9f) || cp == 0x2028 || cp == 0x2029 || cp == 0x200e ||
         cp == 0x200f || (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
}

// Length of the valid UTF-8 sequence at text[i] and its code point; 0 if invalid (overlong
// forms, surrogates and values above U+10FFFF included).
std::size_t DecodeUtf8(std::string_view text, std::size_t i, std::uint32_t* code_point) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char lead = byte(i);
  std::size_t length = 0;
  std::uint32_t cp = 0;
  std::uint32_t min = 0;
  if (lead >= 0xc2 && lead <= 0xdf) {
    length = 2, cp = lead & 0x1fu, min = 0x80;
  } else if (lead >= 0xe0 && lead <= 0xef) {
    length = 3, cp = lead & 0x0fu, min = 0x800;
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    length = 4, cp = lead & 0x07u, min = 0x10000;
  } else {
    return 0;
  }
  if (i + length > text.size()) return 0;
  for (std::size_t k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xc0u) != 0x80u) return 0;
    cp = (cp << 6) | (byte(i + k) & 0x3fu);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  *code_point = cp;
  return length;
}

}  // namespace

std::string EscapeForDisplay(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  std::size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      switch (c) {
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        case '\\': out += "\\\\"; break;
        default:
          if (c < 0x20 || c == 0x7f) {
            AppendHexByte(out, c);
          } else {
            out += static_cast<char>(c);
          }
      }
      ++i;
      continue;
    }
    std::uint32_t cp = 0;
    const std::size_t length = DecodeUtf8(text, i, &cp);
    if (length == 0) {
      AppendHexByte(out, c);
      ++i;
    } else if (IsInvisibleControl(cp)) {
      AppendCodePoint(out, cp);
      i += length;
    } else {
      out.append(text.substr(i, length));
      i += length;
    }
  }
  return out;
}

std::vector<std::string> EscapeRow(const std::vector<std::string>& cells) {
  std::vector<std::string> escaped;
  escaped.reserve(cells.size());
  for (const std::string& cell : cells) escaped.push_back(EscapeForDisplay(cell));
  return escaped;
}

}  // namespace gavel::cli
