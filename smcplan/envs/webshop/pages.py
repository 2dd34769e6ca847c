"""WebShop pages as text, and the clickable elements of each page.

The original renders HTML (``web_agent_site/templates/*.html``) and its text mode strips the
tags; agent papers (ReAct, Reflexion) show the pages one element per line with clickable
elements in brackets.  This module renders that form directly:

* search page: ``WebShop`` / ``Instruction:`` / the instruction / ``[Search]``;
* results page: ``[Back to Search]``, ``Page p (Total results: n)``, ``[< Prev]``/``[Next >]``,
  then per product ``[ASIN]``, title, price (10 per page);
* item page: ``[Back to Search]``, ``[< Prev]``, one line per option group
  (``color [black] [white]``), title, ``Price:``, ``Rating:``, ``[Description]``,
  ``[Features]``, ``[Reviews]`` (``[Attributes]`` with ``show_attrs``), ``[Buy Now]``;
* sub-pages: ``[Back to Search]``, ``[< Prev]`` and the description / bullet points / reviews /
  attributes; done page: the purchase and its reward.

Clickables are keyed in lower case, as ``WebAgentTextEnv.get_available_actions`` keys them.

Pure standard library; must not import other smcplan layers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "PRODUCT_WINDOW",
    "BACK_TO_SEARCH",
    "NEXT_PAGE",
    "PREV_PAGE",
    "END_BUTTON",
    "SUB_PAGES",
    "search_page",
    "results_page",
    "item_page",
    "sub_page",
    "done_page",
]

PRODUCT_WINDOW = 10
BACK_TO_SEARCH = "Back to Search"
NEXT_PAGE = "Next >"
PREV_PAGE = "< Prev"
END_BUTTON = "Buy Now"
SUB_PAGES = ("Description", "Features", "Reviews", "Attributes")


def search_page(instruction: str) -> str:
    return f"WebShop\nInstruction:\n{instruction}\n[Search]"


def results_page(
    products: Sequence[Mapping[str, Any]], page: int, total: int
) -> tuple[str, list[str]]:
    lines = [f"[{BACK_TO_SEARCH}]", f"Page {page} (Total results: {total})"]
    clickables = [BACK_TO_SEARCH.lower()]
    if page > 1:
        lines.append(f"[{PREV_PAGE}]")
        clickables.append(PREV_PAGE.lower())
    if page * PRODUCT_WINDOW < total:
        lines.append(f"[{NEXT_PAGE}]")
        clickables.append(NEXT_PAGE.lower())
    for p in products:
        lines += [f"[{p['asin']}]", p["Title"], p["Price"]]
        clickables.append(p["asin"].lower())
    return "\n".join(lines), clickables


def item_page(
    product: Mapping[str, Any],
    options: Mapping[str, str],
    show_attrs: bool,
    just_clicked: str | None = None,
) -> tuple[str, list[str]]:
    lines = [f"You have clicked {just_clicked}."] if just_clicked else []
    lines += [f"[{BACK_TO_SEARCH}]", f"[{PREV_PAGE}]"]
    clickables = [BACK_TO_SEARCH.lower(), PREV_PAGE.lower()]
    for name, values in product["options"].items():
        marked = [
            f"[{v}]" if options.get(name) != v else f"[{v}] (selected)" for v in values
        ]
        lines.append(f"{name} " + " ".join(marked))
        clickables += list(values)
    lines += [product["Title"], f"Price: {product['Price']}", f"Rating: {product['Rating']}"]
    buttons = [b for b in SUB_PAGES if show_attrs or b != "Attributes"] + [END_BUTTON]
    lines += [f"[{b}]" for b in buttons]
    clickables += [b.lower() for b in buttons]
    return "\n".join(lines), clickables


def sub_page(product: Mapping[str, Any], which: str) -> tuple[str, list[str]]:
    lines = [f"[{BACK_TO_SEARCH}]", f"[{PREV_PAGE}]"]
    if which == "Description":
        lines.append(product["Description"])
    elif which == "Features":
        lines += list(product["BulletPoints"])
    elif which == "Reviews":
        reviews = product.get("Reviews") or []
        if not reviews:
            lines.append("No reviews yet.")
        for r in reviews:
            lines.append(f"Rating: {r.get('score')} | {r.get('title', '')} | {r.get('body', '')}")
    elif which == "Attributes":
        lines += list(product["Attributes"])
    else:  # pragma: no cover - callers pass SUB_PAGES only
        raise ValueError(f"unknown sub-page {which!r}; known: {', '.join(SUB_PAGES)}")
    return "\n".join(lines), [BACK_TO_SEARCH.lower(), PREV_PAGE.lower()]


def done_page(asin: str, options: Mapping[str, str], reward: float) -> str:
    chosen = ", ".join(f"{k}: {v}" for k, v in options.items()) or "none"
    return (
        "Thank you for shopping with us!\n"
        f"Purchased: {asin} (options: {chosen})\n"
        f"Your score (min 0.0, max 1.0): {reward:.4f}"
    )
