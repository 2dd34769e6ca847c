"""Replies that end at their first line or sentence (``sample(stop_at=...)``, smcplan/llm/stops.py).

Tolerance: a stopped sample's ``logp`` is compared with one unpadded forward pass over prompt +
its tokens: two fp32 passes of other batch shapes, bounded by tests/tolerance.py's
``llama_logprob_tol`` in the model's sizes.
"""

from __future__ import annotations

import random

import pytest
import torch

from smcplan.errors import ArgumentTypeError, InvalidArgumentError
from smcplan.llm import ObservationModel
from smcplan.llm.stops import StopAt, StopRule, check_stop_at, cut
from tests.tolerance import llama_logprob_tol


# ---------------------------------------------------------------------- the rule on text
@pytest.mark.parametrize(
    ("text", "stop", "want"),
    [
        ("You open the door. You see a box.", "sentence", "You open the door."),
        ("You can't move there, the door is closed.", "sentence", "You can't move there, the "
         "door is closed."),
        ('He says "Hi." Then he leaves.', "sentence", 'He says "Hi."'),
        ("It costs 0.25 coins. Buy it?", "sentence", "It costs 0.25 coins."),
        ("Is it open? Yes", "sentence", "Is it open?"),
        ("no end at all", "sentence", "no end at all"),
        ("first line\nsecond line", "sentence", "first line"),
        ("\n  first line\nsecond", "line", "\n  first line"),
        ("One. Two\nThree", "line", "One. Two"),
        ("Reward: +0.25 | Done: no\nYou open the door. It creaks.", StopAt("sentence", 1),
         "Reward: +0.25 | Done: no\nYou open the door."),
        ("Reward: +0 | Done: no\nYou are in the hall.\nMore", StopAt("line", 1),
         "Reward: +0 | Done: no\nYou are in the hall."),
        ("Reward: +0.25 | Done: no", StopAt("sentence", 1), "Reward: +0.25 | Done: no"),
    ],
)  # fmt: skip
def test_cut_ends_at_the_first_line_or_sentence(text, stop, want):
    assert cut(text, check_stop_at(stop)) == want
    assert cut(text, None) == text


def test_the_token_tables_end_where_the_text_rule_ends():
    """Stepping the per-token tables over any split of a text into tokens ends the reply in the
    token holding the character at which :func:`cut` cuts (or never, where it does not cut)."""
    pieces = ["You", " open", " the", " door", ".", " You", "\n", ".\n", '."', " +0", ".25",
              "?", " ", "\n\n", "ok", ")", "e.g", ". "]  # fmt: skip
    vocab = {i: p.encode() for i, p in enumerate(pieces)}
    rng = random.Random(0)
    for stop in (StopAt("sentence"), StopAt("line"), StopAt("sentence", 1), StopAt("line", 2)):
        rule = StopRule(vocab, len(pieces) + 2, stop)  # two special ids without bytes
        for _ in range(300):
            ids = [rng.randrange(len(pieces) + 2) for _ in range(rng.randrange(1, 12))]
            text = "".join(pieces[i] if i < len(pieces) else "" for i in ids)
            state = rule.start(1)
            ended_at = None
            for k, i in enumerate(ids):
                ended, state = rule.step(torch.tensor([i]), state)
                if bool(ended[0]):
                    ended_at = k
                    break
            kept = cut(text, stop)
            if ended_at is None:
                assert kept == text, (ids, stop)
            else:  # the cut lies inside the token the tables ended at
                before = "".join(pieces[i] if i < len(pieces) else "" for i in ids[:ended_at])
                assert len(before) <= len(kept) < len(before) + len(pieces[ids[ended_at]])


def test_bad_stop_values_are_refused_with_the_fix():
    with pytest.raises(InvalidArgumentError, match="'line', 'sentence'"):
        check_stop_at("paragraph")
    with pytest.raises(ArgumentTypeError, match="stop_at must be"):
        check_stop_at(3)
    with pytest.raises(InvalidArgumentError, match="after_lines"):
        StopAt("line", -1)


# ---------------------------------------------------------------------- on the model
def _manual_logp(lm, prompt, ids) -> float:
    p_ids = lm.encode_prompt(prompt)
    x = torch.tensor([p_ids + list(ids)])
    with lm._threading(), torch.inference_mode():
        logp = torch.log_softmax(lm.model(input_ids=x).logits.float(), -1)[0]
    pos = torch.arange(len(p_ids) - 1, len(p_ids) - 1 + len(ids))
    return float(logp[pos, torch.tensor(ids)].sum())


@pytest.mark.parametrize("unit", ["sentence", "line"])
def test_a_stopped_reply_is_the_unstopped_one_cut_with_its_own_log_probability(tiny, unit):
    """Same seed: each reply is a prefix of the reply drawn without the stop (the same draws,
    stopped sooner), its text is that prefix's text cut at the end, and ``logp`` is the
    log-probability of exactly its tokens (the one confirming the end included)."""
    prompt, n, limit = "look", 16, 40
    (free,) = tiny.sample([prompt], n=n, seed=1, max_new_tokens=limit)
    (stopped,) = tiny.sample([prompt], n=n, seed=1, max_new_tokens=limit, stop_at=unit)
    by_rule = 0
    for f, s in zip(free, stopped, strict=True):
        assert f.token_ids[: len(s.token_ids)] == s.token_ids
        if s.token_ids == f.token_ids:
            assert s.text == cut(f.text, check_stop_at(unit))
            continue
        by_rule += 1
        assert s.finished and s.num_tokens == len(s.token_ids) < f.num_tokens
        assert s.token_ids[-1] not in tiny.stop_token_ids
        assert s.text == cut(tiny.tokenizer.decode(s.token_ids), check_stop_at(unit))
        assert f.text.startswith(s.text) and len(s.text) < len(f.text)
        ctx = len(tiny.encode_prompt(prompt)) + len(s.token_ids) + 1
        tol = llama_logprob_tol(tiny.model, len(s.token_ids), ctx)
        assert s.logp == pytest.approx(_manual_logp(tiny, prompt, s.token_ids), abs=tol)
        assert s.logq == pytest.approx(s.logp, abs=tol)  # T = 1, no mask: q is the model
    assert by_rule >= 1  # seed 1 ends some replies by the rule (4 sentences, 2 lines)


def test_observation_model_stop_at_and_its_errors(tiny):
    om = ObservationModel(tiny, temperature=1.0, max_new_tokens=40, stop_at="sentence")
    free = ObservationModel(tiny, temperature=1.0, max_new_tokens=40)
    ctx, acts = ["You are in the kitchen."] * 8, ["look"] * 8
    got, want = om(ctx, acts, seed=1), free(ctx, acts, seed=1)
    assert all(w.token_ids[: len(g.token_ids)] == g.token_ids for g, w in zip(got, want))
    assert sum(g.num_tokens for g in got) <= sum(w.num_tokens for w in want)
    with pytest.raises(InvalidArgumentError, match="ends free text only"):
        tiny.sample(["look"], ["yes", "no"], stop_at="line")

    class NoStop:  # a backend whose sample has no stop_at (e.g. a remote engine)
        def sample(self, prompts, output_type=None, n=1): ...

        def logprob(self, prompts, continuations): ...

    with pytest.raises(InvalidArgumentError, match="cannot stop at a line or sentence"):
        ObservationModel(NoStop(), stop_at="line")
