"""Diagnostics that patch a shared model hold its lock for the whole patched stretch.

``theory.context`` switches MiniLM's positions off and ``capture_qk`` hangs hooks on its
projections; the web explorer and notebooks share one loaded model between threads.  Another
thread's forward pass must wait, never run through the patched model: every attention it
computes while a diagnostic runs equals the attention computed alone, bit for bit.
"""

from __future__ import annotations

import threading

import numpy as np

TEXT = "The committee approved the budget after a long debate about schools."
OTHER = "Rivers carve valleys slowly over many thousands of years."


def _hammer(model, until: threading.Event, out: list) -> None:
    while not until.is_set():
        out.append(model.attention(OTHER).weights.copy())


def _check_concurrent(model, run) -> int:
    reference = model.attention(OTHER).weights.copy()
    done, seen = threading.Event(), []
    t = threading.Thread(target=_hammer, args=(model, done, seen))
    t.start()
    try:
        run()
    finally:
        done.set()
        t.join(timeout=300)
    assert seen, "the other thread computed nothing"
    for k, w in enumerate(seen):
        assert np.array_equal(w, reference), (
            f"forward pass {k} of {len(seen)} ran through the patched model"
        )
    return len(seen)


def test_context_never_lets_another_thread_through_the_patched_model(minilm):
    from attntopo.theory import context

    _check_concurrent(
        minilm, lambda: context([TEXT, OTHER], minilm, n_permutations=2, progress=False)
    )


def test_qk_capture_hooks_never_see_another_threads_pass(minilm):
    from attntopo.models._qk import capture_qk

    alone = capture_qk(minilm, TEXT)
    results = []

    def run():
        for _ in range(4):
            results.append(capture_qk(minilm, TEXT))

    _check_concurrent(minilm, run)
    for r in results:  # hooks caught this text's own queries and keys, not the other thread's
        assert np.array_equal(r.queries, alone.queries) and np.array_equal(r.keys, alone.keys)


def test_the_lock_is_reentrant(minilm):
    with minilm._lock:  # a diagnostic holding the model can still run its forward passes
        w = minilm.attention(TEXT).weights
    assert w.shape[-1] == w.shape[-2]
