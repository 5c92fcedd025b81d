"""Reference for runtime/image/resize_bicubic: Pillow's Image.resize((w, h), Image.BICUBIC) on
8-bit RGB images, as Hugging Face's slow Qwen2-VL image processor calls it.

Usage: pil_resize.py DIR
DIR/cases.txt holds one case a line: NAME IN_W IN_H OUT_W OUT_H. The script reads DIR/NAME.in
(IN_W * IN_H * 3 bytes of RGB, rows top to bottom) and writes DIR/NAME.out (OUT_W * OUT_H * 3).
It prints the Pillow version it ran.
"""
import os
import sys

import PIL
from PIL import Image


def main(directory):
    with open(os.path.join(directory, "cases.txt")) as f:
        for line in f:
            fields = line.split()
            if not fields:
                continue
            name = fields[0]
            in_w, in_h, out_w, out_h = (int(v) for v in fields[1:5])
            with open(os.path.join(directory, name + ".in"), "rb") as raw:
                data = raw.read()
            assert len(data) == in_w * in_h * 3, name
            image = Image.frombytes("RGB", (in_w, in_h), data)
            # reducing_gap stays None, as transformers' image_transforms.resize leaves it.
            resized = image.resize((out_w, out_h), resample=Image.BICUBIC)
            with open(os.path.join(directory, name + ".out"), "wb") as raw:
                raw.write(resized.tobytes())
    print("Pillow", PIL.__version__)


if __name__ == "__main__":
    main(sys.argv[1])
