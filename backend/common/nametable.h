#pragma once
// One table that names the values of an enum, read both ways: the single place where a job state, a stop reason or
// a layer type meets its text (database columns, JSON, specs, error messages). A value missing from its table has
// no name; a text missing from it has no value; both are answered, never guessed.
#include <algorithm>
#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace traindeck {

template <typename Enum, std::size_t N>
struct NameTable {
    std::array<std::pair<Enum, std::string_view>, N> entries;

    constexpr std::optional<std::string_view> name(Enum value) const {
        for (const auto& [known, text] : entries)
            if (known == value)
                return text;
        return std::nullopt;
    }
    constexpr std::optional<Enum> value(std::string_view text) const {
        for (const auto& [known, name] : entries)
            if (name == text)
                return known;
        return std::nullopt;
    }
    // The names, sorted and joined ("conv2d, dropout, …"), for the message that lists what is allowed.
    std::string sorted_names(std::string_view separator = ", ") const {
        std::vector<std::string_view> names;
        for (const auto& entry : entries)
            if (!entry.second.empty())
                names.push_back(entry.second);
        std::sort(names.begin(), names.end());
        std::string text;
        for (const std::string_view name : names)
            text.append(text.empty() ? "" : separator).append(name);
        return text;
    }
};

// Deduces N: `constexpr auto kNames = name_table<Colour>({{{Colour::red, "red"}, ...}});`
template <typename Enum, std::size_t N>
constexpr NameTable<Enum, N> name_table(const std::pair<Enum, std::string_view> (&entries)[N]) {
    NameTable<Enum, N> table{};
    for (std::size_t i = 0; i < N; ++i)
        table.entries[i] = entries[i];
    return table;
}

} // namespace traindeck
