"""The L2-sector lower bound of SpMV gathers, on hand-computed numbers."""

from __future__ import annotations

import numpy as np
import pytest

from sparsescope.model.gathers import gather_bound, hot_share, l2_sector_rate


def test_hot_share_takes_the_most_gathered_columns():
    counts = np.array([5, 1, 3, 0, 1])
    assert hot_share(counts, 2) == pytest.approx(0.8)     # (5 + 3) / 10
    assert hot_share(counts, 1) == pytest.approx(0.5)
    assert hot_share(counts, 5) == 1.0 and hot_share(counts, 0) == 0.0
    assert hot_share(np.zeros(3, int), 2) == 0.0


def test_gather_bound_by_hand():
    b = gather_bound(rows=2, nnz=10, hot=0.8, capacity_entries=2, sector_rate_per_s=1e9)
    # x: 0.2 x 10 = 2 sectors; streams (10 x 8 + 4 x 3 + 4 x 2) / 32 = 3.125 sectors
    assert b.x_sectors == pytest.approx(2.0) and b.stream_sectors == pytest.approx(3.125)
    assert b.time_floor_us == pytest.approx(5.125e-3)
    # the H200's measured L2 bandwidth, 8,248 GB/s = 257.75 G sectors/s
    assert l2_sector_rate(8248.0) == pytest.approx(257.75e9)
    with pytest.raises(ValueError):
        gather_bound(1, 1, 0.0, 1, 0.0)


def test_circuit5m_sized_bound():
    # circuit5M's sizes, a fifth of the gathers served on chip, at 257.75 G sectors/s:
    # x 0.8 x 59,524,291 = 47,619,432.8; streams (476,194,328 + 22,233,308 + 22,233,304) / 32
    # = 16,270,642.5 sectors; (63,890,075.3) / 257.75e9 s = 247.9 us
    b = gather_bound(5_558_326, 59_524_291, 0.2, 65_536, 257.75e9)
    assert b.time_floor_us == pytest.approx(247.876, abs=0.001)
