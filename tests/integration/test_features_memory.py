"""One long text does not blow the memory (issue 28 item 5): ``features([long_text], model)``
holds a bounded amount of Jensen–Shannon matrices, whatever its number of heads.

A 512-token text on MiniLM has 72 heads of 512 × 512 float64 distances: 151 MB.  Before, a
layer's heads were computed together and every matrix waited for the persistence engines until
128 MiB had gathered, so all of them were alive at once beside the layer's float64 copies
(measured: 213–219 MiB above the warm model).  The heads now go in groups of at most
``GROUP_BYTES`` of matrices (``features._layers.heads_per_group``), and at most three such
batches wait for the engines (measured: 88–97 MiB).

The bound is derived from the text's length and the group budget, with 30 % headroom:

* the model's own forward pass, one layer at a time: 4 × one layer's float32 attention
  (the scores, the masked scores, the softmax and the renormalized copy the hook hands over);
* the matrices waiting for the engines: 3 × ``GROUP_BYTES`` (two batches sent, one filling);
* one group's temporaries: 4 × ``GROUP_BYTES`` (its float64 rows, the validation's float64
  copy, the distances, the C kernel's and the refinement's scratch).

Resident memory is deterministic enough for that: the run is alone in a fresh process, warmed
up on a short text first (imports, the worker pool, first-call allocations), and the peak is
read from ``VmHWM`` after resetting it (``/proc/self/clear_refs``), as
tests/integration/test_llm_streaming.py does.  Without the groups the peak is ~1.5x the bound.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.slow, pytest.mark.model]

_SCRIPT = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
from _llama import extra_peak
import attntopo as at
from attntopo.datasets import fortunes
from attntopo.features._layers import GROUP_BYTES

long = " ".join(" ".join(t.split()) for t in
                fortunes(categories=["science"], min_words=4, n_per_category=400, seed=6).texts)
m = at.load_model("minilm")
at.features(["A short text warms up the imports and the worker pool."], m, sets=("js",),
            progress=False)
extra, table = extra_peak(lambda: at.features([long], m, sets=("js",), truncate=True,
                                              progress=False))
print(json.dumps({"extra": extra, "n_tokens": len(m.tokenize(long, truncate=True).ids),
                  "n_heads": m.n_heads, "columns": len(table.columns), "group": GROUP_BYTES}))
"""


@pytest.mark.skipif(not Path("/proc/self/clear_refs").exists(), reason="Linux /proc needed")
def test_one_long_text_holds_a_bounded_share_of_its_distance_matrices():
    env = dict(os.environ, TOKENIZERS_PARALLELISM="false")
    proc = subprocess.run(
        [sys.executable, "-c", _SCRIPT, str(ROOT / "benchmarks")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    n, heads, group = got["n_tokens"], got["n_heads"], got["group"]
    assert n == 512 and got["columns"] == 6 * heads * 29
    all_distances = 6 * heads * n * n * 8  # 151 MB: what was alive at once before
    bound = 1.3 * (4 * heads * n * n * 4 + 3 * group + 4 * group)
    assert bound < all_distances
    assert got["extra"] <= bound, (got, bound)
