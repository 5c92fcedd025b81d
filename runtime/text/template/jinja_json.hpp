#pragma once
// What Python does to values inside a Hugging Face chat template, for the native renderers that
// must match jinja2 byte for byte:
//   - python_json_dumps: transformers' `tojson` filter, json.dumps(x, ensure_ascii=False) with
//     Python's default separators ", " and ": ", keys in the order given, no HTML escaping.
//   - python_str: what `{{ value }}` prints for a scalar (None, True, 1.5, ...).
//   - python_strip: str.strip() with no argument (jinja's `trim`), which strips Unicode
//     whitespace, not only ASCII.
// Values are nlohmann::ordered_json so that object keys keep the order the client sent them in,
// as Python dicts do.
#include <stdexcept>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace anchorage {

// A conversation the template refuses, with the template's own message when it raises one
// ("System message must be at the beginning."), or a description of the type error jinja would
// hit ("tool_calls[0].arguments is not a mapping").
struct template_error : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

// json.dumps(value, ensure_ascii=False). Floats are written as Python's repr writes them
// (1.0, 1e-05, 1e+16). String bytes are copied as they are (nlohmann's parser has already
// checked them as UTF-8). Throws template_error only for binary values.
std::string python_json_dumps(const nlohmann::ordered_json& value);

// str(value) for null, booleans, numbers and strings; throws template_error for arrays and
// objects (their Python repr is not something a template here prints).
std::string python_str(const nlohmann::ordered_json& value);

// Python's str.strip(): removes leading and trailing characters for which str.isspace() is true
// (ASCII whitespace, \x1c-\x1f, U+0085, U+00A0, U+1680, U+2000-U+200A, U+2028, U+2029, U+202F,
// U+205F, U+3000). `s` is UTF-8.
std::string_view python_strip(std::string_view s);

// str.lstrip(chars) / str.rstrip(chars) for a set of ASCII characters.
std::string_view python_lstrip(std::string_view s, std::string_view chars);
std::string_view python_rstrip(std::string_view s, std::string_view chars);

}  // namespace anchorage
