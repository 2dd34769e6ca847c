"""What a sweep shows while it runs: tqdm bars (episodes with ETA, the current episode's steps)
and, on request, the trajectory as it happens (task, thoughts, actions, feedback, flags).

Imports only tqdm (lazily, when a sweep starts) and ``smcplan.eval.episodes``.
"""

from __future__ import annotations

import contextlib
import os
import sys
import textwrap
from collections.abc import Iterator
from typing import Any, TextIO

from smcplan.eval.episodes import EpisodeSpec

__all__ = ["Bars", "progress_bars"]

#: environment switches that turn the bars of tqdm and the Hugging Face libraries off, also
#: in modules imported later and in processes started meanwhile (Ray workers)
_QUIET_ENV = {
    "TQDM_DISABLE": "1",
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",
    "HF_DATASETS_DISABLE_PROGRESS_BARS": "1",
}


def _hf_switches() -> list[tuple[Any, Any, Any]]:
    """``(enable, disable, is_disabled)`` of each Hugging Face library already imported (none is
    imported here: ``--no-progress`` must not load transformers for a random agent)."""
    out = []
    transformers_logging = sys.modules.get("transformers.utils.logging")
    if transformers_logging is not None:
        out.append((
            transformers_logging.enable_progress_bar,
            transformers_logging.disable_progress_bar,
            lambda: not transformers_logging.is_progress_bar_enabled(),
        ))  # fmt: skip
    for name in ("datasets.utils.tqdm", "huggingface_hub.utils.tqdm"):
        module = sys.modules.get(name)
        if module is not None:
            out.append((
                module.enable_progress_bars,
                module.disable_progress_bars,
                module.are_progress_bars_disabled,
            ))  # fmt: skip
    return out


@contextlib.contextmanager
def progress_bars(enabled: bool) -> Iterator[None]:
    """With ``enabled=False`` (``--no-progress``) no progress bar is drawn inside the block:
    smcplan's own tqdm bars, transformers' "Loading weights", datasets' "Tokenizing" /
    "Map", huggingface_hub's; the previous state comes back afterwards (a library first
    imported inside the block stays quiet)."""
    if enabled:
        yield
        return
    saved_env = {key: os.environ.get(key) for key in _QUIET_ENV}
    before = [(enable, was()) for enable, _, was in _hf_switches()]
    os.environ.update(_QUIET_ENV)
    for _, disable, _ in _hf_switches():
        disable()
    try:
        yield
    finally:
        for key, value in saved_env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        # back on where they were on before; a library imported inside the block read the
        # switches at import and stays quiet (turning it on again would only warn)
        for enable, was_disabled in before:
            if not was_disabled:
                enable()


class Bars:
    """tqdm progress bars: episodes (with ETA) and the current episode's steps.

    ``enabled``: draw the bars; ``show``: a stream that receives the trajectory.
    """

    def __init__(
        self, total: int, done: int, max_steps: int, enabled: bool, show: TextIO | None
    ) -> None:
        from tqdm.auto import tqdm

        self._tqdm = tqdm
        self.enabled = enabled
        self.show = show
        self.max_steps = max_steps
        self.episodes = tqdm(
            total=total,
            initial=done,
            unit="ep",
            desc="episodes",
            disable=not enabled,
            dynamic_ncols=True,
        )
        self.steps = None
        self.total_steps = 0
        self.wins = 0
        self.finished = 0
        self.errors = 0

    def start_episode(self, spec: EpisodeSpec) -> None:
        self.steps = self._tqdm(
            total=self.max_steps,
            unit="step",
            desc=f"  {spec.id}",
            leave=False,
            disable=not self.enabled,
            dynamic_ncols=True,
        )

    def _write(self, text: str) -> None:
        if self.show is not None:
            self._tqdm.write(text, file=self.show)

    def on_trial_start(self, trial: int, goal: str, obs: str) -> None:
        if self.steps is not None:
            self.steps.reset(total=self.max_steps)
        self._write(f"\n== trial {trial} | task: {goal}\n{obs.strip()}")

    def on_step(self, record: dict[str, Any]) -> None:
        self.total_steps += 1
        if self.steps is not None:
            self.steps.update(1)
        tag = f"<{record['tag']}> " if record.get("tag") else ""
        thought = ""
        if record.get("thought"):
            thought = textwrap.indent(f"thought: {record['thought'].strip()}", "  ") + "\n"
        meta = record.get("meta") or {}
        flags = []
        if record["invalid"]:
            flags.append("invalid")
        if meta.get("rejections"):
            rejected = [
                f"'{r['action']}' by {r.get('by', '?')}"
                for r in meta.get("rejected_proposals") or []
                if isinstance(r, dict) and "action" in r
            ]
            names = f": {', '.join(rejected[:3])}" if rejected else ""
            flags.append(f"{meta['rejections']} rejected{names}")
        if meta.get("slow_thinking"):
            plan = meta.get("plan") or {}
            n = plan.get("num_particles")
            flags.append(f"slow thinking, N={n}" if n else "slow thinking")
        flag_text = f"  [{'; '.join(flags)}]" if flags else ""
        feedback = textwrap.indent(str(record["feedback"]).strip(), "      ")
        self._write(
            f"{thought}[{record['t']:>3}] {tag}> {record['action']}{flag_text}\n"
            f"{feedback}  (score {record['score']:.2f})"
        )

    def end_episode(self, summary: dict[str, Any]) -> None:
        if self.steps is not None:
            self.steps.close()
            self.steps = None
        self.finished += 1
        self.wins += bool(summary["won"])
        self.errors += summary["status"] == "error"
        self.episodes.update(1)
        self.episodes.set_postfix(
            steps=self.total_steps,
            SR=f"{self.wins}/{self.finished}",
            errors=self.errors,
            refresh=True,
        )
        status = (
            "ERROR " + summary["error"]["type"]
            if summary["status"] == "error"
            else ("won" if summary["won"] else "lost")
        )
        self._write(
            f"== {summary['episode']}: {status}, score {summary['score']:.2f}, "
            f"{summary['steps']} steps"
        )

    def close(self) -> None:
        if self.steps is not None:
            self.steps.close()
        self.episodes.close()
