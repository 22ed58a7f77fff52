#include "textlines.h"

#include <charconv>
#include <cmath>

namespace traindeck::importers {

bool parse_number(std::string_view text, double& out) {
    while (!text.empty() && (text.front() == ' ' || text.front() == '\t'))
        text.remove_prefix(1);
    while (!text.empty() && (text.back() == ' ' || text.back() == '\t'))
        text.remove_suffix(1);
    if (!text.empty() && text.front() == '+')
        text.remove_prefix(1);
    if (text.empty())
        return false;
    // Python writes "nan", "inf", "-inf"; pandas and others "NaN", "Infinity": from_chars takes all of these.
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), out);
    return error == std::errc() && end == text.data() + text.size();
}

bool parse_integer(std::string_view text, int64_t& out) {
    while (!text.empty() && (text.front() == ' ' || text.front() == '\t'))
        text.remove_prefix(1);
    while (!text.empty() && (text.back() == ' ' || text.back() == '\t'))
        text.remove_suffix(1);
    if (text.empty())
        return false;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), out);
    if (error == std::errc() && end == text.data() + text.size())
        return true;
    // "12.0" (a step a float column wrote): whole numbers only.
    double d = 0;
    if (!parse_number(text, d) || !std::isfinite(d) || std::abs(d) > 9.0e15 || d != std::trunc(d))
        return false;
    out = static_cast<int64_t>(d);
    return true;
}

} // namespace traindeck::importers
