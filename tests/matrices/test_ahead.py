"""``matrices.ahead.one_ahead``: the next item under way in the background, in order, its
errors raised at its turn."""

from __future__ import annotations

import threading

import pytest

from sparsescope.matrices.ahead import one_ahead


@pytest.mark.parametrize("ahead", [True, False])
def test_items_come_in_order_with_then_applied(ahead):
    assert list(one_ahead(range(5), lambda i: i * i, ahead=ahead)) == [0, 1, 4, 9, 16]
    assert list(one_ahead([], lambda i: i, ahead=ahead)) == []


def test_the_next_item_is_fetched_while_the_current_one_is_used():
    fetched = []
    second_started = threading.Event()

    def source():
        for i in range(3):
            fetched.append(i)
            if i == 1:
                second_started.set()
            yield i

    it = one_ahead(source(), lambda i: i)
    assert next(it) == 0
    # the caller holds item 0; item 1 is being fetched beside it
    assert second_started.wait(5)
    assert fetched[:2] == [0, 1]
    assert list(it) == [1, 2]
    assert fetched == [0, 1, 2]


def test_an_error_is_raised_at_its_items_turn():
    def source():
        yield "a"
        raise ValueError("broken file b.mtx, line 3")

    it = one_ahead(source(), str.upper)
    assert next(it) == "A"  # b's failure, already met in the background, waits its turn
    with pytest.raises(ValueError, match="b.mtx, line 3"):
        next(it)


def test_then_runs_in_the_background_thread():
    names = []
    list(one_ahead(range(2), lambda i: names.append(threading.current_thread().name)))
    assert names == ["sparsescope-load-ahead"] * 2


def test_a_run_loads_ahead_only_on_a_gpu_with_gpu_backends_alone():
    from types import SimpleNamespace

    from sparsescope.api.runs import _load_ahead

    gpu, cpu = SimpleNamespace(kind="gpu"), SimpleNamespace(kind="cpu")
    own = ["cuda-spmv-merge", "torch-cusparse-i32"]
    assert _load_ahead(own, gpu)
    assert not _load_ahead(own + ["scipy-cpu"], gpu)  # a CPU timing shares the cores
    assert not _load_ahead(["scipy-cpu"], cpu)
    assert not _load_ahead(own, None)
