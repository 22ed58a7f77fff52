#include "csv.h"

namespace traindeck {

std::string trim_field(std::string_view field) {
    const size_t begin = field.find_first_not_of(" \t");
    if (begin == std::string_view::npos)
        return {};
    return std::string(field.substr(begin, field.find_last_not_of(" \t") - begin + 1));
}

std::vector<std::string> split_csv_line(std::string_view line) {
    std::vector<std::string> fields(1);
    bool quoted = false;
    for (size_t i = 0; i < line.size(); ++i) {
        const char c = line[i];
        if (quoted) {
            if (c == '"' && i + 1 < line.size() && line[i + 1] == '"')
                fields.back() += '"', ++i;
            else if (c == '"')
                quoted = false;
            else
                fields.back() += c;
        } else if (c == '"') {
            quoted = true;
        } else if (c == ',') {
            fields.emplace_back();
        } else if (c != '\r') {
            fields.back() += c;
        }
    }
    return fields;
}

} // namespace traindeck
