// Text from users (job names, users, messages, GPU types, addresses, policy names) made safe
// for a terminal: every human-readable table the CLI prints passes each cell through
// EscapeForDisplay, so one user cannot forge rows in another's listing with a newline, move
// the cursor or recolour the screen with ESC sequences, or reorder text with bidi controls.
//
// Escaped (as C-style text, so the output stays on one line and reads unambiguously):
//  * C0 controls and DEL: \n \r \t as such, others as \xNN (ESC is \x1b);
//  * the backslash itself, as \\ (so an escape cannot be faked by typing one);
//  * bytes that are not valid UTF-8, as \xNN;
//  * C1 controls (U+0080-U+009F, e.g. the one-byte CSI U+009B), the line and paragraph
//    separators U+2028/U+2029 and the bidi controls U+200E/U+200F, U+202A-U+202E,
//    U+2066-U+2069, as \uNNNN.
// Other valid UTF-8 passes unchanged. JSON output (-o json) is escaped by the JSON library
// instead. Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace gavel::cli {

std::string EscapeForDisplay(std::string_view text);

// Every cell of a table, escaped.
std::vector<std::string> EscapeRow(const std::vector<std::string>& cells);

}  // namespace gavel::cli
