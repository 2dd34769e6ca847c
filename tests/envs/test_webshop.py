"""WebShop protocol adapter on the shipped synthetic catalog: actions, pages, reward, gold."""

from __future__ import annotations

import json
import random

import pytest

from smcplan.envs import TextEnv, make
from smcplan.envs.webshop import WebShopEnv, load_catalog, parse_action, synthetic_catalog
from smcplan.envs.webshop.catalog import SYNTHETIC_SPLITS


@pytest.fixture
def shop():
    return make("webshop")


def test_every_synthetic_goal_is_won_by_its_gold_path():
    env = WebShopEnv()
    for index in range(len(env.catalog.goals)):
        env.reset(index)
        assert env.check_gold() == 1.0, index


def test_buying_the_target_with_the_right_options_scores_one(shop):
    assert isinstance(shop, TextEnv)
    observation, info = shop.reset(0)
    assert "Instruction:" in observation and shop.task in observation
    assert info["admissible_actions"] == [f"search[{shop.task.split(', and price')[0]}]"]
    total, result = 0.0, None
    for action in shop.gold_actions():
        result = shop.step(action)
        total += result.reward
        assert not result.info["invalid"]
    assert result.done and result.info["won"] and result.info["score"] == 1.0
    assert total == pytest.approx(1.0)
    assert result.info["reward_info"]["r_type"] == 1.0


def _goal_with_two_attributes_and_two_options(env):
    for index, goal in enumerate(env.catalog.goals):
        if len(goal["attributes"]) == 2 and len(goal["goal_options"]) == 2:
            return index
    raise AssertionError("no such goal")


def test_a_wrong_option_earns_the_original_partial_reward(shop):
    # R = r_type (|A matched| + |O matched| + 1[price ok]) / (|A| + |O| + 1).  The target has
    # both goal attributes, its price is under the bound and r_type = 1; one of the two goal
    # options is swapped for another value of its group (never mentioned in the product text,
    # by construction of the synthetic catalog), so R = (2 + 1 + 1) / (2 + 2 + 1) = 0.8.
    index = _goal_with_two_attributes_and_two_options(shop)
    shop.reset(index)
    gold = shop.gold_actions()
    product = shop.catalog.by_asin[shop.goal["asin"]]
    first_group, values = next(iter(product["options"].items()))
    wanted = next(v for v in values if f"click[{v}]" in gold)
    other = next(v for v in values if v != wanted)
    wrong = [a.replace(f"click[{wanted}]", f"click[{other}]") for a in gold]
    for action in wrong:
        result = shop.step(action)
    assert result.done and not result.info["won"]
    assert result.info["score"] == pytest.approx(0.8)
    assert result.info["reward_info"]["r_option"] == pytest.approx(0.5)


def test_buying_without_choosing_options_loses_the_option_share(shop):
    # No option clicked: R = (2 + 0 + 1) / 5 = 0.6.
    shop.reset(_goal_with_two_attributes_and_two_options(shop))
    gold = shop.gold_actions()
    for action in [a for a in gold if a.startswith(("search", "click[b0syn", "click[buy"))]:
        result = shop.step(action)
    assert result.info["score"] == pytest.approx(0.6)


def test_buying_a_product_of_another_type_scores_zero(shop):
    shop.reset(0)
    target = shop.catalog.by_asin[shop.goal["asin"]]
    shop.step("search[wireless earbuds]")
    other = next(a for a in shop.admissible_actions()
                 if a.startswith("click[b0syn")
                 and shop.catalog.by_asin[a[6:-1].upper()]["query"] != target["query"])
    shop.step(other)
    result = shop.step("click[buy now]")
    assert result.done and result.info["score"] == 0.0
    assert result.info["reward_info"]["r_type"] == 0.0


def test_invalid_actions_change_nothing_and_are_reported(shop):
    observation, _ = shop.reset(1)
    for action in ["click[buy now]", "jump", "search[]", "buy[everything]"]:
        result = shop.step(action)
        assert result.info["invalid"] and result.observation == observation
    shop.step("search[color size]")
    result = shop.step("search[tea]")  # no search bar on a results page
    assert result.info["invalid"] and result.info["page"] == "results"
    assert shop.step("click[Next >]").info["invalid"] is False  # clicks are case-insensitive
    assert shop.step("click[b0syn99999]").info["invalid"]


def test_navigation_between_pages_keeps_the_session(shop):
    shop.reset(2)
    shop.step("search[color size]")
    assert "Page 2 (Total results: 50)" in shop.step("click[next >]").observation
    assert "Page 1 " in shop.step("click[< prev]").observation
    asin = next(a for a in shop.admissible_actions() if a.startswith("click[b0syn"))
    item = shop.step(asin)
    assert "[Buy Now]" in item.observation and item.info["page"] == "item"
    option = next(a for a in shop.admissible_actions()
                  if a not in ("click[back to search]", "click[< prev]", "click[description]",
                               "click[features]", "click[reviews]", "click[buy now]"))
    chosen = shop.step(option)
    assert "You have clicked" in chosen.observation and chosen.info["options"]
    features = shop.step("click[features]")
    assert features.info["page"] == "sub" and "[< Prev]" in features.observation
    assert shop.step("click[reviews]").info["invalid"]  # not on a sub-page
    back = shop.step("click[< prev]")
    assert back.info["page"] == "item" and back.info["options"] == chosen.info["options"]
    home = shop.step("click[back to search]")
    assert home.info["page"] == "search" and home.info["options"] == {}


def test_reset_is_deterministic_and_clone_is_independent(shop):
    first = shop.reset(3)
    gold = shop.gold_actions()
    shop.step(gold[0])
    twin = shop.clone()
    twin.step("click[back to search]")
    assert shop.step(gold[1]).info["page"] == "item"
    assert twin.admissible_actions()[0].startswith("search[")
    assert shop.reset(3) == first


def test_step_limit_is_fifteen_by_default(shop):
    shop.reset(4)
    results = [shop.step("click[nothing]") for _ in range(15)]
    assert results[-1].done and results[-1].info["truncated"]
    assert not any(r.done for r in results[:-1])


def test_goal_indices_and_splits_are_checked():
    with pytest.raises(ValueError, match="valid: 0-99 \\(test 0-49, dev 50-74, train 75-99\\)"):
        WebShopEnv().reset(100)
    with pytest.raises(ValueError, match="not in split 'dev'"):
        WebShopEnv(split="dev").reset(0)
    assert WebShopEnv(split="dev").reset()[1]["steps"] == 0
    assert synthetic_catalog().splits == SYNTHETIC_SPLITS
    with pytest.raises(ValueError, match="known: test, dev, train"):
        WebShopEnv(split="valid")


def test_parse_action_follows_the_original():
    assert parse_action("click[Buy Now]") == ("click", "Buy Now")
    assert parse_action("search[red shoes [size 9]]") == ("search[red shoes", "size 9]")
    assert parse_action("look") == ("look", None)


def test_loader_reads_the_original_file_formats(tmp_path):
    products = [
        {"asin": "B000000001", "name": "Acme Kettle", "full_description": "A kettle.",
         "small_description": "Boils water fast", "pricing": "$12.50 - $20.00",
         "images": ["img1"], "query": " Kettle ", "category": "home",
         "product_category": "Home › Kitchen › Kettles",
         "customization_options": {"Color": [{"value": "Black/Red", "image": "i"}],
                                   "Size": None}},
        {"asin": "B000000001", "name": "duplicate", "full_description": "", "pricing": "",
         "small_description": [], "images": [], "query": "x", "category": "x",
         "product_category": "x", "customization_options": {}},
        {"asin": "nan", "name": "bad asin", "full_description": "", "pricing": "",
         "small_description": [], "images": [], "query": "x", "category": "x",
         "product_category": "x", "customization_options": {}},
        {"asin": "B000000002", "name": "Plain Mug", "full_description": "A mug.",
         "small_description": ["Holds tea"], "pricing": "", "images": ["m"], "query": "mug",
         "category": "home", "product_category": "Home › Kitchen › Mugs",
         "customization_options": None},
    ]
    attributes = {"B000000001": {"attributes": ["fast boil"], "instruction": "a kettle",
                                 "instruction_attributes": ["fast boil"]}}
    human = {"B000000001": [{"instruction": "i want a fast boil kettle.",
                             "instruction_attributes": ["fast boil"],
                             "instruction_options": ["black | red"]},
                            {"instruction": "skipped: no attributes",
                             "instruction_attributes": [], "instruction_options": []}]}
    paths = []
    for name, obj in [("p.json", products), ("a.json", attributes), ("h.json", human)]:
        (tmp_path / name).write_text(json.dumps(obj))
        paths.append(tmp_path / name)
    catalog = load_catalog(*paths)
    kettle, mug = catalog.products
    assert [p["asin"] for p in catalog.products] == ["B000000001", "B000000002"]
    assert kettle["Title"] == "Acme Kettle" and kettle["BulletPoints"] == ["Boils water fast"]
    assert kettle["pricing"] == [12.5, 20.0] and kettle["Price"] == "$12.5 to $20.0"
    assert 12.5 <= catalog.prices["B000000001"] <= 20.0
    assert kettle["options"] == {"color": ["black | red"]} and kettle["query"] == "kettle"
    assert mug["Attributes"] == ["DUMMY_ATTR"] and mug["Price"] == "$100.0"
    assert len(catalog.goals) == 1
    goal = catalog.goals[0]
    assert goal["instruction_text"].startswith("i want a fast boil kettle, and price lower than")
    assert 20.0 < goal["price_upper"] <= 60.0
    env = WebShopEnv(catalog)
    env.reset(0)
    assert env.check_gold() == 1.0


def test_goal_order_is_the_originals_seeded_shuffle():
    # The original runs random.seed(233); random.shuffle(goals) on the global generator.
    catalog = synthetic_catalog()
    unshuffled = sorted(catalog.goals, key=lambda g: g["asin"])  # one goal per product
    by_original_order = {p["asin"]: i for i, p in enumerate(catalog.products)}
    unshuffled.sort(key=lambda g: by_original_order[g["asin"]])
    random.seed(233)
    random.shuffle(unshuffled)
    assert [g["asin"] for g in unshuffled] == [g["asin"] for g in catalog.goals]
