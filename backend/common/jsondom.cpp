// nlohmann_of (jsondom.h): simdjson's DOM element as nlohmann::json, element by element.
#include "jsondom.h"

#include <cstdint>
#include <string>

namespace traindeck {

simdjson::dom::parser& thread_parser() {
    constexpr size_t kMostKept = size_t{64} << 20;
    thread_local simdjson::dom::parser parser;
    if (parser.capacity() > kMostKept)
        parser = simdjson::dom::parser();
    return parser;
}

nlohmann::json nlohmann_of(simdjson::dom::element element) {
    using simdjson::dom::element_type;
    switch (element.type()) {
    case element_type::ARRAY: {
        nlohmann::json array = nlohmann::json::array();
        const simdjson::dom::array items = element.get_array().value_unsafe();
        array.get_ref<nlohmann::json::array_t&>().reserve(items.size());
        for (const simdjson::dom::element item : items)
            array.push_back(nlohmann_of(item));
        return array;
    }
    case element_type::OBJECT: {
        nlohmann::json object = nlohmann::json::object();
        const simdjson::dom::object fields = element.get_object().value_unsafe();
        for (const simdjson::dom::key_value_pair field : fields)
            object[std::string(field.key)] = nlohmann_of(field.value); // a repeated key: the last one stays
        return object;
    }
    case element_type::INT64: {
        const int64_t value = element.get_int64().value_unsafe();
        if (value >= 0)
            return static_cast<uint64_t>(value);
        return value;
    }
    case element_type::UINT64:
        return element.get_uint64().value_unsafe();
    case element_type::DOUBLE:
        return element.get_double().value_unsafe();
    case element_type::STRING:
        return std::string(element.get_string().value_unsafe());
    case element_type::BOOL:
        return element.get_bool().value_unsafe();
    case element_type::NULL_VALUE:
        break;
    }
    return nullptr;
}

} // namespace traindeck
