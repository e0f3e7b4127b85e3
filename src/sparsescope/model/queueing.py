"""The memory system as a closed queueing network, solved exactly by mean-value analysis.

Each resident block of a kernel is a customer that loops: it issues one iteration's loads,
waits for them, issues the next. A loop passes the DRAM and the L2 (queues: each serves a
request in its *demand* D_k = bytes of the iteration there / the station's rate) and the
unloaded round-trip latency Z (a delay: no queue). With N customers the exact MVA recursion
(Reiser and Lavenberg 1980; Lazowska et al., *Quantitative System Performance*, ch. 6) is::

    Q_k(0) = 0
    for n = 1 .. N:
        R_k(n) = D_k (1 + Q_k(n - 1))          (the residence time at station k)
        X(n)   = n / (Z + sum_k R_k(n))        (iterations per second)
        Q_k(n) = X(n) R_k(n)

The throughput X(N) lies below both asymptotic bounds, ``1 / max D_k`` (a station saturated:
the bandwidth roofline) and ``N / (Z + sum D_k)`` (too few customers: Little's law), and bends
smoothly between them, which is where a memory-bound kernel with limited parallelism runs.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class MvaResult:
    """Throughput and where a loop spends its time, at ``customers``."""

    customers: int
    throughput_per_s: float
    """X(N): loop iterations completed per second."""
    residence_s: dict[str, float]
    """R_k(N) per queue: time one iteration spends at it (service + waiting), seconds."""
    delay_s: float
    """Z: the unloaded round trips of one iteration, seconds."""

    @property
    def cycle_s(self) -> float:
        """Z + sum R_k(N): one iteration's time under this load."""
        return self.delay_s + sum(self.residence_s.values())

    @property
    def dominant(self) -> str:
        """The queue with the largest residence, or ``latency`` when the delay is larger."""
        name, longest = max(self.residence_s.items(), key=lambda kv: kv[1], default=("", 0.0))
        return name if longest >= self.delay_s else "latency"


def mva(demands_s: dict[str, float], delay_s: float, customers: int) -> MvaResult:
    """Exact single-class MVA (module docstring) for ``customers`` >= 1.

    Hand check: one queue D = 1, Z = 1, N = 2: R(1) = 1, X(1) = 0.5, Q(1) = 0.5;
    R(2) = 1.5, X(2) = 2 / 2.5 = 0.8.
    """
    n_max = max(1, int(customers))
    queue = {k: 0.0 for k in demands_s}
    residence = dict(queue)
    throughput = 0.0
    for n in range(1, n_max + 1):
        residence = {k: d * (1.0 + queue[k]) for k, d in demands_s.items()}
        total = delay_s + sum(residence.values())
        throughput = n / total if total > 0 else float("inf")
        queue = {k: throughput * r for k, r in residence.items()}
    return MvaResult(customers=n_max, throughput_per_s=throughput, residence_s=residence,
                     delay_s=delay_s)
