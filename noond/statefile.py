"""The daemon's side of its state file (:mod:`noon.store.peerstate`): the operator's
revocations and departures, read again whenever the file changes (``noon peers`` edits it while
the daemon runs), and the verified members, saved on admission and at stop so the next start
dials them first."""

from __future__ import annotations

import contextlib
import logging
import os
from pathlib import Path

from noon.store import peerstate
from noond.config import parse_address
from noond.membership import Membership

log = logging.getLogger("noond")


class StateFile:
    def __init__(
        self,
        path: Path,
        membership: Membership,
        *,
        revoked: frozenset[str] = frozenset(),
        departed: frozenset[str] = frozenset(),
    ) -> None:
        self.path = path
        self.membership = membership
        self._config_revoked = revoked
        self._config_departed = departed
        self.revoked: set[str] = set(revoked)
        self.departed: set[str] = set(departed)
        self._ident: tuple[int, int] | None = None
        self._loaded = False
        self._saved_members: dict[str, str] = {}
        self.recover: dict[str, peerstate.Confirmation] = {}
        """Members the operator allowed to give back ops of the own shard."""

    @property
    def ignored(self) -> set[str]:
        """Revoked and departed nodes: refused, never admitted, never exchanged with."""
        return self.revoked | self.departed

    def _stat(self) -> tuple[int, int] | None:
        try:
            st = os.lstat(self.path)
        except FileNotFoundError:
            return None
        return (st.st_ino, st.st_mtime_ns)

    def reload(self) -> None:
        """Read the file again if it changed since the last read."""
        ident = self._stat()
        if ident == self._ident and self._loaded:
            return
        self._ident, self._loaded = ident, True
        try:
            state = peerstate.load(self.path)
        except peerstate.StateError as exc:
            log.error("state file unusable, keeping the previous revocations: %s", exc)
            return
        self.revoked = set(self._config_revoked) | state.revoked
        self.departed = set(self._config_departed) | state.departed
        self.membership.ignore(self.ignored)
        for node, address in state.members.items():
            if node not in self.membership.members:
                with contextlib.suppress(ValueError):
                    self.membership.suggest(parse_address(address), node, "state")
        self._saved_members = dict(state.members)
        self.recover = dict(state.recover)

    def save_members(self) -> None:
        members = {m.node: m.address for m in self.membership.members.values()}
        if members == self._saved_members:
            return

        def change(state: peerstate.PeerState) -> None:
            state.members = members

        try:
            peerstate.update(self.path, change)
        except (OSError, peerstate.StateError) as exc:
            log.error("cannot save the state file: %s", exc)
            return
        self._saved_members = members
        self._ident = self._stat()

    def confirm(self, node: str, confirmation: peerstate.Confirmation | None) -> None:
        """Pin a recovery confirmation to what was recovered from (or drop it: None)."""

        def change(state: peerstate.PeerState) -> None:
            if confirmation is None:
                state.recover.pop(node, None)
            elif node in state.recover:
                state.recover[node] = confirmation

        try:
            state = peerstate.update(self.path, change)
        except (OSError, peerstate.StateError) as exc:
            log.error("cannot save the state file: %s", exc)
            return
        self.recover = dict(state.recover)
        self._ident = self._stat()
