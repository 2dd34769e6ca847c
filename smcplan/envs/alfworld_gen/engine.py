"""One TextWorld ``PddlEnv`` shared by an ALFWorld env and its clones, with state checkout.

fast-downward keeps the game state in its C library; each ``PddlEnv`` maps a private copy of
``libdownward.so`` (``fast_downward.load_lib``). The library registers every state it reaches and
exports ``get_state_id`` / ``set_state_id`` (undeclared by ``fast_downward.interface``), so one
engine can hold many game states and switch between them: the revert operation LATS plans with.

:class:`SharedEngine` is that engine plus a *checkout* protocol: each env sharing it owns a
:class:`Snapshot` (the C state id plus the Python side of the state: ``PddlState``'s facts and
variables, the engine's last ``GameState``, its move count). Before it touches the engine an env
calls :meth:`SharedEngine.checkout`; the engine saves the current owner's snapshot (by reference:
the next checkout replaces the live Python objects rather than mutating them) and restores the
caller's (copying the facts, so one snapshot can be restored many times). A clone is then one
snapshot: no new engine, no PDDL translation, no replay of the episode.

Not thread-safe across envs that share one engine (the planner steps particles in one thread);
a lock guards each checkout-and-step so misuse serialises instead of corrupting state.

Must not import anything from ``smcplan`` above ``smcplan.envs``.
"""

from __future__ import annotations

import ctypes
import threading
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Snapshot:
    """Everything that differs between two states of one loaded game."""

    state_id: int
    pddl_state: Any  # textworld.envs.pddl.logic.PddlState (never mutated after capture)
    game_state: Any  # the engine's last GameState
    prev_state: Any
    last_action: Any
    moves: int


def supports_state_ids(tw: Any) -> bool:
    """Whether ``tw``'s fast-downward copy exports ``get_state_id`` / ``set_state_id``."""
    lib = getattr(_base(tw), "downward_lib", None)
    return lib is not None and hasattr(lib, "get_state_id") and hasattr(lib, "set_state_id")


def _base(tw: Any) -> Any:
    return tw.unwrapped if hasattr(tw, "unwrapped") else tw


class SharedEngine:
    """A loaded ``PddlEnv`` (``tw``) shared by the envs holding a token of it.

    Tokens are opaque objects, one per env. The live engine state belongs to :attr:`owner`;
    every other user's state is a :class:`Snapshot` kept here until it is checked out.
    """

    def __init__(self, tw: Any, game_file: str, token: object) -> None:
        self.tw = tw
        self.game_file = game_file
        self.owner: object | None = token
        self.lock = threading.RLock()
        self._users: set[object] = {token}
        self._saved: dict[object, Snapshot] = {}
        self._base = _base(tw)
        #: whether states can be checked out (else clones must replay the episode)
        self.snapshots = supports_state_ids(tw)
        self._lib = getattr(self._base, "downward_lib", None)
        if self.snapshots:
            lib = self._lib
            lib.get_state_id.argtypes, lib.get_state_id.restype = [], ctypes.c_int
            lib.set_state_id.argtypes, lib.set_state_id.restype = [ctypes.c_int], None

    @property
    def users(self) -> int:
        """How many envs share this engine."""
        return len(self._users)

    def checkout(self, token: object) -> None:
        """Make ``token``'s state the live one (saving the current owner's)."""
        if self.owner is token:
            return
        snap = self._saved.pop(token)
        if self.owner is not None:
            self._saved[self.owner] = self._capture()
        self._restore(snap)
        self.owner = token

    def claim(self, token: object) -> None:
        """``token`` now owns the live state as it is (after a ``reset`` of the engine)."""
        self._saved.pop(token, None)
        self.owner = token

    def fork(self, parent: object, child: object) -> None:
        """Register ``child`` as a new user whose state is ``parent``'s current one."""
        if self.owner is parent:
            snap = self._capture()
            self._restore(snap)  # the live objects become copies: ``snap`` stays as it is
        else:
            snap = self._saved[parent]  # never mutated: restoring copies it
        self._saved[child] = snap
        self._users.add(child)

    def release(self, token: object) -> bool:
        """Forget ``token``; ``True`` when no user is left (the caller closes the engine)."""
        self._saved.pop(token, None)
        self._users.discard(token)
        if self.owner is token:
            self.owner = None
        return not self._users

    def _capture(self) -> Snapshot:
        """The live state as a snapshot (the live Python objects, by reference)."""
        b = self._base
        return Snapshot(
            state_id=int(self._lib.get_state_id()),
            pddl_state=b._pddl_state,
            game_state=b.state,
            prev_state=b.prev_state,
            last_action=b._last_action,
            moves=int(b._moves),
        )

    def _restore(self, snap: Snapshot) -> None:
        """Make ``snap`` the live state (the facts are copied: ``snap`` stays reusable)."""
        b = self._base
        self._lib.set_state_id(snap.state_id)
        b._pddl_state = _copy_pddl_state(snap.pddl_state)
        b.state, b.prev_state = snap.game_state, snap.prev_state
        b._last_action, b._moves = snap.last_action, snap.moves


def _copy_pddl_state(state: Any) -> Any:
    """A ``PddlState`` whose facts and variable tables can change without touching ``state``."""
    twin = object.__new__(type(state))
    twin.__dict__.update(state.__dict__)
    twin._facts = type(state._facts)(set)
    for key, facts in state._facts.items():
        twin._facts[key] = set(facts)
    twin._vars_by_name = dict(state._vars_by_name)
    twin._vars_by_type = type(state._vars_by_type)(set)
    for key, variables in state._vars_by_type.items():
        twin._vars_by_type[key] = set(variables)
    twin._var_counts = state._var_counts.copy()
    return twin
