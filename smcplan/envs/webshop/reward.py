"""WebShop's purchase reward (Yao et al., 2022), ported from ``web_agent_site/engine/goal.py``.

For a goal with attribute set ``A_g``, option list ``O_g`` and price bound ``u``, buying product
``p`` at price ``c`` with selected options ``O_p`` earns

    R = r_type * (|A_g matched| + |O_g matched| + 1[c <= u]) / (|A_g| + |O_g| + 1),

* an attribute ``a in A_g`` is matched when ``token_set_ratio(a, a') > 85`` for some attribute
  ``a'`` of ``p``, or ``a`` occurs in ``p``'s title, bullet points or description;
* each selected option ``o in O_p`` counts once when it fuzzy-matches (``> 85``; exact match for
  ``size``) some goal option after colour normalisation, or occurs in ``p``'s text;
* ``r_type`` in {0, 0.1, 0.5, 1} checks the product type: same search query, >= 2 shared
  category levels, or the share of the goal title's nouns found in ``p``'s title.

Deviations, both forced by working offline and both documented in ``docs/envs.md``:

* ``token_set_ratio`` is re-implemented here (``thefuzz``/``rapidfuzz`` are not dependencies);
  it follows rapidfuzz's algorithm and thefuzz's default preprocessing and rounding.
* The original picks title nouns with spaCy's ``en_core_web_lg`` tagger.  If a spaCy English
  pipeline is installed it is used; otherwise a rule: alphabetic tokens of length >= 2 that are
  not stop words, colour words or units.

Reference: S. Yao, H. Chen, J. Yang, K. Narasimhan, "WebShop: Towards Scalable Real-World Web
Interaction with Grounded Language Agents", NeurIPS 2022.

Pure standard library; must not import other smcplan layers.
"""

from __future__ import annotations

import functools
import importlib.util
import re
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "COLOR_SET",
    "EXACT_MATCH_OPTS",
    "token_set_ratio",
    "normalize_color",
    "title_nouns",
    "get_type_reward",
    "get_attribute_reward",
    "get_option_reward",
    "get_reward",
]

#: ``web_agent_site/engine/normalize.py``: the first of these found inside an option value
#: replaces it before matching (so "light blue" and "navy blue" both become "blue").
COLOR_SET = [
    "alabaster", "apricot", "aqua", "ash", "asphalt", "azure", "banana", "beige", "black",
    "blue", "blush", "bordeaux", "bronze", "brown", "burgundy", "camel", "camo", "caramel",
    "champagne", "charcoal", "cheetah", "chestnut", "chocolate", "christmas", "coffee",
    "cognac", "copper", "coral", "cranberry", "cream", "crystal", "dark", "denim", "eggplant",
    "elephant", "espresso", "fuchsia", "gold", "granite", "grape", "graphite", "grass", "gray",
    "green", "grey", "heather", "indigo", "ivory", "ivy", "khaki", "lavender", "lemon",
    "leopard", "light", "lilac", "lime", "magenta", "maroon", "mauve", "merlot", "midnight",
    "mint", "mocha", "multicolor", "mushroom", "mustard", "natural", "navy", "nude", "olive",
    "orange", "peach", "pewter", "pink", "plum", "purple", "rainbow", "red", "rose", "royal",
    "rust", "sand", "sapphire", "seashell", "silver", "skull", "slate", "steel", "stone",
    "stonewash", "sunflower", "tan", "taupe", "teal", "tiger", "turquoise", "violet", "walnut",
    "wheat", "white", "wine", "yellow",
]
EXACT_MATCH_OPTS = ["size"]
FUZZY_THRESHOLD = 85

_NON_WORD = re.compile(r"(?u)\W")
_TOKEN = re.compile(r"[a-z]+")
_STOP = frozenset(
    "a an and are as at be but by for from if in into is it its no not of on or per such that "
    "the their then there these they this to was will with without x pack count oz fl ounce "
    "ounces inch inches lb lbs ml cm mm kg g set piece pieces pcs size new".split()
)


def _preprocess(s: str) -> str:
    """thefuzz's ``full_process(s, force_ascii=True)``: ASCII only, non-word -> space, lower."""
    s = s.encode("ascii", "ignore").decode()
    return _NON_WORD.sub(" ", s).lower().strip()


def _lcs_length(a: str, b: str) -> int:
    if len(a) < len(b):
        a, b = b, a
    prev = [0] * (len(b) + 1)
    for ca in a:
        cur = [0]
        for j, cb in enumerate(b, 1):
            cur.append(prev[j - 1] + 1 if ca == cb else max(prev[j], cur[j - 1]))
        prev = cur
    return prev[-1]


def _indel_distance(a: str, b: str) -> int:
    """Insertions + deletions turning ``a`` into ``b``: ``|a| + |b| - 2 LCS(a, b)``."""
    return len(a) + len(b) - 2 * _lcs_length(a, b)


def _norm(dist: int, lensum: int) -> float:
    return 100.0 if lensum == 0 else 100.0 - 100.0 * dist / lensum


@functools.lru_cache(maxsize=65536)
def token_set_ratio(s1: str, s2: str) -> int:
    """Fuzzy token-set similarity in 0..100 (thefuzz's ``fuzz.token_set_ratio``).

    With token sets T1, T2, intersection I (sorted, joined) and differences D12 = T1 - T2,
    D21 = T2 - T1: 100 if I is non-empty and one difference is empty; otherwise the best of the
    normalised InDel similarities 100 (1 - d(x, y) / (|x| + |y|)) between I+D12 and I+D21, I
    and I+D12, I and I+D21 (the first reduces to d(D12, D21) since I is a shared prefix).
    Rounded to an int as thefuzz does.
    """
    a, b = _preprocess(s1), _preprocess(s2)
    ta, tb = set(a.split()), set(b.split())
    if not ta or not tb:
        return 0
    inter, dab, dba = ta & tb, ta - tb, tb - ta
    if inter and (not dab or not dba):
        return 100
    ab, ba = " ".join(sorted(dab)), " ".join(sorted(dba))
    sect = len(" ".join(inter))
    sect_ab = sect + (1 if sect else 0) + len(ab)
    sect_ba = sect + (1 if sect else 0) + len(ba)
    result = _norm(_indel_distance(ab, ba), sect_ab + sect_ba)
    if sect:
        result = max(
            result,
            _norm(1 + len(ab), sect + sect_ab),
            _norm(1 + len(ba), sect + sect_ba),
        )
    return int(round(result))


def normalize_color(color_string: str) -> str:
    """The first colour of ``COLOR_SET`` found inside ``color_string``, else the string."""
    for color in COLOR_SET:
        if color in color_string:
            return color
    return color_string


@functools.lru_cache(maxsize=1)
def _spacy_pipeline() -> Any:
    # Look for an installed pipeline package before importing spaCy (its import alone takes
    # seconds, wasted when no English pipeline is installed, as on the offline machines).
    for model in ("en_core_web_lg", "en_core_web_md", "en_core_web_sm"):
        if importlib.util.find_spec(model) is None:
            continue
        try:
            import spacy

            return spacy.load(model)
        except Exception:
            continue
    return None


@functools.lru_cache(maxsize=65536)
def title_nouns(title: str) -> tuple[str, ...]:
    """Lower-cased nouns of a product title (spaCy if a pipeline is installed, else a rule)."""
    nlp = _spacy_pipeline()
    if nlp is not None:
        return tuple(t.text.lower() for t in nlp(title) if t.pos_ in ("PNOUN", "NOUN", "PROPN"))
    colors = set(COLOR_SET)
    return tuple(
        t for t in _TOKEN.findall(title.lower()) if len(t) >= 2 and t not in _STOP
        and t not in colors
    )


def get_type_reward(purchased: Mapping[str, Any], goal: Mapping[str, Any]) -> dict[str, Any]:
    """``r_type``: 1 if the type matches, 0.5 if only weakly, 0.1 / 0 if the title is off."""
    query_match = purchased["query"] == goal["query"]
    cats_p = {x.strip() for x in purchased["product_category"].split("›")}
    cats_g = {x.strip() for x in goal["product_category"].split("›")}
    category_match = len(cats_p & cats_g) >= 2
    desired = title_nouns(goal["name"])
    got = title_nouns(purchased["name"])
    title_score = 0.2 if not desired else len(set(got) & set(desired)) / len(desired)
    r_type = 1.0
    if not (query_match or category_match or title_score > 0.2):
        r_type = 0.5
    if title_score < 0.1:
        r_type = 0.1
    if title_score == 0.0:
        r_type = 0.0
    return {
        "r_type": r_type,
        "query_match": query_match,
        "category_match": category_match,
        "title_score": title_score,
    }


def _in_text(needle: str, product: Mapping[str, Any]) -> bool:
    return (
        needle in product["Title"].lower()
        or needle in " ".join(product["BulletPoints"]).lower()
        or needle in product["Description"].lower()
    )


def get_attribute_reward(
    purchased: Mapping[str, Any], goal: Mapping[str, Any]
) -> tuple[float, int]:
    """Share of goal attributes the product has (fuzzy attribute match, else in its text)."""
    matches = 0
    for g_attr in goal["attributes"]:
        if any(token_set_ratio(p_attr, g_attr) > FUZZY_THRESHOLD
               for p_attr in purchased["Attributes"]):
            matches += 1
        elif _in_text(g_attr, purchased):
            matches += 1
    return matches / len(goal["attributes"]), matches


def get_option_reward(
    purchased: Mapping[str, Any],
    goal_options: Sequence[str],
    purchased_options: Mapping[str, str],
) -> tuple[float | None, int]:
    """Goal options hit by the selected options (``size`` exactly, others fuzzily)."""
    chosen = {k: normalize_color(v) for k, v in purchased_options.items()}
    wanted = [normalize_color(o) for o in goal_options]
    matches = 0
    for key, value in chosen.items():
        matched = False
        if key.lower() in EXACT_MATCH_OPTS:
            if value in wanted:
                matches += 1
                matched = True
        else:
            for g_option in wanted:
                if token_set_ratio(g_option, value) > FUZZY_THRESHOLD:
                    matches += 1
                    matched = True
                    break
        if not matched and _in_text(value, purchased):
            matches += 1
    r_option = matches / len(wanted) if wanted else None
    return r_option, matches


def _goal_options(goal: Mapping[str, Any]) -> list[str]:
    options = goal["goal_options"]
    return list(options.values()) if isinstance(options, Mapping) else list(options)


def get_reward(
    purchased: Mapping[str, Any],
    goal: Mapping[str, Any],
    price: float,
    options: Mapping[str, str],
) -> tuple[float, dict[str, Any]]:
    """The total reward ``R`` (module docstring) and its components."""
    type_info = get_type_reward(purchased, goal)
    r_price = price <= goal["price_upper"] if goal["price_upper"] > 0 else None
    r_att, n_att = get_attribute_reward(purchased, goal)
    goal_options = _goal_options(goal)
    r_option, n_opt = get_option_reward(purchased, goal_options, options)
    denominator = len(goal["attributes"]) + len(goal_options) + 1
    total = (n_att + n_opt + (1 if r_price else 0)) / denominator * type_info["r_type"]
    info: dict[str, Any] = {
        **type_info,
        "r_att": r_att,
        "w_att": len(goal["attributes"]) / denominator,
    }
    if r_option is not None:
        info["r_option"] = r_option
        info["w_option"] = len(goal_options) / denominator
    if r_price is not None:
        info["r_price"] = bool(r_price)
        info["w_price"] = 1 / denominator
    return total, info

