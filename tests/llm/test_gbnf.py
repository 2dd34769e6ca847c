"""Regex -> GBNF: the translation of each construct, and (with llama-cpp-python) that llama.cpp's
own grammar parser accepts the grammars of every role's output type."""

from __future__ import annotations

import importlib.util

import pytest

from smcplan.llm.gbnf import regex_to_gbnf


@pytest.mark.parametrize(
    ("regex", "gbnf"),
    [
        ("abc", 'root ::= "abc"\n'),
        ("(yes|no)", 'root ::= ( ( "yes" | "no" ) )\n'),
        ("[^\\x00-\\x1F\\x7F]+", "root ::= ( [^\\x00-\\x1F\\x7F] )+\n"),
        ("a{2,5}b?", 'root ::= ( "a" ){2,5} ( "b" )?\n'),
        ('"[a-z ]*"', 'root ::= "\\x22" ( [a-z\\x20] )* "\\x22"\n'),
        ("\\d{3,}", "root ::= ( [0-9] ){3,}\n"),
        (".", "root ::= [^\\x0A]\n"),
        ("^x$", 'root ::= "x"\n'),
    ],
)
def test_each_regex_construct_maps_to_its_gbnf_form(regex, gbnf):
    assert regex_to_gbnf(regex) == gbnf


@pytest.mark.parametrize("regex", ["(a)\\1", "a(?=b)", "[\\D]"])
def test_constructs_without_a_gbnf_form_raise_naming_the_regex(regex):
    with pytest.raises(ValueError, match="regex"):
        regex_to_gbnf(regex)


@pytest.mark.skipif(
    importlib.util.find_spec("llama_cpp") is None,
    reason="llama-cpp-python is not installed (pip install 'smcplan[scale]')",
)
def test_llama_cpp_parses_the_grammar_of_every_role_output_type():
    from llama_cpp import LlamaGrammar

    from smcplan.llm.constrained import output_spec, spec_regex
    from smcplan.llm.templates import load_role

    regexes = []
    for role in ("triplets", "critic", "reflection", "rlaw_actor", "progress", "proposal"):
        assets = load_role(role)
        if assets.schema:
            regexes.append(spec_regex(output_spec(assets.schema)))
        if "thought_regex" in assets.settings:
            regexes.append(assets.settings["thought_regex"])
    regexes.append(spec_regex(output_spec(["take coin", "go north", 'say "hi"'])))
    assert len(regexes) >= 5
    for regex in regexes:
        LlamaGrammar.from_string(regex_to_gbnf(regex), verbose=False)
