#include "runtime/text/template/jinja_json.hpp"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <system_error>

namespace anchorage {

namespace {

using json = nlohmann::ordered_json;

// json.dumps' string escaping with ensure_ascii=False: the five short escapes, other control
// characters as \u00XX, everything else (DEL and non-ASCII included) as it is.
void append_string(std::string& out, const std::string& s) {
  static constexpr char hex[] = "0123456789abcdef";
  out += '"';
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (c < 0x20) {
          out += "\\u00";
          out += hex[c >> 4];
          out += hex[c & 15];
        } else {
          out += ch;
        }
    }
  }
  out += '"';
}

// Python's repr(float): the shortest digits that round-trip, in positional notation when the
// decimal exponent is in [-4, 16) (with ".0" when there is no fractional part), otherwise as
// d[.ddd]e[+-]XX.
std::string python_float_repr(double x) {
  if (std::isnan(x)) return "NaN";
  if (std::isinf(x)) return x > 0 ? "Infinity" : "-Infinity";
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, x, std::chars_format::scientific);
  const std::string sci(buf, r.ptr);  // [-]d[.ddd]e[+-]XX
  const std::size_t e = sci.find('e');
  const bool negative = sci[0] == '-';
  std::string digits;
  for (std::size_t i = negative ? 1 : 0; i < e; ++i) {
    if (sci[i] != '.') digits += sci[i];
  }
  const int exponent = std::atoi(sci.c_str() + e + 1);
  std::string out = negative ? "-" : "";
  if (exponent < -4 || exponent >= 16) {
    out += digits[0];
    if (digits.size() > 1) out += "." + digits.substr(1);
    out += exponent < 0 ? "e-" : "e+";
    const int magnitude = std::abs(exponent);
    if (magnitude < 10) out += '0';
    out += std::to_string(magnitude);
    return out;
  }
  if (exponent < 0) {
    out += "0." + std::string(static_cast<std::size_t>(-exponent - 1), '0') + digits;
    return out;
  }
  const auto point = static_cast<std::size_t>(exponent) + 1;
  if (digits.size() <= point) {
    out += digits + std::string(point - digits.size(), '0') + ".0";
  } else {
    out += digits.substr(0, point) + "." + digits.substr(point);
  }
  return out;
}

void append_value(std::string& out, const json& v) {
  switch (v.type()) {
    case json::value_t::null:
      out += "null";
      break;
    case json::value_t::boolean:
      out += v.get<bool>() ? "true" : "false";
      break;
    case json::value_t::number_integer:
      out += std::to_string(v.get<std::int64_t>());
      break;
    case json::value_t::number_unsigned:
      out += std::to_string(v.get<std::uint64_t>());
      break;
    case json::value_t::number_float:
      out += python_float_repr(v.get<double>());
      break;
    case json::value_t::string:
      append_string(out, v.get_ref<const std::string&>());
      break;
    case json::value_t::array: {
      out += '[';
      bool first = true;
      for (const json& item : v) {
        if (!first) out += ", ";
        first = false;
        append_value(out, item);
      }
      out += ']';
      break;
    }
    case json::value_t::object: {
      out += '{';
      bool first = true;
      for (const auto& [key, item] : v.items()) {
        if (!first) out += ", ";
        first = false;
        append_string(out, key);
        out += ": ";
        append_value(out, item);
      }
      out += '}';
      break;
    }
    default:
      throw template_error("a value tojson cannot write (binary or discarded)");
  }
}

// The code point starting at s[i] (UTF-8) and its length; an invalid sequence reads as one byte
// that is not whitespace.
std::pair<char32_t, std::size_t> decode_at(std::string_view s, std::size_t i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  if (b0 < 0x80) return {b0, 1};
  std::size_t n = b0 >= 0xF0 ? 4 : b0 >= 0xE0 ? 3 : b0 >= 0xC0 ? 2 : 0;
  if (n == 0 || i + n > s.size()) return {0xFFFD, 1};
  char32_t cp = b0 & (0x7F >> n);
  for (std::size_t k = 1; k < n; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
  return {cp, n};
}

bool python_isspace(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
         c == 0x3000;
}

}  // namespace

std::string python_json_dumps(const json& value) {
  std::string out;
  append_value(out, value);
  return out;
}

std::string python_str(const json& value) {
  switch (value.type()) {
    case json::value_t::null:
      return "None";
    case json::value_t::boolean:
      return value.get<bool>() ? "True" : "False";
    case json::value_t::string:
      return value.get<std::string>();
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
    case json::value_t::number_float:
      return python_json_dumps(value);
    default:
      throw template_error("the template would print a " + std::string(value.type_name()) +
                           " as Python repr");
  }
}

std::string_view python_strip(std::string_view s) {
  std::size_t begin = 0;
  while (begin < s.size()) {
    const auto [cp, n] = decode_at(s, begin);
    if (!python_isspace(cp)) break;
    begin += n;
  }
  s.remove_prefix(begin);
  // Walk back to the start of the last code point: continuation bytes are 10xxxxxx.
  while (!s.empty()) {
    std::size_t start = s.size() - 1;
    while (start > 0 && s.size() - start < 4 && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80)
      --start;
    const auto [cp, n] = decode_at(s, start);
    if (start + n != s.size() || !python_isspace(cp)) break;
    s.remove_suffix(n);
  }
  return s;
}

std::string_view python_lstrip(std::string_view s, std::string_view chars) {
  const std::size_t i = s.find_first_not_of(chars);
  return i == std::string_view::npos ? std::string_view{} : s.substr(i);
}

std::string_view python_rstrip(std::string_view s, std::string_view chars) {
  const std::size_t i = s.find_last_not_of(chars);
  return i == std::string_view::npos ? std::string_view{} : s.substr(0, i + 1);
}

}  // namespace anchorage
