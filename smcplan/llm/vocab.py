"""The exact byte string of every token, for building grammar-constrained token masks.

outlines_core compiles a regular expression to a byte-level automaton and intersects it with a
vocabulary of ``bytes -> token ids``. outlines' own vocabulary builder decodes each token to a
``str``; a byte-level BPE token that holds only part of a UTF-8 character (``"Ã"`` = byte 0xC3)
then decodes to U+FFFD and the character becomes unreachable (a choice like ``"\\xa0"`` fails to
compile with the tiny model). Here the bytes are recovered exactly:

* byte-level BPE (GPT-2, SmolLM2, Llama 3): each token character maps back to one byte through the
  inverse of GPT-2's ``bytes_to_unicode`` table (Radford et al. 2019);
* SentencePiece with byte fallback (Llama 2, Gemma): ``<0xAB>`` is the byte 0xAB and ``▁`` is a
  space;
* anything else: the token's decoded string, UTF-8 encoded (outlines' behaviour).

Special tokens (BOS, chat markers…) are left out, so constrained text never contains them; the
end-of-sequence token is the automaton's stop symbol.

Must not import ``smcplan.memory`` or ``smcplan.envs``.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any

__all__ = ["token_bytes", "byte_decoder", "outlines_vocabulary"]

_BYTE_TOKEN = re.compile(r"^<0x([0-9A-Fa-f]{2})>$")


@functools.cache
def byte_decoder() -> dict[str, int]:
    """Inverse of GPT-2's ``bytes_to_unicode``: printable stand-in character -> byte value."""
    printable = (
        list(range(ord("!"), ord("~") + 1))
        + list(range(ord("¡"), ord("¬") + 1))
        + list(range(ord("®"), ord("ÿ") + 1))
    )
    chars = printable[:]
    extra = 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            chars.append(256 + extra)
            extra += 1
    return {chr(c): b for b, c in zip(printable, chars, strict=True)}


def _decoder_types(tokenizer: Any) -> set[str]:
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        return set()
    found: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if "type" in node:
                found.add(str(node["type"]))
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(json.loads(backend.to_str()).get("decoder"))
    return found


def token_bytes(tokenizer: Any) -> dict[int, bytes]:
    """Map every non-special token id of ``tokenizer`` to the bytes it stands for."""
    special = set(getattr(tokenizer, "all_special_ids", []) or [])
    kinds = _decoder_types(tokenizer)
    table = byte_decoder()
    out: dict[int, bytes] = {}
    for token, idx in tokenizer.get_vocab().items():
        if idx in special:
            continue
        if "ByteLevel" in kinds and all(c in table for c in token):
            out[idx] = bytes(table[c] for c in token)
        elif (m := _BYTE_TOKEN.match(token)) and "ByteFallback" in kinds:
            out[idx] = bytes([int(m.group(1), 16)])
        elif "ByteLevel" not in kinds and ("Metaspace" in kinds or "Replace" in kinds):
            out[idx] = token.replace("▁", " ").encode()
        else:
            out[idx] = tokenizer.convert_tokens_to_string([token]).encode()
    return out


def outlines_vocabulary(tokenizer: Any, eos_token_id: int):
    """An ``outlines_core.Vocabulary`` with exact token bytes (see the module docstring)."""
    from outlines_core import Vocabulary

    grouped: dict[bytes, list[int]] = {}
    for idx, raw in token_bytes(tokenizer).items():
        if idx != eos_token_id and raw:
            grouped.setdefault(raw, []).append(idx)
    return Vocabulary(eos_token_id, grouped)
