#!/usr/bin/env python3
"""Decode image files with Pillow the way the decoder in runtime/image/image_decode.hpp promises
to, for tests/image/test_image_decode.cpp's byte-for-byte comparison.

    pil_decode.py IN OUT [IN OUT]...

Each IN is opened with Image.open (a GIF or an animated WebP at its first frame) and made RGB by
the rule of the compositing convert_to_rgb in transformers' image processors (idefics2, mllama,
chameleon): an image Pillow opens as RGB is kept as it is; any other is converted to RGBA,
alpha-composited over an opaque white RGBA image with Image.alpha_composite, and converted to RGB.
(transformers.image_transforms.convert_to_rgb itself only calls convert("RGB"), which drops alpha;
qwen-vl-utils and vLLM paste an RGBA image over white with its alpha as the mask, which rounds as
alpha_composite does over an opaque background.) EXIF orientation is not applied.

Each OUT receives the width and the height as 4-byte little-endian integers, then the RGB bytes
row by row; or, when Pillow fails, "ERR:" followed by its message.
"""
import struct
import sys

from PIL import Image


def to_rgb(image):
    if image.mode == "RGB":
        return image
    rgba = image.convert("RGBA")
    white = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
    return Image.alpha_composite(white, rgba).convert("RGB")


def main(args):
    if len(args) == 0 or len(args) % 2 != 0:
        sys.exit(__doc__)
    for path_in, path_out in zip(args[0::2], args[1::2]):
        try:
            with Image.open(path_in) as image:
                image.load()
                rgb = to_rgb(image)
                result = struct.pack("<II", rgb.width, rgb.height) + rgb.tobytes()
        except Exception as e:  # noqa: BLE001 - any failure is the answer for this file
            result = b"ERR:" + f"{type(e).__name__}: {e}".encode()
        with open(path_out, "wb") as f:
            f.write(result)


if __name__ == "__main__":
    main(sys.argv[1:])
