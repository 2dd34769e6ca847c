"""An agent's groups of settings (``planner``, ``reflection``, ``retrieval``), built once from
what its constructor, :func:`smcplan.agents.make` or ``--agent-arg`` were given.

An agent class declares ``settings_groups`` (group name -> a frozen :class:`smcplan.errors.Settings`
dataclass, e.g. :class:`~smcplan.planning.PlannerConfig`) and ``option_shorthands`` (a flat key ->
the dotted field it sets, e.g. ``world_model`` -> ``planner.world_model``).  Three spellings then
reach the same field, with no renaming on the way to the planner::

    NeSyFSAgent(lm, planner=PlannerConfig(num_particles=16))
    make("nesyfs", lm=lm, **{"planner.num_particles": 16})   # --agent-arg planner.num_particles=16
    make("nesyfs", lm=lm, num_particles=16)                   # the shorthand

Each group is checked once, by its dataclass's ``__post_init__``; an unknown field names the
known ones.

Imports :mod:`smcplan.errors` only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from smcplan.errors import UnknownNameError, nest_dotted

__all__ = ["resolve_settings", "expand_shorthands", "settings_option_names"]


def expand_shorthands(cls: type, options: Mapping[str, Any]) -> dict[str, Any]:
    """``options`` with each shorthand of ``cls`` written as its dotted field (``world_model`` ->
    ``planner.world_model``, ``planner_config`` -> ``planner``); other keys as they are.  A field
    given twice (``world_model`` and ``planner.world_model``) raises :class:`UnknownNameError`."""
    shorthands: Mapping[str, str] = getattr(cls, "option_shorthands", {})
    out: dict[str, Any] = {}
    spelled: dict[str, str] = {}
    for key, value in options.items():
        path = shorthands.get(key, key)
        if path in out:
            raise UnknownNameError(
                f"option {path!r} is given twice (as {spelled[path]!r} and as {key!r}); "
                "give it once"
            )
        out[path], spelled[path] = value, key
    return out


def settings_option_names(cls: type, dotted: bool = True) -> list[str]:
    """The settings keys ``cls`` takes besides its constructor's own names: its shorthands and
    (``dotted``) ``GROUP.FIELD`` for every field of every group (for ``--agent-arg`` listings)."""
    names = set(getattr(cls, "option_shorthands", {}))
    if dotted:
        for group, settings in getattr(cls, "settings_groups", {}).items():
            names |= {f"{group}.{f}" for f in settings.field_names()}
    return sorted(names)


def resolve_settings(
    cls: type, explicit: Mapping[str, Any], options: Mapping[str, Any]
) -> tuple[dict[str, Any], set[str], dict[str, Any]]:
    """Build ``cls``'s groups of settings.

    ``explicit``: the group arguments the constructor received (``planner=...``; ``None`` for
    the defaults; ``reflection=True/False`` means ``reflection.enabled``); ``options``: its
    remaining keywords, where shorthands and dotted keys set fields of a group.  Returns
    ``(groups, given, rest)``: each group's settings object (built and so checked once), the
    names of the groups that something set, and the options that are not settings (for the
    base class)."""
    groups: Mapping[str, Any] = getattr(cls, "settings_groups", {})
    expanded = expand_shorthands(cls, options)
    rest = {k: v for k, v in expanded.items() if k.partition(".")[0] not in groups}
    nested = nest_dotted({k: v for k, v in expanded.items() if k not in rest})
    built: dict[str, Any] = {}
    given: set[str] = set()
    for name, settings in groups.items():
        base = explicit.get(name)
        fields = nested.get(name)
        if fields is not None and not isinstance(fields, dict):
            if base is not None and base is not True:
                raise UnknownNameError(f"{name} is given twice; give it once")
            base, fields = fields, None
        if isinstance(base, bool):
            given |= {name} if base is False else set()
            base = {"enabled": base} if "enabled" in settings.field_names() else None
        elif base is not None:
            given.add(name)
        value = settings.coerce(base, name)
        if fields:
            given.add(name)
            value = value.replace(**fields)
        built[name] = value
    return built, given, rest
