#include "gavel/cli/display_text.h"

#include <gtest/gtest.h>

#include <string>

namespace gavel::cli {
namespace {

// A terminal acts on a byte < 0x20 or 0x7f, on the C1 range and on bidi controls; what the
// escaped text may still hold is printable ASCII and valid UTF-8 outside those ranges.
bool SafeForATerminal(const std::string& text) {
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == 0x7f) return false;
    if (c == 0xc2 && i + 1 < text.size()) {
      const auto next = static_cast<unsigned char>(text[i + 1]);
      if (next >= 0x80 && next <= 0x9f) return false;  // U+0080..U+009F
    }
    if (c == 0xe2 && i + 2 < text.size()) {
      const auto middle = static_cast<unsigned char>(text[i + 1]);
      const auto last = static_cast<unsigned char>(text[i + 2]);
      // U+200E/U+200F, U+2028..U+202E (separators and bidi embeddings), U+2066..U+2069 (bidi
      // isolates).
      if (middle == 0x80 && (last == 0x8e || last == 0x8f || (last >= 0xa8 && last <= 0xae))) {
        return false;
      }
      if (middle == 0x81 && last >= 0xa6 && last <= 0xa9) return false;
    }
  }
  return true;
}

// Reverses EscapeForDisplay (only the escapes it emits), for the round-trip property.
std::string Unescape(const std::string& text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\\') {
      out += text[i];
      continue;
    }
    const char kind = text[++i];
    if (kind == 'n') out += '\n';
    else if (kind == 'r') out += '\r';
    else if (kind == 't') out += '\t';
    else if (kind == '\\') out += '\\';
    else if (kind == 'x') {
      out += static_cast<char>(std::stoi(text.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else if (kind == 'u') {
      const auto cp = static_cast<unsigned>(std::stoi(text.substr(i + 1, 4), nullptr, 16));
      if (cp < 0x800) {
        out += static_cast<char>(0xc0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3f));
      } else {
        out += static_cast<char>(0xe0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
        out += static_cast<char>(0x80 | (cp & 0x3f));
      }
      i += 4;
    }
  }
  return out;
}

TEST(DisplayTextTest, ForgedRowsAndTerminalEscapesAreShownAsText) {
  // A job name that would end its row and print a fake one, then clear the screen.
  const std::string forged = "mine\n42  root  running\x1b[2J\r\t\x7f\\";
  EXPECT_EQ(EscapeForDisplay(forged), "mine\\n42  root  running\\x1b[2J\\r\\t\\x7f\\\\");
}

TEST(DisplayTextTest, PrintableTextAndUnicodeAreUnchanged) {
  for (const std::string text : {"ResNet-18 (batch size 64)", "v100", "Zoë 東京 🚀", ""}) {
    EXPECT_EQ(EscapeForDisplay(text), text);
  }
}

TEST(DisplayTextTest, C1ControlsBidiOverridesAndBrokenUtf8AreEscaped) {
  EXPECT_EQ(EscapeForDisplay("\xc2\x9b" "31m"), "\\u009b31m");      // one-byte CSI
  EXPECT_EQ(EscapeForDisplay("a\xe2\x80\xae" "b"), "a\\u202eb");   // right-to-left override
  EXPECT_EQ(EscapeForDisplay("\xe2\x80\xa8"), "\\u2028");          // line separator
  EXPECT_EQ(EscapeForDisplay("\xe2\x81\xa6"), "\\u2066");          // left-to-right isolate
  EXPECT_EQ(EscapeForDisplay("\xe2\x81\xa9"), "\\u2069");          // pop directional isolate
  EXPECT_EQ(EscapeForDisplay("\xff\xc3"), "\\xff\\xc3");           // invalid, truncated
  EXPECT_EQ(EscapeForDisplay("\xc0\x8a"), "\\xc0\\x8a");           // overlong newline
  EXPECT_EQ(EscapeForDisplay("\xed\xa0\x80"), "\\xed\\xa0\\x80");  // a UTF-16 surrogate
}

TEST(DisplayTextTest, EveryByteStringBecomesSafeAndRoundTrips) {
  // Every string of up to two bytes, and a deterministic sample of longer ones: the output is
  // safe for a terminal and the escaping loses nothing.
  auto check = [](const std::string& text) {
    const std::string escaped = EscapeForDisplay(text);
    ASSERT_TRUE(SafeForATerminal(escaped)) << escaped;
    ASSERT_EQ(Unescape(escaped), text) << escaped;
  };
  for (int a = 0; a < 256; ++a) {
    check(std::string(1, static_cast<char>(a)));
    for (int b = 0; b < 256; ++b) {
      check(std::string{static_cast<char>(a), static_cast<char>(b)});
    }
  }
  // Every three-byte string starting 0xe2, the lead byte of U+2000..U+2FFF (the separators,
  // bidi embeddings and isolates among them).
  for (int b = 0; b < 256; ++b) {
    for (int c = 0; c < 256; ++c) {
      check(std::string{'\xe2', static_cast<char>(b), static_cast<char>(c)});
    }
  }
  unsigned state = 12345;
  for (int n = 0; n < 20000; ++n) {
    std::string text;
    for (int k = 0; k < 6; ++k) {
      state = state * 1103515245u + 12345u;
      text += static_cast<char>((state >> 16) & 0xff);
    }
    check(text);
  }
}

TEST(DisplayTextTest, EscapeRowEscapesEachCell) {
  const std::vector<std::string> row = EscapeRow({"a\nb", "ok", "\x1b"});
  EXPECT_EQ(row, (std::vector<std::string>{"a\\nb", "ok", "\\x1b"}));
}

}  // namespace
}  // namespace gavel::cli
