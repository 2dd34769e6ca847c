"""Knowledge graph in and out: prompt lines, JSON (round trip), networkx, PNG.

The prompt form is one ``(subject, predicate, object)`` per line, the form NeSyFS
(arXiv 2607.28942) feeds its modules.  The JSON form keeps every fact with its provenance and
the predicate table, so ``from_json(to_json(G)) == G`` and it keeps behaving the same on update.
The PNG is drawn with networkx and matplotlib's Agg canvas (no pyplot, no global state).

This module must not import torch, transformers, outlines or jax, nor anything from
``smcplan.llm``, ``smcplan.envs``, ``smcplan.planning`` or ``smcplan.agents``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from smcplan.errors import SmcplanError, check_int
from smcplan.jsonfile import write_json
from smcplan.memory.predicates import PredicateTable
from smcplan.memory.store import FactStore
from smcplan.memory.triplet import SOURCES, Provenance, Triplet, as_triplet, check_source

if TYPE_CHECKING:
    import networkx as nx

S = TypeVar("S", bound=FactStore)

__all__ = [
    "to_prompt_lines",
    "format_prompt",
    "to_json",
    "from_json",
    "save_json",
    "load_json",
    "KnowledgeGraphFormatError",
    "to_networkx",
    "save_png",
    "JSON_FORMAT",
]

JSON_FORMAT = "smcplan.memory.KnowledgeGraph/1"


def to_prompt_lines(triplets: Iterable[Any]) -> list[str]:
    """``["(apple 1, in, fridge 1)", ...]``, in the order given."""
    return [str(as_triplet(t)) for t in triplets]


def format_prompt(triplets: Iterable[Any], *, empty: str = "(nothing known yet)") -> str:
    """The prompt lines joined by newlines (``empty`` when there are none)."""
    lines = to_prompt_lines(triplets)
    return "\n".join(lines) if lines else empty


def to_json(kg: FactStore) -> dict[str, Any]:
    """A JSON-able dict: format tag, clock, predicate table and the facts in insertion order."""
    return {
        "format": JSON_FORMAT,
        "step": kg.step,
        "predicates": kg.predicates.to_json(),
        "facts": [
            {"subject": t.subject, "predicate": t.predicate, "object": t.object,
             "step": p.step, "source": p.source}
            for t, p in kg.facts()
        ],
    }


class KnowledgeGraphFormatError(SmcplanError, ValueError):
    """A knowledge-graph JSON document (or file) that cannot be read back; names its source."""


def from_json(data: dict[str, Any] | str, cls: type[S], source: str = "<data>") -> S:
    """Rebuild a ``cls`` (a :class:`~smcplan.memory.graph.KnowledgeGraph`) from :func:`to_json`
    output (a dict or its JSON text), fact by fact.

    Facts are restored as stored, not re-derived; a file that breaks an invariant (two facts in
    one exclusive slot, a missing inverse partner) is rejected with the offending facts named.
    Anything unreadable raises :class:`KnowledgeGraphFormatError` naming ``source`` (the path,
    for :func:`load_json`) and what is wrong.
    """
    try:
        return _from_json(data, cls)
    except KnowledgeGraphFormatError as exc:
        if str(exc).startswith(f"{source}: "):
            raise
        raise KnowledgeGraphFormatError(f"{source}: {exc}") from exc
    except (ValueError, KeyError, TypeError, AttributeError, IndexError, RecursionError) as exc:
        detail = str(exc) if isinstance(exc, ValueError) else f"{type(exc).__name__}: {exc}"
        raise KnowledgeGraphFormatError(
            f"{source}: not a readable knowledge-graph JSON document ({detail}); "
            f"write it with KnowledgeGraph.save (format {JSON_FORMAT!r})"
        ) from exc


def _from_json(data: dict[str, Any] | str, cls: type[S]) -> S:
    if isinstance(data, str | bytes):
        data = json.loads(data)
    if not isinstance(data, dict) or data.get("format") != JSON_FORMAT:
        got = data.get("format") if isinstance(data, dict) else type(data).__name__
        raise ValueError(f"format {got!r}, expected {JSON_FORMAT!r}")
    table = PredicateTable.from_json(data["predicates"])
    kg = cls(predicates=table, step=check_int(data["step"], "step", minimum=0))
    for i, fact in enumerate(data["facts"]):
        t = Triplet(fact["subject"], fact["predicate"], fact["object"])
        source = fact["source"]
        if source not in SOURCES:
            check_source(source)
        if t in kg._facts:
            raise ValueError(f"fact #{i} {t} appears twice")
        kg._seq += 1
        kg._insert(
            t, Provenance(check_int(fact["step"], f"fact #{i} step", minimum=0), source, kg._seq)
        )
    kg.validate()
    return kg


def save_json(kg: FactStore, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json(path, to_json(kg), indent=1)
    return path


def load_json(path: str | Path, cls: type[S]) -> S:
    """Read a graph saved by :func:`save_json`; a damaged file raises
    :class:`KnowledgeGraphFormatError` naming the path (a missing one ``FileNotFoundError``)."""
    path = Path(path)
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise KnowledgeGraphFormatError(
            f"{path}: not UTF-8 text ({exc}); expected a KnowledgeGraph.save file"
        ) from exc
    return from_json(text, cls, source=str(path))


def to_networkx(kg: FactStore, triplets: Iterable[Any] | None = None) -> nx.MultiDiGraph:
    """A ``MultiDiGraph``: nodes are names, one edge per fact keyed by predicate, with
    ``predicate``, ``step`` and ``source`` attributes."""
    import networkx as nx

    g = nx.MultiDiGraph()
    chosen = kg if triplets is None else (kg.predicates.canonical(as_triplet(t)) for t in triplets)
    for t in chosen:
        p = kg.provenance(t)
        g.add_edge(t.subject, t.object, key=t.predicate, predicate=t.predicate, step=p.step,
                   source=p.source)
    return g


_SOURCE_COLOUR = {"observed": "#222222", "inferred": "#1f77b4", "predicted": "#ff7f0e"}


def save_png(
    kg: FactStore,
    path: str | Path,
    triplets: Iterable[Any] | None = None,
    *,
    title: str | None = None,
    max_facts: int = 150,
    seed: int = 0,
) -> Path:
    """Draw the graph (or ``triplets`` of it) to a PNG and return the path.

    Entities are nodes; attribute facts (``is``, ``reads``, ...) are folded into their subject's
    label as ``[open, hot]``; relation edges are coloured by source (observed black, inferred
    blue, predicted orange) and events are dashed.  At most the ``max_facts`` newest facts are
    drawn; the layout is networkx's spring layout with a fixed ``seed`` (same graph, same picture).
    """
    import networkx as nx
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    table = kg.predicates
    chosen = list(kg) if triplets is None else [table.canonical(as_triplet(t)) for t in triplets]
    chosen.sort(key=lambda t: -kg.provenance(t).step)
    chosen = chosen[:max_facts]
    values: dict[str, list[str]] = {}
    g = nx.MultiDiGraph()
    for t in chosen:
        if table.spec(t.predicate).attribute:
            g.add_node(t.subject)
            shown = t.object if t.predicate == "is" else f"{t.predicate} {t.object}"
            values.setdefault(t.subject, []).append(shown)
        else:
            p = kg.provenance(t)
            g.add_edge(t.subject, t.object, key=t.predicate, predicate=t.predicate, source=p.source)
    n = max(g.number_of_nodes(), 1)
    size = min(6 + 0.9 * n ** 0.5, 22)
    fig = Figure(figsize=(size, size * 0.75), dpi=110)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    ax.set_axis_off()
    if title:
        ax.set_title(title)
    if g.number_of_nodes():
        pos = nx.spring_layout(g, seed=seed, k=2.0 / n ** 0.5, iterations=200)
        labels = {v: v + (f"\n[{', '.join(sorted(values[v]))}]" if v in values else "")
                  for v in g.nodes}
        nx.draw_networkx_nodes(g, pos, ax=ax, node_size=500, node_color="#dde8f5")
        nx.draw_networkx_labels(g, pos, labels=labels, ax=ax, font_size=7)
        edge_labels: dict[tuple[str, str], list[str]] = {}
        for u, v, data in g.edges(data=True):
            event = table.is_event(data["predicate"])
            nx.draw_networkx_edges(
                g, pos, edgelist=[(u, v)], ax=ax, arrows=True, width=1.0, node_size=500,
                edge_color=_SOURCE_COLOUR[data["source"]], style="dashed" if event else "solid",
            )
            edge_labels.setdefault((u, v), []).append(data["predicate"])
        nx.draw_networkx_edge_labels(
            g, pos, ax=ax, font_size=6,
            edge_labels={e: ", ".join(sorted(p)) for e, p in edge_labels.items()},
        )
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, bbox_inches="tight")
    return path
