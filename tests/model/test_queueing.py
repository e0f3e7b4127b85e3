"""Exact MVA of the memory system (``model.queueing``): a hand check, both asymptotic bounds,
and the station that dominates."""

from __future__ import annotations

import pytest

from sparsescope.model.queueing import mva


def test_hand_check_one_queue():
    # D = 1, Z = 1. n = 1: R = 1, X = 1 / (1 + 1) = 0.5, Q = 0.5.
    # n = 2: R = 1 x (1 + 0.5) = 1.5, X = 2 / (1 + 1.5) = 0.8, Q = 1.2.
    r = mva({"dram": 1.0}, 1.0, 2)
    assert r.customers == 2
    assert r.throughput_per_s == pytest.approx(0.8)
    assert r.residence_s == {"dram": pytest.approx(1.5)}
    assert r.delay_s == 1.0
    assert r.cycle_s == pytest.approx(2.5)  # Z + R = 1 + 1.5
    assert r.dominant == "dram"  # R 1.5 >= Z 1


def test_two_queues_hand_check():
    # D = {a: 1, b: 2}, Z = 0, N = 2.
    # n = 1: R = (1, 2), X = 1/3, Q = (1/3, 2/3).
    # n = 2: R = (1 x 4/3, 2 x 5/3) = (4/3, 10/3), X = 2 / (14/3) = 3/7.
    r = mva({"a": 1.0, "b": 2.0}, 0.0, 2)
    assert r.residence_s["a"] == pytest.approx(4 / 3)
    assert r.residence_s["b"] == pytest.approx(10 / 3)
    assert r.throughput_per_s == pytest.approx(3 / 7)
    assert r.dominant == "b"


DEMANDS = {"dram": 2e-9, "l2": 0.5e-9}  # seconds per iteration at each queue
DELAY = 600e-9                          # Z: the unloaded round trips


def test_one_customer_sees_no_queue():
    # N = 1: X = 1 / (Z + sum D) = 1 / 602.5 ns, and the round trips dominate
    r = mva(DEMANDS, DELAY, 1)
    assert r.throughput_per_s == pytest.approx(1 / (DELAY + 2.5e-9))
    assert r.residence_s == pytest.approx(DEMANDS)
    assert r.dominant == "latency"


def test_many_customers_saturate_the_largest_demand():
    # N large: X -> 1 / max D = 0.5 G iterations/s, DRAM the bottleneck
    r = mva(DEMANDS, DELAY, 5000)
    assert r.throughput_per_s == pytest.approx(1 / 2e-9, rel=0.01)
    assert r.throughput_per_s <= 1 / 2e-9
    assert r.dominant == "dram"


def test_throughput_never_above_either_bound():
    bound_sat = 1 / max(DEMANDS.values())
    previous = 0.0
    for n in [*range(1, 400, 7), 1000, 3000]:
        x = mva(DEMANDS, DELAY, n).throughput_per_s
        bound_littles = n / (DELAY + sum(DEMANDS.values()))
        assert x <= min(bound_sat, bound_littles) * (1 + 1e-12), n
        assert x >= previous  # more customers never lower the throughput
        previous = x


def test_no_customers_counts_as_one():
    assert mva(DEMANDS, DELAY, 0).customers == 1
    assert mva(DEMANDS, DELAY, 0).throughput_per_s == mva(DEMANDS, DELAY, 1).throughput_per_s


def test_a_delay_only_network_runs_at_littles_law():
    # no queues: X(N) = N / Z exactly, the round trips the only cost
    r = mva({}, 100e-9, 8)
    assert r.throughput_per_s == pytest.approx(8 / 100e-9)
    assert r.dominant == "latency"
