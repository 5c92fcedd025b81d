"""Reference for runtime/image (smart_resize and the full Qwen3.5 preprocess), written for the
tests from the semantics of Hugging Face transformers' slow Qwen2VLImageProcessor
(models/qwen2_vl/image_processing_qwen2_vl.py: smart_resize and _preprocess) and of
image_transforms.resize / rescale / normalize, in numpy and Pillow.

Usage:
  qwen_image_processor.py smart_resize CASES OUT
      CASES: one case a line, HEIGHT WIDTH FACTOR MIN_PIXELS MAX_PIXELS; OUT gets, a line each,
      "H_BAR W_BAR" or "error".
  qwen_image_processor.py preprocess IN_RGB WIDTH HEIGHT CONFIG_JSON OUT_VALUES OUT_GRID
      IN_RGB: WIDTH * HEIGHT * 3 bytes; CONFIG_JSON: a preprocessor_config.json. Writes the
      pixel_values as float32 little-endian to OUT_VALUES and "GRID_T GRID_H GRID_W" to OUT_GRID.
"""
import json
import math
import sys

import numpy as np
from PIL import Image


def smart_resize(height, width, factor, min_pixels, max_pixels):
    if max(height, width) / min(height, width) > 200:
        raise ValueError("absolute aspect ratio must be smaller than 200")
    h_bar = round(height / factor) * factor
    w_bar = round(width / factor) * factor
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt((height * width) / max_pixels)
        h_bar = max(factor, math.floor(height / beta / factor) * factor)
        w_bar = max(factor, math.floor(width / beta / factor) * factor)
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


def read_config(path):
    with open(path) as f:
        cfg = json.load(f)
    size = cfg.get("size", {"shortest_edge": 65536, "longest_edge": 16777216})
    # The constructor's backward compatibility: top-level min/max_pixels override size.
    min_pixels = cfg.get("min_pixels", size["shortest_edge"])
    max_pixels = cfg.get("max_pixels", size["longest_edge"])
    return dict(
        patch_size=cfg.get("patch_size", 16),
        merge_size=cfg.get("merge_size", 2),
        temporal_patch_size=cfg.get("temporal_patch_size", 2),
        min_pixels=min_pixels,
        max_pixels=max_pixels,
        image_mean=cfg.get("image_mean", [0.5, 0.5, 0.5]),
        image_std=cfg.get("image_std", [0.5, 0.5, 0.5]),
    )


def preprocess(rgb, cfg):
    """rgb: (H, W, 3) uint8. Returns (pixel_values float32 [rows, C*T*P*P], (grid_t, grid_h, grid_w))."""
    patch, merge, temporal = cfg["patch_size"], cfg["merge_size"], cfg["temporal_patch_size"]
    height, width = rgb.shape[:2]
    resized_height, resized_width = smart_resize(
        height, width, patch * merge, cfg["min_pixels"], cfg["max_pixels"]
    )
    # image_transforms.resize: a uint8 array goes to PIL unscaled, PIL resizes, back to numpy.
    image = np.array(
        Image.fromarray(rgb, mode="RGB").resize((resized_width, resized_height), resample=Image.BICUBIC)
    )
    # image_transforms.rescale: float64 product, cast to float32.
    image = (image.astype(np.float64) * (1 / 255)).astype(np.float32)
    # image_transforms.normalize on a channels-last float32 image: float32 mean and std.
    mean = np.array(cfg["image_mean"], dtype=image.dtype)
    std = np.array(cfg["image_std"], dtype=image.dtype)
    image = (image - mean) / std
    # to_channel_dimension_format(FIRST), then _preprocess's patch layout.
    patches = image.transpose(2, 0, 1)[np.newaxis]
    if patches.shape[0] % temporal != 0:
        repeats = np.repeat(patches[-1][np.newaxis], temporal - patches.shape[0] % temporal, axis=0)
        patches = np.concatenate([patches, repeats], axis=0)
    channel = patches.shape[1]
    grid_t = patches.shape[0] // temporal
    grid_h, grid_w = resized_height // patch, resized_width // patch
    patches = patches.reshape(
        grid_t, temporal, channel, grid_h // merge, merge, patch, grid_w // merge, merge, patch
    )
    patches = patches.transpose(0, 3, 6, 4, 7, 2, 1, 5, 8)
    flat = patches.reshape(grid_t * grid_h * grid_w, channel * temporal * patch * patch)
    return np.ascontiguousarray(flat, dtype=np.float32), (grid_t, grid_h, grid_w)


def main(argv):
    if argv[1] == "smart_resize":
        out = []
        with open(argv[2]) as f:
            for line in f:
                fields = line.split()
                if not fields:
                    continue
                h, w, factor, lo, hi = (int(v) for v in fields)
                try:
                    out.append("%d %d" % smart_resize(h, w, factor, lo, hi))
                except (ValueError, ZeroDivisionError):
                    out.append("error")
        with open(argv[3], "w") as f:
            f.write("\n".join(out) + "\n")
    elif argv[1] == "preprocess":
        width, height = int(argv[3]), int(argv[4])
        with open(argv[2], "rb") as f:
            rgb = np.frombuffer(f.read(), dtype=np.uint8).reshape(height, width, 3)
        values, grid = preprocess(rgb, read_config(argv[5]))
        with open(argv[6], "wb") as f:
            f.write(values.astype("<f4").tobytes())
        with open(argv[7], "w") as f:
            f.write("%d %d %d\n" % grid)
    else:
        raise SystemExit("unknown mode " + argv[1])


if __name__ == "__main__":
    main(sys.argv)
