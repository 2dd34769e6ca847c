"""WebShop catalogs: products, prices, goals and the search index, from the original JSON files.

The original WebShop reads

* ``items_shuffle_1000.json`` (or the full ``items_shuffle.json``): a list of scraped products
  (``asin``, ``name``, ``full_description``, ``small_description``, ``pricing``, ``images``,
  ``query``, ``category``, ``product_category``, ``customization_options``, ...);
* ``items_ins_v2_1000.json``: ``asin -> {"attributes", "instruction", "instruction_attributes"}``;
* ``items_human_ins.json``: ``asin -> [{"instruction", "instruction_attributes",
  "instruction_options"}, ...]``, the crowd-written goals used for evaluation;
* optionally a reviews file: ``[{"asin", "reviews": [{"stars", "review", ...}],
  "average_rating"}]``.

``load_catalog`` ports ``web_agent_site/engine/engine.py::load_products`` and
``goal.py::get_human_goals / get_synthetic_goals`` field by field.  Where the original draws
from the unseeded global ``random`` (prices inside a price range, the price bound of each goal),
a ``random.Random(seed)`` is used instead, so a catalog is reproducible; the goal order is the
original's exactly (``random.seed(233); random.shuffle(goals)``), so goal ``i`` here is goal
``i`` there.  Evaluation splits follow the WebShop baselines: goals 0-499 test, 500-1499 dev,
the rest train.

``synthetic_catalog()`` loads the small catalog shipped with this package (files in the same
format, made by ``smcplan.envs.webshop.synthetic``).  It is a SYNTHETIC catalog: invented
products and goals, not WebShop's data, and results on it are not comparable with published
WebShop numbers.

Pure standard library; must not import other smcplan layers.
"""

from __future__ import annotations

import functools
import itertools
import json
import os
import random
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from smcplan.envs.webshop.search import SEARCH_RETURN_N, BM25Index

__all__ = [
    "Catalog",
    "load_catalog",
    "synthetic_catalog",
    "original_catalog",
    "DATA_DIR",
    "SYNTHETIC_FILES",
    "ORIGINAL_FILES",
    "PRICE_RANGE",
]

DATA_DIR = Path(__file__).parent / "data"
#: File names of the shipped synthetic catalog (same formats as the original files).
SYNTHETIC_FILES = {
    "products": "synthetic_items_shuffle.json",
    "attributes": "synthetic_items_ins_v2.json",
    "human_instructions": "synthetic_items_human_ins.json",
    "reviews": "synthetic_reviews.json",
}
#: The original WebShop file names looked for by ``original_catalog(data_dir)``.
ORIGINAL_FILES = {
    "products": ("items_shuffle_1000.json", "items_shuffle.json"),
    "attributes": ("items_ins_v2_1000.json", "items_ins_v2.json"),
    "human_instructions": ("items_human_ins.json",),
}
PRICE_RANGE = [10.0 * i for i in range(1, 100)]
GOAL_SHUFFLE_SEED = 233


@dataclass
class Catalog:
    """Products (processed as the original does), goals (shuffled), prices and a BM25 index."""

    products: list[dict[str, Any]]
    prices: dict[str, float]
    goals: list[dict[str, Any]]
    name: str
    synthetic: bool
    splits: dict[str, range]
    by_asin: dict[str, dict[str, Any]] = field(init=False)
    index: BM25Index = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.by_asin = {p["asin"]: p for p in self.products}
        self.index = BM25Index([_document(p) for p in self.products])

    def search(self, keywords: str, k: int = SEARCH_RETURN_N) -> list[str]:
        """ASINs of the top-``k`` products for ``keywords`` (BM25), best first."""
        return [self.products[i]["asin"] for i in self.index.search(keywords, k)]

    def split_of(self, goal_index: int) -> str | None:
        for split, indices in self.splits.items():
            if goal_index in indices:
                return split
        return None


def _document(product: Mapping[str, Any]) -> str:
    """The indexed text of a product (``search_engine/convert_product_file_format.py``)."""
    option_texts = [f"{name}: {', '.join(values)}" for name, values in product["options"].items()]
    bullets = product["BulletPoints"]
    return " ".join(
        [product["Title"], product["Description"], bullets[0] if bullets else "",
         ", and ".join(option_texts)]
    ).lower()


def _read_json(path: str | os.PathLike[str]) -> Any:
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def _parse_pricing(pricing: Any) -> tuple[list[float], str]:
    if not pricing:
        return [100.0], "$100.0"
    values = [float(Decimal(re.sub(r"[^\d.]", "", p))) for p in str(pricing).split("$")[1:]]
    if len(values) == 1:
        return values, f"${values[0]}"
    return values[:2], f"${values[0]} to ${values[1]}"


def _process_products(
    raw: list[dict[str, Any]],
    attributes: Mapping[str, Any],
    human: Mapping[str, Any] | None,
    reviews: list[dict[str, Any]] | None,
    num_products: int | None,
) -> list[dict[str, Any]]:
    all_reviews = {r["asin"]: r["reviews"] for r in reviews or []}
    all_ratings = {r["asin"]: r["average_rating"] for r in reviews or []}
    if num_products is not None:
        raw = raw[:num_products]
    seen: set[str] = set()
    products = []
    for source in raw:
        p = dict(source)
        asin = p["asin"]
        if asin == "nan" or len(asin) > 10 or asin in seen:
            continue
        seen.add(asin)
        p["Title"] = p["name"]
        p["Description"] = p["full_description"]
        p["Reviews"] = []
        for r in all_reviews.get(asin, []):
            r = dict(r)
            if "score" not in r:
                r["score"] = r.pop("stars", None)
            r["body"] = r.pop("review", "") if "review" in r else r.get("body", "")
            p["Reviews"].append(r)
        p["Rating"] = all_ratings.get(asin, "N.A.")
        small = p.get("small_description", [])
        p["BulletPoints"] = small if isinstance(small, list) else [small]
        p["pricing"], p["Price"] = _parse_pricing(p.get("pricing"))
        options: dict[str, list[str]] = {}
        option_to_image: dict[str, Any] = {}
        for option_name, contents in (p.get("customization_options") or {}).items():
            if contents is None:
                continue
            values = []
            for content in contents:
                value = content["value"].strip().replace("/", " | ").lower()
                values.append(value)
                option_to_image[value] = content.get("image")
            options[option_name.lower()] = values
        p["options"] = options
        p["option_to_image"] = option_to_image
        entry = attributes.get(asin, {})
        p["Attributes"] = entry.get("attributes", ["DUMMY_ATTR"]) if entry else ["DUMMY_ATTR"]
        if human is not None:
            if asin in human:
                p["instructions"] = human[asin]
        else:
            p["instruction_text"] = entry.get("instruction")
            p["instruction_attributes"] = entry.get("instruction_attributes")
        images = p.get("images") or [None]
        p["MainImage"] = images[0]
        p["query"] = p["query"].lower().strip()
        products.append(p)
    return products


def _product_prices(products: list[dict[str, Any]], rng: random.Random) -> dict[str, float]:
    prices = {}
    for p in products:
        pricing = p["pricing"]
        if not pricing:
            prices[p["asin"]] = 100.0
        elif len(pricing) == 1:
            prices[p["asin"]] = pricing[0]
        else:
            prices[p["asin"]] = rng.uniform(*pricing[:2])
    return prices


def _price_bound(price: float, rng: random.Random) -> tuple[float, str]:
    candidates = [p for p in PRICE_RANGE if p > price][:4]
    if len(candidates) >= 2:
        _, upper = sorted(rng.sample(candidates, 2))
        return upper, f", and price lower than {upper:.2f} dollars"
    return 1000000, ""


def _human_goals(products, prices, rng) -> list[dict[str, Any]]:
    goals = []
    for item in products:
        for ins in item.get("instructions", []):
            attributes = ins["instruction_attributes"]
            if not attributes:
                continue
            upper, price_text = _price_bound(prices[item["asin"]], rng)
            goals.append({
                "asin": item["asin"],
                "category": item["category"],
                "query": item["query"],
                "name": item["name"],
                "product_category": item["product_category"],
                "instruction_text": ins["instruction"].strip(".") + price_text,
                "attributes": attributes,
                "price_upper": upper,
                "goal_options": ins["instruction_options"],
                "weight": 1,
            })
    return goals


def _synthetic_goals(products, prices, rng) -> list[dict[str, Any]]:
    goals = []
    counts: dict[str, int] = {}
    for p in products:
        if p.get("instruction_text") is None:
            continue
        attributes = p["instruction_attributes"]
        upper, price_text = _price_bound(prices[p["asin"]], rng)
        names = sorted(p["options"])
        for combination in itertools.product(*(p["options"][n] for n in names)):
            goal_options = dict(zip(names, combination, strict=True))
            option_text = ", and ".join(f"{k}: {v}" for k, v in goal_options.items())
            option_text = " with " + option_text if option_text else ""
            goals.append({
                "asin": p["asin"],
                "category": p["category"],
                "query": p["query"],
                "product_category": p["product_category"],
                "instruction_text": f"{p['instruction_text']}{option_text}{price_text}",
                "attributes": attributes,
                "price_upper": upper,
                "goal_options": goal_options,
                "name": p["Title"],
            })
            for a in attributes:
                counts[a] = counts.get(a, 0) + 1
    for g in goals:
        g["weight"] = sum(1.0 / counts[a] for a in g["attributes"]) / len(g["attributes"])
    return goals


def _original_splits(n_goals: int) -> dict[str, range]:
    return {
        "test": range(0, min(500, n_goals)),
        "dev": range(min(500, n_goals), min(1500, n_goals)),
        "train": range(min(1500, n_goals), n_goals),
    }


def load_catalog(
    products_path: str | os.PathLike[str],
    attributes_path: str | os.PathLike[str],
    human_instructions_path: str | os.PathLike[str] | None = None,
    reviews_path: str | os.PathLike[str] | None = None,
    *,
    human_goals: bool = True,
    num_products: int | None = None,
    seed: int = GOAL_SHUFFLE_SEED,
    name: str | None = None,
    synthetic: bool = False,
    splits: dict[str, range] | None = None,
) -> Catalog:
    """Load a catalog in the original WebShop file formats (module docstring).

    ``human_goals=True`` (the evaluation setting) builds goals from the human instructions file
    and needs ``human_instructions_path``; ``False`` builds the synthetic goals from the
    attributes file (one per product option combination).  ``splits`` overrides the
    0-499 / 500-1499 / rest goal split.
    """
    if human_goals and human_instructions_path is None:
        raise ValueError("human_goals=True needs human_instructions_path (items_human_ins.json)")
    raw = _read_json(products_path)
    attributes = _read_json(attributes_path)
    human = _read_json(human_instructions_path) if human_goals else None
    reviews = _read_json(reviews_path) if reviews_path is not None else None
    products = _process_products(raw, attributes, human, reviews, num_products)
    rng = random.Random(seed)
    prices = _product_prices(products, rng)
    goals = (_human_goals if human_goals else _synthetic_goals)(products, prices, rng)
    random.Random(GOAL_SHUFFLE_SEED).shuffle(goals)  # == random.seed(233); random.shuffle(goals)
    return Catalog(
        products=products,
        prices=prices,
        goals=goals,
        name=name or str(products_path),
        synthetic=synthetic,
        splits=splits if splits is not None else _original_splits(len(goals)),
    )


#: Goal splits of the synthetic catalog (``smcplan.envs.splits`` lists them too).
SYNTHETIC_SPLITS = {"test": range(0, 50), "dev": range(50, 75), "train": range(75, 100)}


@functools.lru_cache(maxsize=1)
def synthetic_catalog() -> Catalog:
    """The small synthetic catalog shipped with smcplan (NOT WebShop's data)."""
    files = {k: DATA_DIR / v for k, v in SYNTHETIC_FILES.items()}
    missing = [str(p) for p in files.values() if not p.exists()]
    if missing:
        raise FileNotFoundError(
            f"synthetic WebShop catalog files missing: {', '.join(missing)}; regenerate them "
            "with `python scripts/webshop_catalog.py`"
        )
    catalog = load_catalog(
        files["products"],
        files["attributes"],
        files["human_instructions"],
        files["reviews"],
        name="synthetic",
        synthetic=True,
        splits=SYNTHETIC_SPLITS,
    )
    if len(catalog.goals) != SYNTHETIC_SPLITS["train"].stop:
        raise ValueError(
            f"synthetic catalog has {len(catalog.goals)} goals, expected "
            f"{SYNTHETIC_SPLITS['train'].stop}; regenerate the files"
        )
    return catalog


@functools.lru_cache(maxsize=4)
def original_catalog(data_dir: str, human_goals: bool = True) -> Catalog:
    """The real WebShop catalog from a folder holding the original files (ORIGINAL_FILES)."""
    folder = Path(data_dir)
    found: dict[str, Path] = {}
    for key, names in ORIGINAL_FILES.items():
        for candidate in names:
            if (folder / candidate).exists():
                found[key] = folder / candidate
                break
    needed = ["products", "attributes"] + (["human_instructions"] if human_goals else [])
    absent = [k for k in needed if k not in found]
    if absent:
        wanted = "; ".join(f"{k}: {' or '.join(ORIGINAL_FILES[k])}" for k in absent)
        raise FileNotFoundError(f"WebShop data folder {str(folder)!r} lacks {wanted}")
    return load_catalog(
        found["products"],
        found["attributes"],
        found.get("human_instructions"),
        human_goals=human_goals,
        name=f"webshop:{folder}",
    )
