"""Generate the SYNTHETIC WebShop catalog shipped in ``smcplan/envs/webshop/data/``.

The real WebShop data (1.18 M scraped products, 12 k crowd-written instructions) cannot be
fetched here, so tests and default runs use a small invented catalog written in the original
file formats (``catalog.py`` describes them): 10 product types in WebShop's five categories
(beauty, fashion, grocery, electronics, home), 10 products each, and one human-style goal per
product (100 goals).  Everything is drawn from ``random.Random(SEED)`` over hand-written tables
(the product types in ``data/synthetic_types.json``, the brands and phrasings below), so the
files are a pure function of this module and that table.

Each product has 3 of its type's 7 attributes (stated in its title, description and features)
and 2-4 values of each of its type's option groups (never mentioned in its text, so the
option reward depends on the options clicked, as intended).  Each goal asks for 2 of the
target's attributes and one value of each option group.  ``build()`` checks what the tests
rely on: no product text mentions an attribute it lacks or any option value, and every goal's
gold path (search the instruction, page to the target, click it and its options, buy) earns
reward 1.

Regenerate or check the shipped files with ``python scripts/webshop_catalog.py [--out DIR]
[--check]`` (:func:`stale_files` is the check).

Pure standard library; must not import other smcplan layers except ``smcplan.envs.webshop``.
"""

from __future__ import annotations

import json
import random
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from smcplan.jsonfile import dumps

__all__ = ["SEED", "TYPES", "build", "write", "stale_files"]

SEED = 20240607
PRODUCTS_PER_TYPE = 10
ATTRS_PER_PRODUCT = 3
ATTRS_PER_GOAL = 2


@dataclass(frozen=True)
class ProductType:
    key: str
    category: str
    query: str
    product_category: str
    noun: str
    attributes: dict[str, str]  # attribute phrase -> a feature sentence stating it
    options: dict[str, tuple[str, ...]]
    price: tuple[float, float]
    generic: tuple[str, ...]  # features every product of the type may list (no attributes)


def _load_types() -> tuple[ProductType, ...]:
    """The product types of ``data/synthetic_types.json`` (lists read back as tuples)."""
    from smcplan.envs.webshop.catalog import DATA_DIR

    rows = json.loads((DATA_DIR / "synthetic_types.json").read_text(encoding="utf-8"))["types"]
    return tuple(
        ProductType(
            **{
                **row,
                "options": {k: tuple(v) for k, v in row["options"].items()},
                "price": tuple(row["price"]),
                "generic": tuple(row["generic"]),
            }
        )
        for row in rows
    )


#: The ten product types (input tables, kept as data in ``data/synthetic_types.json``).
TYPES: tuple[ProductType, ...] = _load_types()

#: Invented brand names (checked against attributes and option values by ``build``).
BRANDS = (
    "Alderbrook", "Bramwell", "Cobaltine", "Dunmore", "Everfield", "Fennick", "Glenhollow",
    "Harrowgate", "Islay & Co", "Juniper Row", "Kestrel", "Larkspur Lane", "Marlowe",
    "Northvale", "Oakhurst", "Pemberly", "Quillon", "Ravensworth", "Sablewood", "Thornbury",
    "Umberfield", "Vantorra", "Westerly", "Yarrowby", "Zephyrine", "Ashcombe", "Brightwater",
    "Calloway", "Driftmoor", "Elmstead",
)
TAGLINES = ("Everyday Essential", "Value Pack Edition", "Classic Series", "Signature Line",
            "Studio Collection", "Home Favorite")
LEADS = ("i am looking for", "i need", "find me", "i want to buy", "i would like",
         "can you find")


def _asin(type_index: int, product_index: int) -> str:
    # "SYN" marks these as synthetic; 10 characters like a real ASIN.
    return f"B0SYN{type_index:02d}{product_index:03d}"


def _article(word: str) -> str:
    return "an" if word[0] in "aeiou" else "a"


def _make_product(rng: random.Random, t_index: int, p_index: int, t: ProductType,
                  brand: str) -> tuple[dict[str, Any], list[str], dict[str, list[str]]]:
    attrs = rng.sample(sorted(t.attributes), ATTRS_PER_PRODUCT)
    options = {
        name: sorted(rng.sample(values, rng.randint(2, min(4, len(values)))),
                     key=values.index)
        for name, values in t.options.items()
    }
    title = f"{brand} {attrs[0].title()} {t.noun}, {rng.choice(TAGLINES)}"
    description = (
        f"The {brand} {t.noun.lower()} is {attrs[0]}, {attrs[1]} and {attrs[2]}. "
        f"{t.generic[0]}"
    )
    bullets = [t.attributes[a] for a in attrs] + list(t.generic)
    lo, hi = t.price
    price = round(rng.uniform(lo, hi), 2)
    if rng.random() < 0.1:
        high = round(price * rng.uniform(1.1, 1.4), 2)
        pricing = f"${price:.2f} - ${high:.2f}"
    else:
        pricing = f"${price:.2f}"
    asin = _asin(t_index, p_index)
    product = {
        "asin": asin,
        "name": title,
        "full_description": description,
        "small_description": bullets,
        "pricing": pricing,
        "images": [f"synthetic://{asin}.jpg"],
        "query": t.query,
        "category": t.category,
        "product_category": t.product_category,
        "customization_options": {
            name: [{"value": v, "image": None} for v in values]
            for name, values in options.items()
        },
        "brand": brand,
        "product_information": {"note": "synthetic product, not WebShop data"},
    }
    return product, attrs, options


def _make_goal(rng: random.Random, t: ProductType, attrs: list[str],
               options: dict[str, list[str]]) -> dict[str, Any]:
    wanted = sorted(rng.sample(attrs, ATTRS_PER_GOAL), key=attrs.index)
    chosen = {name: rng.choice(values) for name, values in options.items()}
    noun = t.noun.lower()
    lead = rng.choice(LEADS)
    phrase = (
        f"{_article(wanted[0])} {wanted[0]} and {wanted[1]} {noun}"
        if rng.random() < 0.5
        else f"{_article(noun)} {noun} that is {wanted[0]} and {wanted[1]}"
    )
    option_text = ", and ".join(f"{name}: {value}" for name, value in chosen.items())
    instruction = f"{lead} {phrase} with {option_text}"
    return {
        "instruction": instruction,
        "instruction_attributes": wanted,
        "instruction_options": list(chosen.values()),
    }


def _reviews(rng: random.Random, asin: str, noun: str) -> dict[str, Any]:
    stars = [rng.choice((3, 4, 4, 5, 5)) for _ in range(2)]
    texts = ("Does what it says.", "Good value for the price.", "Would buy again.",
             "Arrived quickly and works well.")
    return {
        "asin": asin,
        "average_rating": round(sum(stars) / len(stars), 1),
        "reviews": [
            {"title": f"Nice {noun.lower()}", "stars": float(s), "review": rng.choice(texts)}
            for s in stars
        ],
    }


def build() -> dict[str, Any]:
    """The four files' contents (products, attributes, human instructions, reviews), checked."""
    rng = random.Random(SEED)
    products, attributes, human, reviews = [], {}, {}, []
    brands = list(BRANDS)
    for t_index, t in enumerate(TYPES):
        type_brands = rng.sample(brands, PRODUCTS_PER_TYPE)
        for p_index in range(PRODUCTS_PER_TYPE):
            product, attrs, options = _make_product(rng, t_index, p_index, t,
                                                    type_brands[p_index])
            goal = _make_goal(rng, t, attrs, options)
            asin = product["asin"]
            products.append(product)
            attributes[asin] = {
                "attributes": attrs,
                "instruction": goal["instruction"],
                "instruction_attributes": goal["instruction_attributes"],
            }
            human[asin] = [{**goal, "asin": asin, "assignment_id": f"synthetic-{asin}"}]
            reviews.append(_reviews(rng, asin, t.noun))
    rng.shuffle(products)  # items_shuffle: the original file is shuffled too
    files = {
        "products": products,
        "attributes": attributes,
        "human_instructions": human,
        "reviews": reviews,
    }
    _check_texts(files)
    return files


def _check_texts(files: dict[str, Any]) -> None:
    by_query = {t.query: t for t in TYPES}
    for p in files["products"]:
        t = by_query[p["query"]]
        text = " ".join([p["name"], p["full_description"], *p["small_description"]]).lower()
        own = set(files["attributes"][p["asin"]]["attributes"])
        for attr in t.attributes:
            if attr not in own and attr in text:
                raise AssertionError(f"{p['asin']}: text mentions attribute {attr!r} it lacks")
        for values in t.options.values():
            for value in values:
                if value in text:
                    raise AssertionError(f"{p['asin']}: text mentions option value {value!r}")


def _dump(obj: Any) -> str:
    return dumps(obj, indent=1, ensure_ascii=False, sort_keys=False) + "\n"


def write(out: Path) -> dict[str, Path]:
    """Write the files under ``out`` and check every goal's gold path earns reward 1."""
    from smcplan.envs.webshop.catalog import SYNTHETIC_FILES, SYNTHETIC_SPLITS, load_catalog
    from smcplan.envs.webshop.env import WebShopEnv

    out.mkdir(parents=True, exist_ok=True)
    files = build()
    paths = {}
    for key, name in SYNTHETIC_FILES.items():
        paths[key] = out / name
        paths[key].write_text(_dump(files[key]), encoding="utf-8")
    catalog = load_catalog(paths["products"], paths["attributes"], paths["human_instructions"],
                           paths["reviews"], name="synthetic", synthetic=True,
                           splits=SYNTHETIC_SPLITS)
    env = WebShopEnv(catalog)
    for index in range(len(catalog.goals)):
        env.reset(index)
        reward = env.check_gold()
        if reward != 1.0:
            raise AssertionError(f"goal {index}: gold path earns {reward}, not 1.0")
    return paths


def stale_files(folder: Path | None = None) -> list[str]:
    """The catalog files in ``folder`` (default: the shipped ``data/``) that differ from what
    :func:`write` generates now, or are missing; ``[]`` when the folder is up to date."""
    from smcplan.envs.webshop.catalog import DATA_DIR, SYNTHETIC_FILES

    folder = DATA_DIR if folder is None else Path(folder)
    with tempfile.TemporaryDirectory() as tmp:
        fresh = write(Path(tmp))
        return [
            name
            for key, name in SYNTHETIC_FILES.items()
            if not (folder / name).exists()
            or (folder / name).read_bytes() != fresh[key].read_bytes()
        ]
