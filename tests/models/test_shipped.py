"""Every shipped artifact of ``models/trained/`` loads and reproduces its manifest's held-out
metric on the small fixed sample it ships (``check.jsonl``), within a tolerance derived from that
sample's size; and its manifest agrees with the recipe of ``make models``.

Tolerances:

* world model (event match, a proportion): the sample's count k of n must lie in the central
  99.9 % interval of Binomial(n, p), p the manifest's held-out rate over its larger draw.  The
  untrained SmolLM2 (p = 0.117 on the same kind of draw, docs/train.md) falls outside it.
* critic head (AUC): the sample's AUC must lie within 3.29 standard errors (two-sided 99.9 %) of
  the manifest's held-out AUC A, with the Hanley-McNeil standard error for the sample's n+
  positives and n- negatives:
  SE^2 = (A(1-A) + (n+ - 1)(Q1 - A^2) + (n- - 1)(Q2 - A^2)) / (n+ n-), Q1 = A/(2-A),
  Q2 = 2A^2/(1+A) (Hanley & McNeil 1982).
"""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from pathlib import Path

import pytest

from smcplan.llm.artifacts import artifact_names, load_manifest, resolve_artifact

ROOT = Path(__file__).resolve().parents[2]
Z_999 = 3.2905  # two-sided 99.9 % normal quantile


def _recipes():
    spec = importlib.util.spec_from_file_location("build_models", ROOT / "scripts/build_models.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def _check_rows(name: str) -> list[dict]:
    path = resolve_artifact(name) / "check.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def test_every_recipe_of_make_models_is_shipped_with_a_manifest_that_records_its_commands():
    recipes = _recipes()
    assert sorted(recipes.RECIPES) == artifact_names()
    for name in artifact_names():
        manifest = load_manifest(name)  # checks fields and file sizes
        assert manifest["commands"] == recipes.commands(name)
        assert manifest["base_model"]["name"] == "smollm2-135m"
        assert len(manifest["base_model"]["sha256"]) == 64
        assert all(len(d["sha256"]) == 64 for d in manifest["data"])
        assert manifest["metrics"]["heldout"]["n"] > manifest["metrics"]["check"]["n"] > 0


def test_a_shipped_artifact_is_found_by_name_and_a_folder_is_taken_as_it_is(tmp_path):
    from smcplan.errors import SmcplanError

    for name in artifact_names():
        assert resolve_artifact(name).name == name
    assert resolve_artifact(tmp_path) == tmp_path
    with pytest.raises(SmcplanError, match="twx-coin-world-model"):
        resolve_artifact("twx-coin-world-modl", "world_model_path")


def _binomial_central(n: int, p: float, mass: float = 0.999) -> tuple[int, int]:
    from scipy.stats import binom

    tail = (1 - mass) / 2
    return int(binom.ppf(tail, n, p)), int(binom.isf(tail, n, p))


def _hanley_mcneil_se(auc: float, n_pos: int, n_neg: int) -> float:
    q1, q2 = auc / (2 - auc), 2 * auc * auc / (1 + auc)
    var = auc * (1 - auc) + (n_pos - 1) * (q1 - auc**2) + (n_neg - 1) * (q2 - auc**2)
    return math.sqrt(var / (n_pos * n_neg))


@pytest.mark.slow
def test_the_world_model_reproduces_its_held_out_event_match_on_its_check_sample():
    from smcplan.planning.learned import learned_lm
    from smcplan.train.world_model import evaluate_world_model

    name = "twx-coin-world-model"
    manifest = load_manifest(name)
    rows = _check_rows(name)
    assert len(rows) == manifest["metrics"]["check"]["n"]
    score = evaluate_world_model(learned_lm(name), rows, progress=False)
    k = round(score.event * score.n)
    lo, hi = _binomial_central(score.n, manifest["metrics"]["heldout"]["event_match"])
    assert lo <= k <= hi, (k, lo, hi)


@pytest.mark.slow
def test_the_critic_head_reproduces_its_held_out_auc_on_its_check_sample():
    from smcplan.llm import load_model
    from smcplan.llm.roles.score_head import ScoreCritic, ScoreHead
    from smcplan.train.critic import auc, critic_examples

    name = "twx-coin-critic-head"
    manifest = load_manifest(name)
    rows = _check_rows(name)
    examples = critic_examples(rows, negatives_per_state=None)
    head = ScoreHead.load(resolve_artifact(name))
    scores = ScoreCritic(load_model(head.info.get("model")), head).scores(
        [ex["prompt"] for ex in examples]
    )
    labels = [ex["label"] for ex in examples]
    n_pos = sum(labels)
    target = manifest["metrics"]["heldout"]["auc"]
    se = _hanley_mcneil_se(target, n_pos, len(labels) - n_pos)
    assert abs(auc(scores, labels) - target) <= Z_999 * se, (auc(scores, labels), target, se)


def test_the_shipped_critic_head_says_it_was_fitted_with_map_notes():
    from smcplan.agents.rlaw import trained_with_notes

    folder = resolve_artifact("twx-coin-critic-head")
    assert load_manifest(folder)["settings"]["map_notes"] is True
    assert trained_with_notes(str(folder)) is True


@pytest.mark.parametrize(
    "args, argument",
    [
        (["--agent", "nesyfs", "--agent-arg", "world_model=learned",
          "--agent-arg", "world_model_path=twx-coin-wm"], "world_model_path"),
        (["--agent", "rlaw", "--agent-arg", "critic_path=twx-coin-critic"], "critic_path"),
    ],
)
def test_a_misspelt_artifact_name_is_one_line_exit_2_listing_the_shipped_ones(
    tmp_path, capsys, args, argument
):
    from smcplan.cli import main
    from smcplan.llm.testing import tiny_model_path

    out = tmp_path / "run"
    rc = main(
        ["eval", "--env", "toy:household", "--seeds", "0", "--max-steps", "1", "--out", str(out),
         "--model", str(tiny_model_path()), "--no-progress", *args]
    )
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1, err
    assert f"{argument}='twx-coin-" in err and "known artifacts: " + ", ".join(
        artifact_names()
    ) in err


def test_the_rlvmr_head_reproduces_its_choices_on_its_check_states():
    """The shipped policy head, on the frozen SmolLM2, gives the log-probabilities recorded at
    ship time on 10 held-out gold test states.  Features are float32 hidden states; another
    machine's summation order moves them by a relative ~1e-6, so a logit w.z moves by far less
    than the 0.01 nats allowed (|w| |z| is a few tens: see the assertion's message); the choice
    (the argmax) must be the same wherever the recorded top two differ by more than 0.05."""
    import numpy as np

    from smcplan.llm import load_model
    from smcplan.llm.roles.policy_head import LMFeatures, PolicyHead

    name = "twx-coin-rlvmr-head"
    rows = _check_rows(name)
    assert len(rows) == load_manifest(name)["metrics"]["check"]["n"] == 10
    head = PolicyHead.load(resolve_artifact(name))
    features = LMFeatures(load_model(head.info.get("model")), head.layers)
    for row in rows:
        pairs = [tuple(p) for p in row["pairs"]]
        notes = row.get("notes")  # a head trained with map notes records each candidate's
        logp, want = head.log_probs(features(row["state"], pairs, notes)), np.array(row["logp"])
        gap = float(np.max(np.abs(logp - want)))
        assert gap <= 0.01, (gap, float(np.linalg.norm(head.weight)))
        top = np.sort(want)[-2:]
        if top[1] - top[0] > 0.05:
            assert int(np.argmax(logp)) == int(np.argmax(want))
