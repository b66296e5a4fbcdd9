"""What the tests share: stores, servers, sessions, simulators and the fault harness. No
test module imports another; they all import from here (and from ``bench.mesh`` for real
daemons)."""
