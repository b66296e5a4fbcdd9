"""The test kit: what the tests share (stores, servers, sessions, real daemons in ``mesh``,
simulators, the fault harness) and the oracles the product is held to (``fold``, ``uri_graph``,
``kg_view``, ``oracle``, ``review_oracle``). No test module imports another; the product never
imports the kit; the benchmarks may (``tests/test_architecture.py``)."""
