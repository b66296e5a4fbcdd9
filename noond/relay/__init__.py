"""Relays (PROTOCOL.md §14): machines that are never online together meet through a bucket or
a synced folder, trusting it with nothing. :mod:`noond.relay.seal` names and seals objects,
:mod:`noond.relay.backend` is the seam to where they live, :mod:`noond.relay.sync` moves one
node's shards through one relay, :mod:`noond.relay.run` runs every relay of a daemon."""
