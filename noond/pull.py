"""Pulling other authors' shards from a member (PROTOCOL.md §6): page by page, each page
validated as a whole and proven by its author's signature before it is appended (a relay is
taken as far as it proves, PROTOCOL.md §13), within what one exchange may take from one member
(:mod:`noond.budget`), up to the per-author quota; and taking a member's whole copy when ours
lags behind a compaction there."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections import deque
from collections.abc import AsyncGenerator, Callable, Iterator
from contextlib import aclosing, contextmanager
from functools import partial
from typing import TypeVar

from noon.certs import CertError, Signer
from noon.core.chain import ChainError, Verify
from noon.core.collection import member_of
from noon.core.ops import Op
from noon.store import receive, serve
from noon.store.errors import ForkDetected
from noon.store.shard import open_regular
from noond.budget import Budget, BudgetSpent
from noond.client import OpsPage, PeerError
from noond.membership import Member
from noond.revocations import Revoked
from noond.signers import MAX_CHECKPOINTS, MAX_SIGNERS_PER_NODE
from noond.wire import MAX_OPS_PER_PAGE, Code
from noond.wiring import Wired, Wiring

log = logging.getLogger("noond")

Ops = list[tuple[bytes, Op]]
Pages = AsyncGenerator[tuple[int, OpsPage, Ops], None]
"""(the cursor asked with, the page, its ops validated)."""
T = TypeVar("T")
WINDOW = 2
"""Pages of one pull asked for or arrived ahead of the one being stored."""


class Puller(Wired):
    def __init__(self, wiring: Wiring) -> None:
        super().__init__(wiring)
        self._budgets: dict[str, Budget] = {}
        self._refetching: dict[str, asyncio.Lock] = {}
        """Per shard: a re-fetch under way (two members' exchanges may both find the gap)."""
        self._asking: dict[str, asyncio.Lock] = {}
        """Per author: an ask of its certificates and checkpoints under way."""
        self._recheck: set[str] = set()
        """Authors whose lines failed to verify: their certificates and checkpoints are asked
        again before the next pull (a rotated key, a checkpoint not seen yet)."""

    def budget(self, member: str) -> Budget:
        """The budget of ``member``'s exchange under way (a fresh one outside exchanges)."""
        budget = self._budgets.get(member)
        if budget is None:
            budget = self._fresh_budget()
        return budget

    def _fresh_budget(self) -> Budget:
        return Budget(self.settings.pull_budget, time.monotonic() + self.settings.pull_seconds)

    @contextmanager
    def budgeted(self, member: str) -> Iterator[Budget]:
        """One exchange with ``member``: what it pulls inside shares one budget."""
        budget = self._budgets[member] = self._fresh_budget()
        try:
            yield budget
        finally:
            del self._budgets[member]

    async def verifier(self, m: Member, node: str) -> tuple[bool, Verify | None]:
        """Whether ``node``'s shard may be taken from ``m``, and how its signatures are
        checked (PROTOCOL.md §13.2): with the certified keys of its author, asked from ``m``
        when none is known here, or when a page failed to verify (a certificate and a
        checkpoint travel with the shard; ``m`` cannot make one the CA did not issue). An
        author that speaks revision 1 (no signing key yet) is taken unsigned from itself only,
        as revision 1 did (§13.5). Without a CA (no TLS) nothing is checked."""
        if not self.signers.required:
            return True, None
        author = member_of(node)
        check = self.signers.check(node)
        if check is None or author in self._recheck:
            self._recheck.discard(author)
            await self.ask_signers(m, author)
            check = self.signers.check(node)
        if check is not None:
            return True, check
        if m.node == author and self.client.revision.get(author) == 1:
            return True, None  # mTLS proves the sender wrote it: all revision 1 knew
        if author in self.membership.members:
            log.debug(
                "shard %s is taken from %s itself only: it signs nothing yet (revision 1)",
                node,
                author,
            )
            return False, None
        self.refuse(
            "uncertified",
            "%s lists shard %s, but no signing certificate of %s by this CA is known: "
            "nothing of it is taken",
            m,
            node,
            author,
        )
        return False, None

    async def ask_signers(self, m: Member, author: str) -> bool:
        """``m``'s signing certificates of ``author``, and the checkpoints of its shards' unsigned
        history, each kept once it verifies against this node's CA. Whether anything new was
        kept.

        One ask per author at a time, and the checkpoints are adopted before the certificates
        are kept: a signer is never known here without the checkpoint it offered with it, so a
        push or frame checked meanwhile (which sees no signer, and asks in turn, waiting for this
        one) never verifies the author's first signed lines against a chain the checkpoint
        would have moved (PROTOCOL.md §13.5)."""
        async with self._asking.setdefault(author, asyncio.Lock()):
            before = self.signers.generation
            try:
                answer = await self.client.get_json(
                    m.address, f"/signers/{author}", expect=m.node, limit=MAX_CHECKPOINTS
                )
            except PeerError as exc:
                answer = {"error": str(exc)}
            offered: list[Signer] = []
            pems = answer.get("certs")
            for pem in pems[:MAX_SIGNERS_PER_NODE] if isinstance(pems, list) else []:
                try:
                    offered.append(self.signers.certify(str(pem).encode(), author))
                except CertError as exc:
                    self.refuse(
                        "uncertified", "%s offered a signing certificate for %s: %s", m, author, exc
                    )
            found = answer.get("checkpoints")
            for text in found[:2] if isinstance(found, list) else []:
                try:
                    adopted = await asyncio.to_thread(
                        self.signers.adopt, str(text).encode(), author, offered
                    )
                except ChainError as exc:
                    self.refuse("unproven", "%s offered a checkpoint of %s: %s", m, author, exc)
                    continue
                if adopted is not None:
                    self.signers.generation += 1
                    log.info(
                        "adopted the checkpoint of %s's unsigned history up to seq %d (from %s); "
                        "%d lines it does not cover dropped here",
                        adopted[0].node,
                        adopted[0].seq,
                        m.node,
                        adopted[1],
                    )
            for signer in offered:
                self.signers.keep(signer)
            return self.signers.generation != before

    def refuse(self, reason: str, message: str, m: Member, *args: object) -> None:
        """Count a refusal of what ``m`` sent and log it (rate-limited, noon.logging_setup)."""
        self.metrics.rejected.labels(reason).inc()
        log.warning(message, m.node, *args)

    def may_pull(self, m: Member, node: str) -> bool:
        """The per-author quota and the exchange's budget of new shards."""
        try:
            size = os.lstat(self.holdings.path(node)).st_size
        except FileNotFoundError:
            size = -1
        if size < 0:
            budget = self.budget(m.node)
            if budget.new_shards <= 0:
                budget.cut = True
                self.metrics.rejected.labels("new_shards").inc()
                log.warning(
                    "%s lists more new shards than one exchange takes; %s waits", m.node, node
                )
                return False
            budget.new_shards -= 1
        elif size >= self.settings.max_shard_bytes and member_of(node) != self.node:
            self.metrics.rejected.labels("quota").inc()
            log.warning(
                "shard %s holds %d bytes, the most this node keeps of one author "
                "(NOOND_MAX_SHARD_BYTES); nothing more of it is taken",
                node,
                size,
            )
            return False
        return True

    async def pages(
        self, m: Member, node: str, after: int, check: int | None, checks: serve.Checks
    ) -> Pages:
        """``m``'s ops of ``node`` beyond ``after``, page by page, each validated as a whole
        (:func:`noon.store.receive.parse_ops`) and above the cursor. The next page is asked
        for as soon as one has arrived (its ``X-Noon-Last`` is the next cursor), so the member
        reads and sends it while this node validates and stores the pages before it; at most
        :data:`WINDOW` pages are asked for or held ahead of the caller, and only while the
        budget lasts (an empty page asks for nothing: it is invalid if marked more). The caller
        takes them one after the other, in order. A page that then fails validation fails the
        pull, and the page asked after it is dropped. Use it under
        :func:`contextlib.aclosing`, so pages asked ahead end with the caller."""
        budget = self.budget(m.node)
        if budget.spent:
            raise BudgetSpent(f"pulled what one exchange may from {m.node}")
        ahead: deque[asyncio.Task[tuple[int, OpsPage, Ops]]] = deque()
        waiting: int | None = None
        """A cursor known (a page arrived with more) but not asked yet: the window was full."""

        def arrived(asked: int, page: OpsPage) -> None:
            nonlocal waiting
            if page.body and page.more and page.last > asked and not budget.spent:
                if len(ahead) < WINDOW:
                    ask(page.last)
                else:
                    waiting = page.last

        def ask(cursor: int) -> None:
            first = not ahead and cursor == after
            ahead.append(
                asyncio.create_task(
                    self._page(
                        m, node, cursor, check if first else None, checks if first else (), arrived
                    )
                )
            )

        ask(after)
        try:
            while ahead:
                asked, page, ops = await ahead.popleft()
                if waiting is not None and not budget.spent:
                    ask(waiting)
                waiting = None
                yield asked, page, ops
                if page.more and page.last > asked and not ahead:
                    raise BudgetSpent(f"pulled what one exchange may from {m.node}")
        finally:
            for task in ahead:
                task.cancel()
            for task in ahead:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task

    async def _page(
        self,
        m: Member,
        node: str,
        after: int,
        check: int | None,
        checks: serve.Checks,
        arrived: Callable[[int, OpsPage], None],
    ) -> tuple[int, OpsPage, Ops]:
        """One page of ``node`` beyond ``after`` from ``m``, validated, its bytes counted
        against the exchange's budget; ``arrived`` is told as soon as its bytes are here."""
        page = await self.client.pull(
            m.address,
            expect=m.node,
            shard=node,
            after=after,
            check=check,
            limit=self.settings.page_bytes,
            checks=checks,
        )
        self.budget(m.node).bytes -= len(page.body)
        arrived(after, page)
        ops: Ops = []
        if page.body:
            ops = await asyncio.to_thread(
                receive.parse_ops, page.body, node, max_ops=MAX_OPS_PER_PAGE
            )
        _check_page(m.node, node, after, page, ops)
        return after, page, ops

    def _spent(self, m: Member, node: str, exc: BudgetSpent) -> None:
        self.budget(m.node).cut = True
        self.metrics.rejected.labels("pull_budget").inc()
        log.info("pull of %s from %s stops here: %s; the next exchange goes on", node, m.node, exc)

    async def pull(self, m: Member, node: str, mine: serve.Summary) -> None:
        """Fetch ``node``'s ops beyond ours from ``m``, page by page, each proven by its
        author's signature before it is appended: a relay is taken as far as it proves."""
        allowed, verify = await self.verifier(m, node)
        if not allowed:
            return
        after = mine.seq
        local = self.holdings.path(node)
        checks = await asyncio.to_thread(serve.recent_digests, local, after) if after else []
        digest = mine.digest if mine.seq else None
        try:
            async with aclosing(self.pages(m, node, mine.seq, digest, checks)) as pages:
                async for after, _page, ops in pages:
                    if not ops or not await self._take(m, node, ops, after, verify):
                        return
        except BudgetSpent as exc:
            self._spent(m, node, exc)
        except PeerError as exc:
            if exc.code == Code.FORK:
                self.forks.record(m.node, node, str(exc))
                return
            raise

    async def _take(
        self, m: Member, node: str, ops: Ops, after: int, verify: Verify | None
    ) -> bool:
        """Append one pulled page; whether the pull of ``node`` goes on."""
        try:
            done = await self.append_proven(m, node, ops, after, verify)
        except Revoked:
            raise
        except receive.Unproven as exc:
            self._recheck.add(member_of(node))
            self.refuse(
                "unproven",
                "%s served ops of %s that are not proven, nothing stored: %s",
                m,
                node,
                exc,
            )
            raise
        except ForkDetected as exc:
            self.forks.record(m.node, node, str(exc))
            return False
        except receive.SkipsCompacted as exc:
            log.info("pull of %s from %s: %s", node, m.node, exc)
            await self._refetch(m, node)
            return False
        self.holdings.stored()
        self.metrics.ops_pulled.inc(done.appended)
        self.budget(m.node).taken += done.appended
        return self.may_pull(m, node)

    async def append_proven(
        self, m: Member | None, node: str, ops: Ops, after: int, verify: Verify | None
    ) -> receive.Appended:
        """Append a page or a push body (:meth:`proven`). Ops of an author the CA revoked,
        stamped after its cut-off, raise :class:`noond.revocations.Revoked` (counted here) and
        nothing is stored."""
        self.not_revoked(m, node, ops)
        return await self.proven(m, node, verify, partial(self.append_now, node, ops, after))

    def not_revoked(self, m: Member | None, node: str, ops: Ops) -> None:
        """Raise :class:`noond.revocations.Revoked`, counted and logged, when ops of ``node``
        are stamped after its author's revocation by the CA. Safe in a worker thread."""
        try:
            self.signers.revocations.check(node, [op.hlc for _, op in ops])
        except Revoked as exc:
            self.metrics.rejected.labels("revoked").inc()
            log.warning("%s sent ops of %s, nothing stored: %s", m.node if m else "?", node, exc)
            raise

    async def proven(
        self,
        m: Member | None,
        node: str,
        verify: Verify | None,
        attempt: Callable[[Verify | None], T],
    ) -> T:
        """``attempt(verify)`` in a worker thread (it stores what ``verify`` proves); when it
        fails to verify, ask ``m`` (the sender) once for what is new of the author (a rotated
        key's certificate, a checkpoint) and attempt again with it (also when another ask
        brought something new meanwhile). A revoked author's ops are not asked about."""
        known = self.signers.generation
        try:
            return await asyncio.to_thread(attempt, verify)
        except Revoked:
            raise
        except receive.Unproven:
            if verify is None or m is None:
                raise
            # Tried again when the ask brings something new, or when another ask did while
            # this body was being checked.
            if not await self.ask_signers(m, member_of(node)) and known == self.signers.generation:
                raise
        return await asyncio.to_thread(attempt, self.signers.check(node))

    def append_now(self, node: str, ops: Ops, after: int, check: Verify | None) -> receive.Appended:
        """Append ops that ``check`` proves, in the calling thread (blocking I/O)."""
        return receive.append(
            self.dir, node, ops, fsync=self.settings.fsync, consumed=after, check=check
        )

    async def _refetch(self, m: Member, node: str) -> None:
        """Take ``m``'s whole copy of ``node``'s shard in place of ours (ours lags behind a
        compaction there: see :class:`noon.store.receive.SkipsCompacted`). Written to a hidden
        file first and swapped in atomically, so a failure leaves our copy as it was."""
        lock = self._refetching.setdefault(node, asyncio.Lock())
        if lock.locked():
            return  # another member's copy is being taken: one is enough
        async with lock:
            await self._refetch_from(m, node)

    async def _refetch_from(self, m: Member, node: str) -> None:
        allowed, check = await self.verifier(m, node)
        if not allowed:
            return
        fetched = self.dir / f".{node}.{m.node}.refetch.tmp"
        try:
            fd = open_regular(fetched, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            with open(fd, "wb") as out:
                try:
                    async with aclosing(self.pages(m, node, 0, None, ())) as pages:
                        async for _, page, ops in pages:
                            out.write(page.body)
                            self.metrics.ops_pulled.inc(len(ops))
                            if out.tell() > self.settings.max_shard_bytes:
                                raise BudgetSpent(f"{node} is larger than NOOND_MAX_SHARD_BYTES")
                except BudgetSpent as exc:
                    self._spent(m, node, exc)
                    return
            try:
                done = await asyncio.to_thread(
                    receive.replace, self.dir, node, fetched, fsync=self.settings.fsync, check=check
                )
            except receive.Unproven as exc:
                self.refuse("unproven", "%s served a copy of %s, nothing stored: %s", m, node, exc)
                raise
            self.holdings.stored()
            log.warning(
                "re-fetched the whole shard %s from %s (ours lagged behind a compaction there)%s",
                node,
                m.node,
                "" if done else ": not needed",
            )
        finally:
            fetched.unlink(missing_ok=True)


def _check_page(member: str, node: str, after: int, page: OpsPage, ops: Ops) -> None:
    """What every page must be (PROTOCOL.md §4), or the member breaks the protocol: ops above
    the cursor, ``X-Noon-Last`` naming the last of them, ``X-Noon-More`` only on a page that
    holds some (an empty page marked more would be asked for again and again)."""
    if ops and ops[0][1].seq <= after:
        raise PeerError(f"{member} served {node} ops at or below seq {after}")
    last = ops[-1][1].seq if ops else after
    if page.last != last:
        raise PeerError(f"{member} says page of {node} ends at seq {page.last}, it ends at {last}")
    if page.more and not ops:
        raise PeerError(f"{member} marks an empty page of {node} as having more")
