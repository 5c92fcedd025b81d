#pragma once
// Tiny images as requests send them, written by Pillow 9.4 (Image.save(..., "PNG", optimize=True)).
namespace anchorage::test {

// 2 x 2 RGB: red, green / blue, white.
inline constexpr const char* png_2x2_base64 =
    "iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAIAAAD91JpzAAAAFklEQVR42mP4z8DA8J+BkYHh////"
    "DAAe9gT9CzF8CQAAAABJRU5ErkJggg==";
// The same with its white pixel (1, 1) one level less red: (254, 255, 255).
inline constexpr const char* png_2x2_one_pixel_base64 =
    "iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAIAAAD91JpzAAAAFklEQVR42mP4z8DA8J+BkYHh/7//"
    "DAAe8wT8U2BMmQAAAABJRU5ErkJggg==";

}  // namespace anchorage::test
