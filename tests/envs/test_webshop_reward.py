"""WebShop reward, fuzzy matching and search: checked against hand derivations and the cases of
the original repository's ``tests/web-agent-site/engine/test_goal.py`` (expected values
copied from there, where they do not depend on spaCy's tagger)."""

from __future__ import annotations

import math

import pytest

from smcplan.envs.webshop import synthetic
from smcplan.envs.webshop.reward import (
    get_attribute_reward,
    get_option_reward,
    get_reward,
    get_type_reward,
    normalize_color,
    token_set_ratio,
)
from smcplan.envs.webshop.search import BM25Index, minimal_stem, tokenize


def test_token_set_ratio_matches_hand_derivations():
    # subset tokens -> 100
    assert token_set_ratio("fuzzy was a bear", "fuzzy fuzzy was a bear") == 100
    assert (
        token_set_ratio("new york mets vs atlanta braves", "atlanta braves vs new york mets") == 100
    )
    # "grey" vs "gray": no shared token; LCS = 3 (g, r, y) -> InDel = 4 + 4 - 6 = 2,
    # similarity 100 (1 - 2 / 8) = 75
    assert token_set_ratio("grey", "gray") == 75
    # "pack of 12" vs "pack of 2": I = "of pack" (7 chars), D12 = "12", D21 = "2";
    # d(D12, D21) = 1 over 10 + 9 -> 94.7; I vs I+D12: 1 - 3/17 -> 82.4; I vs I+D21: 87.5
    assert token_set_ratio("pack of 12", "pack of 2") == 95
    # preprocessing: case and punctuation do not matter; empty strings score 0
    assert token_set_ratio("Tea-Tree!", "tea tree") == 100
    assert token_set_ratio("", "tea") == 0


def test_normalize_color_cases_of_the_original():
    cases = [("", ""), ("black forest", "black"), ("violet lavender", "lavender"),
             ("steelivy fuchsia", "fuchsia"), ("123alabaster", "alabaster"),
             ("webshop", "webshop")]
    for raw, expected in cases:
        assert normalize_color(raw) == expected


def test_attribute_reward_cases_of_the_original():
    goal = {"attributes": ["tea tree", "essential oils", "natural ingredients"]}
    exact = {"Attributes": ["tea tree", "essential oil", "natural ingredients"]}
    assert get_attribute_reward(exact, goal) == (1.0, 3)
    partial = {"Attributes": ["essential oil", "natural ingredients"], "Title": "",
               "BulletPoints": [], "Description": ""}
    assert get_attribute_reward(partial, goal) == (2 / 3, 2)
    in_text = {"Attributes": [], "Title": "",
               "BulletPoints": ["This shampoo has essential oils and smells like lemons"],
               "Description": "Best shampoo on the market, made with natural ingredients"}
    assert get_attribute_reward(in_text, goal) == (2 / 3, 2)
    none = {"Attributes": ["tea bag", "earl gray", "lipton"], "Title": "English tea",
            "BulletPoints": ["Soothing aroma"], "Description": "Best tea made by Lipton"}
    assert get_attribute_reward(none, goal) == (0.0, 0)


def test_type_reward_category_rules_of_the_original():
    goal = {"query": "q1", "product_category": "a › b › c", "name": "Name One"}
    bought = dict(goal)
    assert get_type_reward(bought, goal)["r_type"] == 1.0
    for categories, match in [("b › c › a", True), ("d › e › f", False), ("a › d › b", True),
                              ("a › a › b", True), ("a › a › d", False)]:
        bought["product_category"] = categories
        assert get_type_reward(bought, goal)["category_match"] is match


def test_option_reward_counts_selected_options():
    product = {"Title": "", "BulletPoints": [], "Description": ""}
    # size is matched exactly, others fuzzily after colour normalisation
    assert get_option_reward(product, ["grey", "xl"], {"color": "light grey", "size": "xl"}) \
        == (1.0, 2)
    assert get_option_reward(product, ["grey", "xl"], {"color": "blue", "size": "xxl"}) == (0.0, 0)
    assert get_option_reward(product, [], {"color": "blue"}) == (None, 0)
    # an unmatched option still counts when the product text mentions it (the original rule)
    assert get_option_reward({**product, "Description": "comes in blue"}, ["grey"],
                             {"color": "blue"}) == (1.0, 1)


def test_total_reward_cases_of_the_original():
    goal = {
        "query": "Query 1", "product_category": "a › b › c",
        "name": "Mens D.O.N. Issue 2 Gca Basketball Sneakers Shoes Casual - Off White",
        "attributes": ["tea tree", "essential oils", "natural ingredients"],
        "goal_options": {"color": "grey", "size": "XL"}, "price_upper": 40.00,
    }
    bought = {
        "query": "Query 1", "product_category": "a › b › c", "name": goal["name"],
        "Attributes": ["tea tree", "essential oil", "natural ingredients"],
        "Title": "", "BulletPoints": [], "Description": "",
    }
    options = {"color": "grey", "size": "XL"}
    assert get_reward(bought, goal, 35, options)[0] == 1
    bought.update(Attributes=[], BulletPoints="This shampoo has essential oils and smells like "
                  "lemons", Description="Best shampoo on the market, made with natural ingredients")
    assert math.isclose(get_reward(bought, goal, 35, options)[0], 2 / 3, abs_tol=1e-2)
    goal["goal_options"] = {"color": "grey", "size": "XL", "amount": "pack of 12"}
    assert math.isclose(get_reward(bought, goal, 35, options)[0], 0.5714, abs_tol=1e-2)
    goal["name"] = ("Saireed UL Listed 2 Prong Power Cord for JBL Bar 3.1 Bar 2.1 Channel 4K "
                    "Ultra HD Soundbar")
    bought.update(name="BRST AC Power Cord Outlet Socket Cable Plug Lead for Panasonic "
                  "SC-HT830V DVD/VCR Combo Home Theater System", query="Query 2",
                  product_category="a › d › e")
    reward, info = get_reward(bought, goal, 35, options)
    assert info["r_type"] == 0.5 and math.isclose(reward, 0.2857, abs_tol=1e-2)
    # over the price bound: the price point is lost, (1 + 2 + 0) / 7 * 0.5
    assert get_reward(bought, goal, 45, options)[0] == pytest.approx(3 / 7 * 0.5)


def test_minimal_stemmer_and_tokenizer_follow_lucene():
    assert [minimal_stem(w) for w in ["berries", "cats", "glass", "bus", "shoes", "series"]] \
        == ["berry", "cat", "glass", "bus", "shoes", "sery"]
    assert tokenize("The Cats and the HATS of 2 dogs") == ["cat", "hat", "2", "dog"]


def test_bm25_ranks_by_term_rarity_and_ties_by_catalog_order():
    docs = ["red apple", "green apple", "red red car", "blue car", "unrelated"]
    index = BM25Index(docs)
    # "apple" occurs in 2 of 5 docs, "red" in 2: a doc with both ranks first
    assert index.search("red apple")[0] == 0
    # tf = 1 in both: the shorter document (|d| = 2 < 3) scores higher since b > 0
    assert index.search("car") == [3, 2]
    # only matching documents are returned; equal scores keep catalog order
    assert BM25Index(["gray car", "blue car", "boat"]).search("car") == [0, 1]
    assert 4 not in index.search("red apple car")
    # repeated term frequency saturates (k1): "red red car" beats "blue car" for "red car"
    assert index.search("red car")[0] == 2
    # idf(t) = ln(1 + (N - n + 0.5) / (n + 0.5)) with N = 5, n = 2
    assert index.idf("apple") == pytest.approx(math.log(1 + 3.5 / 2.5))


def test_shipped_synthetic_catalog_is_what_the_generator_makes():
    assert synthetic.stale_files() == []
