#!/usr/bin/env python3
"""Write the Hugging Face `tokenizer.json` and `tokenizer_config.json` of a GGUF model's own
tokenizer into a directory: the vocabulary, merges, special tokens, BOS setting and chat
template the engine itself tokenizes with, read from the GGUF's metadata (no dependencies).

Used by scripts/install-llamacpp for the test engine's SmolLM2-135M (a byte-level BPE,
`tokenizer.ggml.model = gpt2`, pre-tokenizer `smollm`: single digits, then GPT-2's split).

    gguf-tokenizer.py MODEL.gguf OUT_DIR
"""
import json
import os
import struct
import sys

SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?",
           10: "<Q", 11: "<q", 12: "<d"}


def metadata(path):
    """The key-value metadata of a GGUF file (v2/v3)."""
    with open(path, "rb") as f:
        if f.read(4) != b"GGUF":
            sys.exit(f"{path}: not a GGUF file")
        _version, = struct.unpack("<I", f.read(4))
        _tensors, count = struct.unpack("<QQ", f.read(16))

        def string():
            n, = struct.unpack("<Q", f.read(8))
            return f.read(n).decode("utf-8", "surrogateescape")

        def value(kind):
            if kind == 8:
                return string()
            if kind == 9:
                inner, n = struct.unpack("<IQ", f.read(12))
                return [value(inner) for _ in range(n)]
            fmt = SCALARS[kind]
            return struct.unpack(fmt, f.read(struct.calcsize(fmt)))[0]

        kv = {}
        for _ in range(count):
            key = string()
            kind, = struct.unpack("<I", f.read(4))
            kv[key] = value(kind)
        return kv


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    kv = metadata(sys.argv[1])
    if kv.get("tokenizer.ggml.model") != "gpt2" or kv.get("tokenizer.ggml.pre") != "smollm":
        sys.exit("only byte-level BPE tokenizers with the `smollm` pre-tokenizer are converted")
    tokens = kv["tokenizer.ggml.tokens"]
    types = kv["tokenizer.ggml.token_type"]
    # GGUF token types: 3 control, 4 user-defined: both are matched whole, before the BPE.
    added = [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True}
             for i, (t, ty) in enumerate(zip(tokens, types)) if ty in (3, 4)]
    bos = tokens[kv["tokenizer.ggml.bos_token_id"]]
    eos = tokens[kv["tokenizer.ggml.eos_token_id"]]
    add_bos = bool(kv.get("tokenizer.ggml.add_bos_token", False))
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                  "use_regex": True}
    post = byte_level
    if add_bos:
        bos_id = kv["tokenizer.ggml.bos_token_id"]
        post = {"type": "TemplateProcessing",
                "single": [{"SpecialToken": {"id": bos, "type_id": 0}},
                           {"Sequence": {"id": "A", "type_id": 0}}],
                "pair": [{"SpecialToken": {"id": bos, "type_id": 0}},
                         {"Sequence": {"id": "A", "type_id": 0}},
                         {"Sequence": {"id": "B", "type_id": 1}}],
                "special_tokens": {bos: {"id": bos, "ids": [bos_id], "tokens": [bos]}}}
    tokenizer = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": None,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Digits", "individual_digits": True}, byte_level]},
        "post_processor": post,
        "decoder": byte_level,
        "model": {"type": "BPE", "dropout": None, "unk_token": None,
                  "continuing_subword_prefix": None, "end_of_word_suffix": None,
                  "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": {t: i for i, t in enumerate(tokens)},
                  "merges": kv["tokenizer.ggml.merges"]},
    }
    config = {
        "add_bos_token": add_bos,
        "bos_token": bos,
        "eos_token": eos,
        "model_max_length": kv.get("llama.context_length", 8192),
        "tokenizer_class": "GPT2Tokenizer",
        "chat_template": kv.get("tokenizer.chat_template"),
    }
    out = sys.argv[2]
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tokenizer, f, ensure_ascii=False)
    with open(os.path.join(out, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(config, f, ensure_ascii=False, indent=2)
    print(os.path.join(out, "tokenizer.json"))


if __name__ == "__main__":
    main()
