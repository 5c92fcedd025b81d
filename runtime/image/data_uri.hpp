#pragma once
// Data URIs (RFC 2397) as an image arrives in a request: `data:[<media type>][;param=value]...
// ;base64,<data>`. Only base64 data is accepted, decoded strictly. Remote URLs are not fetched:
// the API layer tells them apart with is_data_uri and refuses them with its own message.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/core/status.hpp"

namespace anchorage {

struct data_uri {
  std::string media_type;           // as sent, lower-cased ("image/png"); empty when absent
  std::vector<std::uint8_t> bytes;  // the decoded data
};

// True when `url` starts with the scheme `data:` (scheme letters in any case, as RFC 3986 allows).
// Says nothing of whether the rest parses: parse_data_uri does.
bool is_data_uri(std::string_view url);

// Parses a data URI whose data is base64 and at most `max_bytes` once decoded. Fails, with a
// message a client can act on, when:
//  - `uri` is not a data URI, or has no ',' ending its header;
//  - the header's last parameter is not `base64` (percent-encoded data is refused as such);
//  - the data is longer than the base64 of `max_bytes` bytes (checked on the encoded length,
//    before anything is decoded or allocated);
//  - the data is empty, or not strict base64 (decode_base64).
// The media type is not checked against the bytes: decode_image sniffs the format itself.
expected<data_uri> parse_data_uri(std::string_view uri, std::size_t max_bytes);

// Strict base64 (RFC 4648 section 4, the standard alphabet A-Z a-z 0-9 + /): padding is optional,
// but '=' may only end the text and only as much as completes its last group of four; any other
// character, whitespace and line breaks and the URL-safe '-' and '_' included, fails naming its
// offset. A length that leaves one character over in its last group fails. Bits a short last
// group leaves unused are ignored (as Python's base64 and browsers ignore them).
expected<std::vector<std::uint8_t>> decode_base64(std::string_view text);

// The length of the base64 text (padded) that encodes `n` bytes: 4 * ceil(n / 3).
std::size_t base64_length(std::size_t n);

}  // namespace anchorage
