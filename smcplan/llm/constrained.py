"""Output types for constrained generation: what the grammar is, how to parse it, how long it can
be.

An output type is turned into an :class:`OutputSpec`: the object outlines compiles into a
token-mask logits processor (outlines_core backend: a DFA over the tokenizer's vocabulary, see
Willard & Louf 2023, "Efficient Guided Generation for LLMs"), a parser from the generated text to
a Python value, and, where the language is finite, an upper bound on the number of tokens any
sentence of it needs. The bound is in bytes of UTF-8: every token of a byte-level BPE or
byte-fallback SentencePiece vocabulary decodes to at least one byte, so a sentence of ``b`` bytes
needs at most ``b`` tokens, plus one for end-of-sequence. Generating with that many new tokens can
therefore never truncate a schema-valid answer.

Supported output types: ``None`` / ``str`` (free text), a list of strings (one of them), an
``outlines.types.Choice``/``Regex``/``JsonSchema``, a JSON-schema ``dict``, a pydantic model class
(parsed into an instance), ``typing.Literal[...]``.

Must not import ``smcplan.memory`` or ``smcplan.envs``.
"""

from __future__ import annotations

import json
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from smcplan.errors import ArgumentTypeError, InvalidArgumentError, SmcplanError
from smcplan.llm.samples import Sample

__all__ = [
    "OutputSpec",
    "output_spec",
    "spec_regex",
    "json_max_bytes",
    "GenerationError",
    "finished_sample",
]

_STRING_BYTES_PER_CHAR = 4  # a JSON string char is <= 4 UTF-8 bytes, and an escape (\n, \") is 2
_WS = 1  # outlines_core's default whitespace pattern between JSON tokens is "[ ]?"


class GenerationError(SmcplanError, ValueError):
    """A constrained generation did not finish inside ``max_new_tokens`` (its text is not valid)."""


@dataclass(frozen=True)
class OutputSpec:
    """A normalised output type.

    ``term`` is handed to ``outlines.Generator`` (``None`` = unconstrained), ``parse`` maps the
    generated text to the returned value, ``max_bytes`` bounds the UTF-8 length of any valid text
    (``None`` = unbounded), ``key`` identifies the compiled processor for caching.
    """

    term: Any
    parse: Callable[[str], Any]
    max_bytes: int | None
    key: str


def _identity(text: str) -> str:
    return text


def _resolve(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref")
    if ref is None:
        return schema
    node: Any = root
    for part in ref.lstrip("#/").split("/"):
        node = node[part]
    return _resolve(node, root)


def json_max_bytes(schema: dict[str, Any], root: dict[str, Any] | None = None) -> int | None:
    """Upper bound on the UTF-8 length of any JSON text matching ``schema`` as outlines_core emits
    it.

    Supports the subset the role schemas use: objects (all properties emitted), strings with
    ``maxLength``, booleans, ``null``, ``enum``/``const``, arrays with ``maxItems``,
    ``anyOf``/``oneOf``
    and ``$ref``. Returns ``None`` for anything unbounded (numbers, strings without ``maxLength``).
    """
    root = schema if root is None else root
    schema = _resolve(schema, root)
    if "enum" in schema:
        return max(len(json.dumps(v, ensure_ascii=False).encode()) for v in schema["enum"])
    if "const" in schema:
        return len(json.dumps(schema["const"], ensure_ascii=False).encode())
    for key in ("anyOf", "oneOf"):
        if key in schema:
            bounds = [json_max_bytes(s, root) for s in schema[key]]
            return (
                None if any(b is None for b in bounds) else max(b for b in bounds if b is not None)
            )
    kind = schema.get("type")
    if kind == "string":
        if "maxLength" not in schema:
            return None
        return 2 + _STRING_BYTES_PER_CHAR * int(schema["maxLength"])
    if kind == "boolean":
        return 5
    if kind == "null":
        return 4
    if kind == "object":
        total = 2 + 2 * _WS
        for name, sub in schema.get("properties", {}).items():
            inner = json_max_bytes(sub, root)
            if inner is None:
                return None
            # "name" ws : ws value ws , ws
            total += len(json.dumps(name, ensure_ascii=False).encode()) + inner + 4 * _WS + 2
        return total
    if kind == "array":
        if "maxItems" not in schema:
            return None
        items = schema.get("items", {})
        inner = json_max_bytes(items, root) if items else None
        if inner is None:
            return None
        return 2 + 2 * _WS + int(schema["maxItems"]) * (inner + 2 * _WS + 1)
    return None


def _parse_json(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise GenerationError(
            f"generated text is not complete JSON ({exc}): {text[:200]!r}"
        ) from exc


def output_spec(output_type: Any) -> OutputSpec:
    """Normalise ``output_type`` (see the module docstring for the accepted forms)."""
    from outlines.types import Choice, JsonSchema, Regex

    if output_type is None or output_type is str:
        return OutputSpec(None, _identity, None, "text")
    if isinstance(output_type, (list, tuple)):
        choices = [str(c) for c in output_type]
        if not choices:
            raise InvalidArgumentError(
                "a choice output type needs at least one option; got an empty list"
            )
        return output_spec(Choice(choices))
    if isinstance(output_type, Choice):
        items = [str(c) for c in output_type.items]
        if not items:
            raise InvalidArgumentError(
                "output_type Choice([]) has no options; give at least one "
                "(e.g. the admissible actions)"
            )
        bound = max(len(c.encode()) for c in items)
        return OutputSpec(output_type, _identity, bound, "choice:" + json.dumps(items))
    if typing.get_origin(output_type) is typing.Literal:
        return output_spec(Choice([str(a) for a in typing.get_args(output_type)]))
    if isinstance(output_type, Regex):
        return OutputSpec(output_type, _identity, None, "regex:" + output_type.pattern)
    if isinstance(output_type, dict):
        return output_spec(JsonSchema(output_type))
    if isinstance(output_type, JsonSchema):
        schema = (
            json.loads(output_type.schema)
            if isinstance(output_type.schema, str)
            else output_type.schema
        )
        return OutputSpec(
            output_type,
            _parse_json,
            json_max_bytes(schema),
            "json:" + json.dumps(schema, sort_keys=True),
        )
    if isinstance(output_type, type) and issubclass(output_type, BaseModel):
        model = output_type
        schema = model.model_json_schema()

        def parse_model(text: str) -> BaseModel:
            return model.model_validate(_parse_json(text))

        return OutputSpec(
            JsonSchema(schema),
            parse_model,
            json_max_bytes(schema),
            "json:" + json.dumps(schema, sort_keys=True),
        )
    raise ArgumentTypeError(
        f"unsupported output type {output_type!r}; use None/str, a list of strings, a JSON-schema "
        "dict, "
        "a pydantic model class, typing.Literal, or outlines.types.Choice/Regex/JsonSchema"
    )


def spec_regex(spec: OutputSpec) -> str:
    """The regular expression outlines_core compiles for ``spec`` (JSON via its schema-to-regex)."""
    from outlines.types import JsonSchema
    from outlines.types.dsl import python_types_to_terms, to_regex
    from outlines_core.json_schema import build_regex_from_schema

    term = spec.term
    if isinstance(term, JsonSchema):
        schema = term.schema if isinstance(term.schema, str) else json.dumps(term.schema)
        return build_regex_from_schema(schema, term.whitespace_pattern)
    return to_regex(python_types_to_terms(term))


def finished_sample(
    spec: Any,
    text: str,
    token_ids: list[int],
    finished: bool,
    logp: float,
    logq: float,
    limit: int,
    num_tokens: int | None = None,
    bound: int | None = None,
) -> Sample:
    """The :class:`Sample` of a backend's generated ``text`` under output spec ``spec`` (every
    backend: transformers, llama.cpp in-process, remote).

    Raises :class:`GenerationError` when a bounded (JSON/choice) answer stopped at ``limit``
    tokens before its end (``bound``: the tokens a valid answer may need, named in the message),
    or when a finished answer does not parse; an unfinished unbounded answer that does not parse
    gets ``value=None``.  ``num_tokens`` defaults to ``len(token_ids)``.
    """
    if spec.term is not None and spec.max_bytes is not None and not finished:
        need = f" (a valid answer may need {bound} tokens)" if bound is not None else ""
        raise GenerationError(
            f"constrained output truncated at max_new_tokens={limit}{need}; partial text: "
            f"{text[:200]!r}"
        )
    try:
        value = spec.parse(text)
    except (GenerationError, ValueError):
        if finished:
            raise
        value = None
    count = len(token_ids) if num_tokens is None else num_tokens
    return Sample(value, text, logq, logp, count, finished, token_ids)
