#pragma once
// One line of plain CSV split into its fields, shared by the engine's load_csv and the dataset inspection: fields
// separated by commas, optionally double-quoted ("" inside quotes is a quote, a comma inside quotes is text), a
// trailing \r dropped. Never fails: an unclosed quote runs to the end of the line.
#include <string>
#include <string_view>
#include <vector>

namespace traindeck {

std::vector<std::string> split_csv_line(std::string_view line);
// A field (a header's name, a cell) without the spaces and tabs around it, as both read it.
std::string trim_field(std::string_view field);

} // namespace traindeck
