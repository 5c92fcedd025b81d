#include "runtime/image/data_uri.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>

namespace anchorage {

namespace {

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  }
  return true;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// The 6-bit value of a standard-alphabet character, or -1.
int sextet(unsigned char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

std::string describe_char(unsigned char c) {
  char buf[48];
  if (c == ' ') {
    std::snprintf(buf, sizeof buf, "a space");
  } else if (c == '\n' || c == '\r' || c == '\t') {
    std::snprintf(buf, sizeof buf, "whitespace (0x%02x)", c);
  } else if (c >= 0x21 && c < 0x7f) {
    std::snprintf(buf, sizeof buf, "'%c'", c);
  } else {
    std::snprintf(buf, sizeof buf, "the byte 0x%02x", c);
  }
  return buf;
}

}  // namespace

bool is_data_uri(std::string_view url) { return url.size() >= 5 && iequals(url.substr(0, 5), "data:"); }

std::size_t base64_length(std::size_t n) { return (n / 3 + (n % 3 != 0)) * 4; }

expected<std::vector<std::uint8_t>> decode_base64(std::string_view text) {
  // The padding: at most two '=' at the end (a third is reported as a bad character below).
  std::size_t body = text.size();
  while (body > 0 && text[body - 1] == '=' && text.size() - body < 2) --body;
  const std::size_t padding = text.size() - body;
  for (std::size_t i = 0; i < body; ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (sextet(c) >= 0) continue;
    std::string what = "invalid base64: " + describe_char(c) + " at offset " + std::to_string(i) +
                       " (only A-Z, a-z, 0-9, '+', '/' and final '=' padding are accepted";
    what += c == '-' || c == '_' ? "; this looks like URL-safe base64)" : ")";
    return status::failure(what);
  }
  if (body % 4 == 1) {
    return status::failure("invalid base64: " + std::to_string(body) +
                           " characters leave one over, which encodes no byte");
  }
  if (padding > 0 && padding != (4 - body % 4) % 4) {
    return status::failure("invalid base64: '=' padding that does not complete a group of four characters");
  }
  std::vector<std::uint8_t> out;
  out.reserve(body / 4 * 3 + 2);
  std::uint32_t acc = 0;
  int bits = 0;
  for (std::size_t i = 0; i < body; ++i) {
    acc = (acc << 6) | static_cast<std::uint32_t>(sextet(static_cast<unsigned char>(text[i])));
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<std::uint8_t>(acc >> bits));
      acc &= (1u << bits) - 1;
    }
  }
  return out;
}

expected<data_uri> parse_data_uri(std::string_view uri, std::size_t max_bytes) {
  if (!is_data_uri(uri)) return status::failure("not a data URI (it does not start with \"data:\")");
  const std::size_t comma = uri.find(',');
  if (comma == std::string_view::npos) {
    return status::failure("a data URI needs a ',' between its header and its data");
  }
  const std::string_view header = uri.substr(5, comma - 5);
  const std::string_view data = uri.substr(comma + 1);

  // The header: an optional media type, then ';'-separated parameters, the last one `base64`.
  const std::size_t last_semicolon = header.rfind(';');
  const std::string_view last =
      last_semicolon == std::string_view::npos ? std::string_view() : header.substr(last_semicolon + 1);
  if (!iequals(last, "base64")) {
    return status::failure(
        "only base64 data URIs are accepted (data:<media type>;base64,<data>); this one has no "
        "\";base64\" before its ','");
  }
  const std::string_view type = header.substr(0, std::min(header.find(';'), header.size()));

  if (data.size() > base64_length(max_bytes)) {
    return status::failure("the data URI's data is " + std::to_string(data.size()) +
                           " base64 characters, more than the " + std::to_string(base64_length(max_bytes)) +
                           " that encode the limit of " + std::to_string(max_bytes) + " bytes");
  }
  if (data.empty()) return status::failure("the data URI has no data after its ','");
  auto bytes = decode_base64(data);
  if (!bytes) return status::failure("the data URI's data is " + bytes.error().error());
  if (bytes->size() > max_bytes) {
    return status::failure("the data URI's data decodes to " + std::to_string(bytes->size()) +
                           " bytes, more than the limit of " + std::to_string(max_bytes));
  }
  return data_uri{lower(type), std::move(*bytes)};
}

}  // namespace anchorage
