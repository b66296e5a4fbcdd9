"""Relays (PROTOCOL.md §14): machines that are never online together meet through a bucket or
a synced folder, trusting it with nothing. :mod:`noond.relay.seal` names and seals objects,
:mod:`noond.relay.backend` is the seam to where they live, :mod:`noond.relay.upload` writes one
node's shards to one relay and :mod:`noond.relay.download` takes other authors' from it (both
over a :mod:`noond.relay.link`, paired in :mod:`noond.relay.sync`), :mod:`noond.relay.run` runs
every relay of a daemon."""
