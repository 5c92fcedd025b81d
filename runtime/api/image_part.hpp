#pragma once
// An image in a request, as each route sends it, decoded into pixels (docs/IMAGES.md, "Input"):
// the chat route's image_url part ({"url": ...} or the URL itself), the Responses route's
// input_image (image_url), the Messages route's image block (source). Only inline images are
// taken: a base64 data URI or a base64 source of PNG, JPEG, GIF (its first frame) or WebP,
// within runtime/image/image_limits.hpp's limits. The server fetches nothing: a remote URL, a
// data URI that is not base64, bytes that are no image of those formats, a truncated one or one
// over a limit are a 400 whose param names the part and whose message says what is wrong.
#include <string>

#include "protocol/chat_message.hpp"
#include "runtime/api/request_fields.hpp"

namespace anchorage::request_fields {

// `url`: the URL's JSON value; `param` names it ("messages[0].content[1].image_url.url"). On
// success `out` is an image part holding the pixels.
failure read_image_url(const json& url, const std::string& param, content_part& out);

// `source`: an Anthropic image block's source; `param` names it ("messages[0].content[2].source").
failure read_image_source(const json& source, const std::string& param, content_part& out);

}  // namespace anchorage::request_fields
