"""Context building: the history budget, newest-first truncation, and the two textual shapes."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from smcplan.agents.context import Context, History, TokenCounter, clip_text, history_budget


def words(text: str) -> int:
    return len(text.split())


class _FakeLM:
    class model:  # noqa: N801 - mimics lm.model.config
        class config:  # noqa: N801
            max_position_embeddings = 1000


def test_history_budget_is_the_smaller_of_the_request_and_the_window_minus_the_reserve():
    lm = _FakeLM()
    assert history_budget(lm, 512, 300) == 512
    assert history_budget(lm, 900, 300) == 700  # W - reserve = 1000 - 300
    assert history_budget(lm, 900, 2000) == 0


def _history(n: int) -> History:
    h = History(max_observation_chars=1000)
    h.reset("You are in the kitchen.")
    for i in range(n):
        h.add(f"act {i}", f"observation number {i} here")
    return h


@settings(max_examples=60, deadline=None)
@given(n=st.integers(0, 12), budget=st.integers(0, 80))
def test_rendered_history_fits_the_budget_and_keeps_a_suffix_of_the_turns(n, budget):
    h = _history(n)
    text = h.render(budget, words)
    assert words(text) <= budget
    shown = [line[2:] for line in text.splitlines() if line.startswith("> ")]
    # the shown actions are the newest ones, in order (a suffix of the trajectory)
    assert shown == [f"act {i}" for i in range(n - len(shown), n)]
    if shown and len(shown) < n:
        assert f"({n - len(shown)} earlier steps not shown)" in text
    if len(shown) == n and "(start)" in text:
        assert text.startswith("(start)\nYou are in the kitchen.")


def test_a_larger_budget_never_shows_fewer_turns():
    h = _history(10)
    counts = [
        h.render(b, words).count("\n> ") + h.render(b, words).startswith("> ")
        for b in range(0, 90, 5)
    ]
    assert counts == sorted(counts)


def test_everything_fits_with_a_generous_budget():
    text = _history(2).render(10_000, words)
    assert (
        text
        == "(start)\nYou are in the kitchen.\n> act 0\nobservation number 0 here\n> act 1\n"
        "observation number 1 here"
    )


def test_long_observations_are_clipped_and_whitespace_collapsed():
    assert clip_text("a  b\n c", 100) == "a b c"
    out = clip_text("x" * 50, 10)
    assert len(out) == 10 and out.endswith(" ...")


def test_token_counter_uses_the_model_tokenizer_and_memoises(tiny_lm):
    count = TokenCounter(tiny_lm)
    text = "You are in the kitchen. There is a coin."
    assert count(text) == len(tiny_lm.encode_continuation(text)) == count(text)


def test_context_shapes_put_facts_in_the_situation_and_not_in_the_proposal_text():
    ctx = Context(
        "find the coin", "You see a table.", [("coin", "in", "box")], history="> look\nnothing"
    )
    prop = ctx.for_proposal()
    assert "coin in box" not in prop and prop.endswith("Current observation:\nYou see a table.")
    assert "What happened so far:\n> look" in prop
    sit = ctx.situation()
    assert "Known facts:\n- coin in box" in sit and sit.endswith("You see a table.")
    noted = ctx.with_notes(['"look" was rejected: useless'])
    assert ctx.notes == [] and "Notes:\n- \"look\" was rejected: useless" in noted.for_proposal()
    assert Context("t", "obs").for_proposal() == "obs"


def test_stable_parts_come_first_and_feedback_last():
    ctx = Context(
        "find the coin", "You see a table.", [("coin", "in", "box")], history="> look\nnothing",
        belief="the coin is near", notes=["Reflection on trial 1: open boxes"],
    )
    step = ctx.with_feedback(['"look" was rejected: useless'])
    assert ctx.feedback == [] and step.notes == ctx.notes
    sit = step.situation()
    order = [sit.index(s) for s in ("Notes:", "Known facts:", "What happened so far:",
                                    "What you believe:", "Current observation:", "Feedback:")]
    assert order == sorted(order)
    # the feedback of this step extends the step's prompt: everything before it is unchanged
    assert step.for_proposal().startswith(ctx.for_proposal())
    assert sit.startswith(ctx.situation())


@settings(max_examples=40, deadline=None)
@given(n=st.integers(0, 14), budget=st.integers(10, 60), block=st.integers(1, 4))
def test_block_truncation_cuts_at_multiples_of_the_block_and_fits(n, budget, block):
    h = History(max_observation_chars=1000, block=block)
    h.reset("You are in the kitchen.")
    for i in range(n):
        h.add(f"act {i}", f"observation number {i} here")
    text = h.render(budget, words)
    assert words(text) <= budget
    shown = [int(line.split()[-1]) for line in text.splitlines() if line.startswith("> ")]
    assert shown == list(range(n - len(shown), n))
    if shown and len(shown) < n:
        assert shown[0] % block == 0


def test_block_truncation_keeps_the_prefix_for_several_steps():
    """With a full budget (five turns fit) and block 3 the first turn shown changes every third
    step, and the history only grows at its end in between; with block 1 it shifts every step."""

    def starts(block: int) -> list[str]:
        h = History(max_observation_chars=1000, block=block)
        h.reset("You are in the kitchen.")
        out = []
        for i in range(12):
            h.add(f"act {i}", f"observation number {i} here")
            out.append(h.render(40, words).split("\n> ")[1])  # the first turn shown
        return out

    def changes(seq: list[str]) -> int:
        return sum(a != b for a, b in zip(seq, seq[1:]))

    assert changes(starts(1)[6:]) == 5  # five turns fit: a new first turn every step
    blocked = starts(3)[6:]
    assert changes(blocked) == 2  # first turns 3, 3, 6, 6, 6, 9
    assert [int(s.split("\n")[0].split()[-1]) for s in blocked] == [3, 3, 6, 6, 6, 9]


def test_history_block_must_be_positive():
    import pytest

    with pytest.raises(ValueError, match="block"):
        History(block=0)


@settings(max_examples=60, deadline=None)
@given(
    budget=st.integers(5, 120),
    obs_words=st.integers(0, 200),
    notes=st.integers(0, 5),
    facts=st.integers(0, 8),
    history_words=st.integers(0, 100),
)
def test_fit_cuts_the_view_to_the_budget_and_reports_each_cut(
    budget, obs_words, notes, facts, history_words
):
    ctx = Context(
        "take the key",
        " ".join(f"o{i}" for i in range(obs_words)),
        triplets=[(f"s{i}", "in", "room") for i in range(facts)],
        history=" ".join(f"h{i}" for i in range(history_words)),
        notes=[f"note {i} says something" for i in range(notes)],
    )
    original = Context(
        ctx.task, ctx.observation, list(ctx.triplets), ctx.history, notes=list(ctx.notes)
    )
    cuts = ctx.fit(budget, words)
    assert words(ctx.situation()) <= budget
    assert set(cuts) <= {"history", "notes", "triplets", "belief", "observation", "task"}
    for was, now in cuts.values():
        assert now < was
    assert original.history.endswith(ctx.history)  # the newest part of the history is kept
    assert original.observation.startswith(ctx.observation)  # the observation keeps its start
    assert ctx.notes == original.notes[len(original.notes) - len(ctx.notes) :]  # newest notes kept
    assert ctx.triplets == original.triplets[: len(ctx.triplets)]  # most relevant facts kept
    if "observation" in cuts:  # history, notes and facts went first
        assert ctx.history == "" and ctx.notes == [] and ctx.triplets == []


def test_a_context_that_fits_is_not_touched():
    ctx = Context("task", "obs", history="a b c")
    assert ctx.fit(100, words) == {} and ctx.history == "a b c"


def test_react_never_sends_a_prompt_past_the_window_and_records_the_cut(tiny_lm):
    from smcplan.agents import make
    from smcplan.llm.inputs import window_of

    window = window_of(tiny_lm.model)
    agent = make("react", lm=tiny_lm, seed=0, think=False, reserve_tokens=200)
    huge = "a huge observation " * window
    agent.reset("take the key", huge, ["look", "take key"])
    step = agent.act(huge, ["look", "take key"], {})
    assert step.action in ("look", "take key")
    cut = step.meta["context_truncated"]
    assert cut["observation"][0] > window - 200 >= cut["observation"][1]
