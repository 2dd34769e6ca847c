"""The learned world model's replies to sibling steps (smcplan.train.imagined_replies): the
replies are the ones the planner imagines at depth 1, the cache resumes after a stop, a cache of
other steps is refused, and the sibling trainer fits and records a head on them."""

from __future__ import annotations

import json

import pytest

from smcplan.errors import InvalidArgumentError
from smcplan.llm.roles.world_outcome import FULL_TARGETS


@pytest.fixture(scope="module")
def data(webshop_labelled, tmp_path_factory):
    """The labelled WebShop shard (``webshop_labelled``) and a world model on the tiny
    random-weight model trained one step on it."""
    from smcplan.llm.finetune import SFTSettings
    from smcplan.llm.testing import tiny_model_path
    from smcplan.train.world_model import train_world_model

    shard, labels = webshop_labelled
    root = tmp_path_factory.mktemp("imagined")
    train_world_model(
        [shard], root / "wm", model=str(tiny_model_path()), depths=(0,), targets=FULL_TARGETS,
        settings=SFTSettings(max_steps=1, batch_size=2, save_steps=1, threads=1, progress=False),
    )  # fmt: skip
    return shard, labels, str(root / "wm" / "adapter")


@pytest.fixture(scope="module")
def steps(data):
    from smcplan.train.data import read_shard
    from smcplan.train.rollout_labels import read_labels
    from smcplan.train.value_siblings import sibling_steps

    shard, labels, _ = data
    return sibling_steps([read_shard(shard)], [read_labels(labels)], informative=False)


def test_each_reply_is_the_one_the_planner_imagines_at_depth_one(data, steps, tmp_path):
    """For every state, plan() with that learned world model at temperature 0, N = |A|, H = 1
    from the state's real page imagines, for each sibling action, the reply the trainer fits
    on: the trainer reads the text the planner will read."""
    from smcplan.planning import plan
    from smcplan.train.imagined_replies import imagine_replies, state_groups

    _, _, adapter = data
    replies = imagine_replies(steps, adapter, tmp_path / "r.jsonl", tokens=8, progress=False)
    assert len(replies) == len(steps)
    for group in state_groups(steps):
        first, actions = steps[group[0]], [steps[i]["action"] for i in group]
        result = plan(
            first["task"], None, actions, observation=first["observation"], key=0,
            world_model="learned", world_model_path=adapter, observation_temperature=0.0,
            observation_tokens=8, proposal="uniform", particles_per_action=1, horizon=1,
            progress="novelty",
        )  # fmt: skip
        imagined = {p.steps[0][0]: p.steps[0][1] for p in result.particles}
        assert {a: imagined[a] for a in actions} == {
            a: replies[i] for a, i in zip(actions, group, strict=True)
        }


def test_the_cache_resumes_after_a_stop_and_refuses_other_steps(data, steps, tmp_path, monkeypatch):
    """A run stopped after two states (a torn third line) resumes: the model is asked only for
    the states after them, and the replies equal an uninterrupted run's.  A cache written for
    other steps is refused, not mixed in."""
    import smcplan.planning.learned as learned
    from smcplan.train.imagined_replies import imagine_replies, state_groups

    _, _, adapter = data
    whole = imagine_replies(steps, adapter, tmp_path / "whole.jsonl", tokens=8, progress=False)
    lines = (tmp_path / "whole.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    groups = state_groups(steps)
    assert len(lines) == len(groups) > 2
    cache = tmp_path / "part.jsonl"
    cache.write_text("".join(lines[:2]) + lines[2][:15], encoding="utf-8")
    asked: list[list[str]] = []
    make = learned.learned_observation_model

    def spy(*args, **kwargs):
        model = make(*args, **kwargs)

        def call(contexts, actions, seed=None):
            asked.append(list(actions))
            return model(contexts, actions, seed=seed)

        return call

    monkeypatch.setattr(learned, "learned_observation_model", spy)
    again = imagine_replies(steps, adapter, cache, tokens=8, resume=True, progress=False)
    assert again == whole
    assert asked == [[steps[i]["action"] for i in g] for g in groups[2:]]
    assert cache.read_text(encoding="utf-8") == "".join(lines)
    other = [dict(s, state="x" + s["state"]) for s in steps]
    with pytest.raises(InvalidArgumentError, match="start without resume"):
        imagine_replies(other, adapter, cache, tokens=8, resume=True, progress=False)


def test_with_replies_renders_the_imagined_reply_in_place_of_the_real_one(steps):
    from smcplan.planning.twist_value import path_text
    from smcplan.train.imagined_replies import with_replies

    replies = [f"Imagined {i}. More text" for i in range(len(steps))]
    out = with_replies(steps, replies, obs_chars=200)
    s, step = out[1], steps[1]
    assert s["context"] == path_text(step["task"], step["observation"],
                                     [(step["action"], "Imagined 1.")], 200)  # fmt: skip
    assert s["context"].endswith(f"> {step['action']}\nImagined 1.")
    assert s["imagined"] == replies[1] and s["value"] == step["value"]
    assert s["prompt"] != step["prompt"]
    with pytest.raises(InvalidArgumentError, match="replies: 1 for"):
        with_replies(steps, replies[:1], obs_chars=200)


def test_the_trainer_fits_on_imagined_replies_and_says_so(data, tmp_path, capsys):
    from smcplan.llm.roles.value_head import load_value_head
    from smcplan.llm.testing import tiny_model_path
    from smcplan.train.cli import main
    from smcplan.train.value_siblings import train_value_siblings

    shard, labels, adapter = data
    m = train_value_siblings(
        [shard], [labels], tmp_path / "v", model=str(tiny_model_path()), heldout=[shard],
        heldout_labels=[labels], world_model=adapter, world_model_tokens=6, cs=[1.0], folds=2,
        threads=1, progress=False,
    )  # fmt: skip
    assert m["replies"] == adapter and load_value_head(m["weights"]).info["replies"] == adapter
    rows = [json.loads(x) for x in (tmp_path / "v" / "examples.jsonl").open(encoding="utf-8")]
    cached = [json.loads(x) for x in (tmp_path / "v" / "replies.jsonl").open(encoding="utf-8")]
    assert [r["imagined"] for r in rows] == [x for c in cached for x in c["replies"]]
    assert (tmp_path / "v" / "heldout_replies.jsonl").is_file()
    capsys.readouterr()
    base = ["value-siblings", "--data", str(shard), "--out", str(tmp_path / "o"),
            "--opt", f"labels={labels}"]  # fmt: skip
    for extra, needle in (
        (["--opt", "world_model_tokens=0"], "--opt world_model_tokens"),
        (["--opt", f"world_model={tmp_path / 'none'}"], "world_model"),
    ):
        assert main([*base, *extra]) == 2, extra
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and needle in err[0], (extra, err)
    assert not (tmp_path / "o").exists()


def test_a_stop_between_states_keeps_whole_lines_and_resume_finishes(data, steps, tmp_path,
                                                                     monkeypatch):  # fmt: skip
    """Ctrl-C is read at the checkpoint before each state (``raise_if_stopped``): a stop there
    leaves the states done as whole lines, and ``resume`` finishes with an uninterrupted run's
    replies."""
    import signal

    import smcplan.interrupts as interrupts
    from smcplan.train.imagined_replies import imagine_replies, state_groups

    _, _, adapter = data
    whole = imagine_replies(steps, adapter, tmp_path / "whole.jsonl", tokens=8, progress=False)
    calls = {"n": 0}

    def stop_at_third():
        calls["n"] += 1
        if calls["n"] == 3:
            raise interrupts.SweepInterrupted(signal.SIGINT)

    monkeypatch.setattr(interrupts, "raise_if_stopped", stop_at_third)
    cache = tmp_path / "stopped.jsonl"
    with pytest.raises(interrupts.SweepInterrupted):
        imagine_replies(steps, adapter, cache, tokens=8, progress=False)
    lines = cache.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 2 and all(json.loads(x)["state"] for x in lines)
    monkeypatch.undo()
    again = imagine_replies(steps, adapter, cache, tokens=8, resume=True, progress=False)
    assert again == whole and len(state_groups(steps)) > 2
