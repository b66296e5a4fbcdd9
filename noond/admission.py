"""Admission (PROTOCOL.md §8.1): a candidate address becomes a member only once ``/info`` over
mutual TLS proves who answers there; then it is saved and exchanged with at once."""

from __future__ import annotations

import logging

from noond.client import Client, PeerError, Unreachable
from noond.exchange import Exchanger
from noond.membership import Candidate, Membership
from noond.metrics import Metrics
from noond.statefile import StateFile
from noond.wire import Code

log = logging.getLogger("noond")


class Admission:
    def __init__(
        self,
        *,
        client: Client,
        membership: Membership,
        state: StateFile,
        exchanger: Exchanger,
        metrics: Metrics,
    ) -> None:
        self.client = client
        self.membership = membership
        self.state = state
        self.exchanger = exchanger
        self.metrics = metrics

    async def verify(self, cand: Candidate) -> None:
        """Admit ``cand`` once ``/info`` proves its node id; a failure backs it off."""
        try:
            _, node = await self.client.info(cand.address, expect=cand.node)
        except PeerError as exc:
            self.membership.candidate_failed(cand)
            if exc.code == Code.PROTOCOL:
                self.metrics.exchanges.labels("incompatible").inc()
                log.error("candidate %s (%s) not admitted: %s", cand.address, cand.source, exc)
            else:
                self.metrics.exchanges.labels(
                    "refused" if exc.code == Code.IDENTITY else "invalid"
                ).inc()
                log.warning("candidate %s (%s) not admitted: %s", cand.address, cand.source, exc)
            return
        except Unreachable as exc:
            self.membership.candidate_failed(cand)
            log.info("candidate %s (%s) not admitted: %s", cand.address, cand.source, exc)
            return
        if node in self.state.ignored:
            self.membership.candidates.pop(cand.address, None)
            return
        member = self.membership.admit(node, cand.address)
        if member is not None:
            self.metrics.admissions.inc()
            log.info("admitted %s at %s (from %s)", node, cand.address, cand.source)
            self.state.save_members()
            await self.exchanger.exchange(member)
