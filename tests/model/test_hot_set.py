"""The hot-set reach (``model.hot_set``): gathers served and sectors filled, by hand."""

from __future__ import annotations

import numpy as np
import pytest

from sparsescope.model.hot_set import hot_set_reach


def test_served_gathers_and_fill_sectors_by_hand():
    # 32 columns (4 sectors of 8 floats); counts: column 0: 50, column 9: 30, column 17: 20,
    # column 31: 10, every other column 1 (28 columns): 138 gathers
    counts = np.ones(32, dtype=np.int64)
    counts[[0, 9, 17, 31]] = [50, 30, 20, 10]
    one_sm = hot_set_reach(counts, entries_per_sm=2, cluster=1, sms=4)
    # each SM pins columns 0 and 9 (80 gathers), in sectors 0 and 1: 4 copies x 2 sectors
    assert (one_sm.entries, one_sm.served, one_sm.copies, one_sm.fill_sectors) == (2, 80, 4, 8)
    assert one_sm.share == pytest.approx(80 / 138) and one_sm.net_saved == 72
    pair = hot_set_reach(counts, entries_per_sm=2, cluster=2, sms=4)
    # two SMs share 4 entries: 0, 9, 17, 31 (110 gathers) in sectors 0-3, 2 copies x 4 sectors
    assert (pair.entries, pair.served, pair.copies, pair.fill_sectors) == (4, 110, 2, 8)
    # the whole x fits: every gather served, every sector filled once per copy
    whole = hot_set_reach(counts, entries_per_sm=32, cluster=4, sms=4)
    assert (whole.entries, whole.share, whole.fill_sectors) == (32, 1.0, 4)
    # doubles: 4 to a sector, so columns 0 and 9 fall in sectors 0 and 2
    assert hot_set_reach(counts, entries_per_sm=2, cluster=1, sms=1,
                         value_bytes=8).fill_sectors == 2


def test_bad_cluster_sizes_are_refused():
    with pytest.raises(ValueError, match="cluster"):
        hot_set_reach(np.ones(4), entries_per_sm=1, cluster=8, sms=4)
    with pytest.raises(ValueError, match="cluster"):
        hot_set_reach(np.ones(4), entries_per_sm=1, cluster=0, sms=4)
