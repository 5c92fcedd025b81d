#!/usr/bin/env python3
"""Writes the small tokenizer.json fixtures of the [bpe] tests (run from this folder).

Every fixture's vocabulary gives byte b the id b (in GPT-2's byte-level spelling), so expected
ids can be read off by hand: merged tokens start at 256 in merge order, added tokens at 300.
"""
import json

QWEN2_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                 r"|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN35_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}"
                  r"| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")


def byte_level():
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    table, n = {}, 0
    for b in range(256):
        if b in printable:
            table[b] = chr(b)
        else:
            table[b] = chr(0x100 + n)
            n += 1
    return table


BYTES = byte_level()


def spell(text):
    data = text if isinstance(text, bytes) else text.encode("utf-8")
    return "".join(BYTES[b] for b in data)


def vocab_and_merges(merges, array_merges):
    vocab = {BYTES[b]: b for b in range(256)}
    out = []
    for left, right in merges:
        joined = (left if isinstance(left, bytes) else left.encode()) + (right if isinstance(right, bytes) else right.encode())
        vocab.setdefault(spell(joined), 256 + len(out))
        out.append([spell(left), spell(right)] if array_merges else spell(left) + " " + spell(right))
    return vocab, out


def added(id_, content, special, lstrip=False, rstrip=False, normalized=False):
    return {"id": id_, "content": content, "single_word": False, "lstrip": lstrip, "rstrip": rstrip,
            "normalized": normalized, "special": special}


def tokenizer(merges, added_tokens, normalizer, pre_tokenizer, array_merges=False, ignore_merges=False):
    vocab, merge_list = vocab_and_merges(merges, array_merges)
    return {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added_tokens,
        "normalizer": normalizer, "pre_tokenizer": pre_tokenizer,
        "post_processor": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False},
        "decoder": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
                  "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False,
                  "ignore_merges": ignore_merges, "vocab": vocab, "merges": merge_list},
    }


def qwen_pre_tokenizer(pattern):
    return {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated", "invert": False},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False}]}


# Merge ranks: "b c" (256) outranks "a b" (257), so "abc" is a + bc; "ab c" (264) is reachable
# only through "ab", i.e. only if ranks were ignored. "é" (265) and "ét" (266) are reachable only
# from NFC text.
MERGES = [("b", "c"), ("a", "b"), (" ", "a"), ("h", "e"), ("l", "l"), ("he", "ll"), ("hell", "o"),
          (" ", "hello"), ("ab", "c"), (b"\xc3", b"\xa9"), ("é", "t")]
QWEN_ADDED = [added(300, "<|endoftext|>", True), added(301, "<|im_start|>", True), added(302, "<|im_end|>", True),
              added(303, "<think>", False), added(304, "</think>", False)]


def write(name, data):
    with open(name, "w", encoding="utf-8") as f:
        json.dump(data, f, ensure_ascii=False, indent=1)
        f.write("\n")


write("tiny_qwen3.json", tokenizer(MERGES, QWEN_ADDED, {"type": "NFC"}, qwen_pre_tokenizer(QWEN2_PATTERN)))
write("tiny_qwen35.json", tokenizer(MERGES, QWEN_ADDED, {"type": "Sequence", "normalizers": [{"type": "NFC"}]},
                                    qwen_pre_tokenizer(QWEN35_PATTERN), array_merges=True))
# GPT-2 style: ByteLevel alone with its own regex and a prefix space, no normalizer, merges as
# arrays, ignore_merges, and added tokens that strip white space or match normalized text.
write("gpt2_style.json", tokenizer(
    MERGES + [("x", "y"), ("xy", "z")],
    [added(300, "<mask>", True, lstrip=True, rstrip=True), added(301, "<|im_start|>", True),
     added(302, "<|im_start|>assistant", True), added(303, "[e\u0301]", False, normalized=True)],
    {"type": "NFC"}, {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
    array_merges=True, ignore_merges=False))
write("ignore_merges.json", tokenizer(
    [("x", "y"), ("y", "z"), ("x", "yz")], [], None,
    {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
    ignore_merges=True))
