"""Fault injection (nemesis) and hostile-input suite: real ``noond`` and writer processes on
loopback under kills, partitions, loss, clock skew, disk faults and restores; a checker that
proves nothing acknowledged was lost, nothing deleted came back and every replica converged."""
