"""The ``graph`` set: invariants of the thresholded attention graph (tda4atd / la-tda).

For a threshold τ the attention matrix ``A`` (n × n, rows over the real tokens) gives the
directed graph ``G_τ`` with an edge ``i → j`` wherever ``A[i, j] >= τ`` (self-loops included,
as in la-tda's code, which builds ``networkx.MultiDiGraph`` from the 0/1 matrix; it keeps
[CLS] and [SEP], divides rows by their float32 sums first and stores the counts as
float16: docs/features.md lists the differences), and its undirected simple graph ``U_τ`` (edge
``{i, j}`` if ``i → j`` or ``j → i``; self-loops kept as loops).  Per head and threshold:

``scc``
    number of strongly connected components of ``G_τ``;
``b0``
    number of connected components of ``U_τ`` (= weakly connected components of ``G_τ``);
``edges``
    number of directed edges of ``G_τ`` (self-loops included);
``degree``
    mean vertex degree of ``G_τ`` (in + out, a self-loop counting 2) = ``2 · edges / n``;
``cycles``
    number of directed simple cycles of ``G_τ`` (self-loops are cycles of length 1), capped at
    ``cycle_cap`` (50, as la-tda; tda4atd's cap is 500);
``b1``
    ``edges(U_τ) − n + b0``: the cycle rank of ``U_τ`` (each loop is one cycle);
``chordal``
    1 if ``U_τ`` without its loops is chordal, else 0;
``matching``
    size of la-tda's greedy maximal matching: ``networkx.maximal_matching`` of
    ``nx.Graph(nx.MultiDiGraph(M).to_undirected())``, which visits the vertices ``u`` in order
    and takes, when ``u`` is free, its first free neighbour ``v > u`` in that graph's adjacency
    order: the out-neighbours of ``u`` in ``G_τ`` by increasing index, then its in-only
    neighbours by increasing index (:func:`_greedy_matching`).  It depends on that order (the
    4-token graph 0 → 2, 1 → 0, 2 → 3 gives 1, its matching number is 2) and lies between half
    the matching number of ``U_τ`` and the matching number.

Everything is vectorized over all heads and thresholds at once: components through one
:func:`scipy.sparse.csgraph.connected_components` call on a block-diagonal graph, chordality
by a maximum cardinality search run on every graph in lockstep, matching greedily vertex by
vertex in la-tda's order.
Only the simple-cycle count needs an enumeration (counting simple cycles is #P-hard): Johnson's
algorithm on bitmasks, stopped at the cap (:func:`simple_cycles_capped`, checked against
``networkx.simple_cycles``), only on the strongly connected components that are neither a
single vertex nor a single ring, and only in graphs where an exact lower bound stays below the
cap: the cycle rank ``e − m + 1`` of each such component (its cycle space has a basis of simple
directed cycles).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

__all__ = [
    "GRAPH_QUANTITIES",
    "DEFAULT_THRESHOLDS",
    "CYCLE_CAP",
    "graph_names",
    "graph_features",
    "simple_cycles_capped",
]

#: Thresholds on attention weights (tda4atd and la-tda).
DEFAULT_THRESHOLDS: tuple[float, ...] = (0.025, 0.05, 0.1, 0.25, 0.5, 0.75)
#: Quantities per threshold, in column order.
GRAPH_QUANTITIES: tuple[str, ...] = (
    "scc",
    "b0",
    "edges",
    "degree",
    "cycles",
    "b1",
    "chordal",
    "matching",
)
#: Cap on the simple-cycle count (la-tda counts at most 50 cycles, tda4atd 500).
CYCLE_CAP = 50


def graph_names(thresholds: Sequence[float]) -> list[str]:
    """Quantity names of the set: ``t{τ}.{quantity}`` for each threshold and quantity."""
    return [f"t{t:g}.{q}" for t in thresholds for q in GRAPH_QUANTITIES]


def _edges(M: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The edges ``(graph, i, j)`` of a stack (G, n, n) bool, sorted row-major (one pass)."""
    return np.nonzero(M)


def _components(
    edges: tuple[np.ndarray, np.ndarray, np.ndarray], G: int, n: int, connection: str
) -> tuple[np.ndarray, np.ndarray, int]:
    """Connected components of each graph of a stack (G, n, n) given by its ``edges``.

    One scipy call on the block-diagonal graph; ``connection="weak"`` gives the components
    of the undirected graph.  Returns the number of components per graph (G,), every
    vertex's global component label (G * n,) and the number of labels.
    """
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import connected_components

    g, i, j = edges
    size = G * n
    indptr = np.zeros(size + 1, dtype=np.int64)
    np.cumsum(np.bincount(g * n + i, minlength=size), out=indptr[1:])  # rows come sorted
    graph = csr_matrix((np.ones(g.size, dtype=np.int8), g * n + j, indptr), shape=(size, size))
    n_labels, labels = connected_components(graph, directed=True, connection=connection)
    block = np.empty(n_labels, dtype=np.int64)
    block[labels] = np.arange(size) // n
    return np.bincount(block, minlength=G).astype(np.float64), labels, n_labels


class _Full(Exception):
    """Raised inside :func:`simple_cycles_capped` once the cap is reached."""


def _reach(s: int, adj: list[int], allowed: int) -> int:
    """Bitmask of the vertices reachable from ``s`` through ``allowed`` vertices (``s`` too)."""
    seen = frontier = 1 << s
    while frontier:
        nxt = 0
        while frontier:
            low = frontier & -frontier
            frontier ^= low
            nxt |= adj[low.bit_length() - 1]
        frontier = nxt & allowed & ~seen
        seen |= frontier
    return seen


def simple_cycles_capped(succ: Sequence[int], cap: int) -> int:
    """Number of directed simple cycles of a graph, capped at ``cap``.

    Johnson's algorithm (SIAM J. Comput. 4(1), 1975) on bitmasks, stopped at the cap: for each
    start ``s`` in turn, the cycles through ``s`` whose other vertices are all larger, inside
    the strongly connected component of ``s`` in the subgraph induced by ``{s, s+1, …}``, found
    by a depth-first search that blocks vertices which cannot reach ``s`` yet.  It takes
    ``O((n + e)(c + 1))`` steps for ``c`` counted cycles.

    Parameters
    ----------
    succ : sequence of int
        ``succ[v]``: bitmask of the successors of vertex ``v`` (bit ``w`` set for an edge
        ``v → w``); a set bit ``v`` in ``succ[v]`` (a self-loop) counts as a cycle.
    cap : int
        Most cycles counted.

    Returns
    -------
    int
        ``min(number of simple cycles, cap)``.
    """
    m = len(succ)
    if cap <= 0:
        return 0
    found = sum((succ[v] >> v) & 1 for v in range(m))
    if found >= cap:
        return cap
    adj = [succ[v] & ~(1 << v) for v in range(m)]
    pred = [0] * m
    for v in range(m):
        t = adj[v]
        while t:
            low = t & -t
            t ^= low
            pred[low.bit_length() - 1] |= 1 << v
    full = (1 << m) - 1
    blocked = 0
    B = [0] * m

    def unblock(u: int) -> None:
        nonlocal blocked
        blocked &= ~(1 << u)
        t, B[u] = B[u], 0
        while t:
            low = t & -t
            t ^= low
            if blocked & low:
                unblock(low.bit_length() - 1)

    def circuit(v: int, s: int, comp: int) -> bool:
        nonlocal blocked, found
        blocked |= 1 << v
        nbrs = adj[v] & comp
        closed = False
        if (nbrs >> s) & 1:
            found += 1
            if found >= cap:
                raise _Full
            closed = True
        t = nbrs & ~(1 << s)
        while t:
            low = t & -t
            t ^= low
            if not blocked & low and circuit(low.bit_length() - 1, s, comp):
                closed = True
        if closed:
            unblock(v)
        else:
            t = nbrs
            while t:
                low = t & -t
                t ^= low
                B[low.bit_length() - 1] |= 1 << v
        return closed

    try:
        for s in range(m - 1):
            allowed = full & ~((1 << s) - 1)
            comp = _reach(s, adj, allowed) & _reach(s, pred, allowed)
            if comp == 1 << s:
                continue
            blocked = 0
            for v in range(s, m):
                B[v] = 0
            circuit(s, s, comp)
    except _Full:
        return cap
    return found


def _row_masks(M: np.ndarray) -> list[int]:
    """Each row of a bool (m, m) matrix as an int bitmask (bit ``j`` for column ``j``)."""
    m = M.shape[-1]
    packed = np.packbits(M, axis=-1, bitorder="little")
    width = packed.shape[-1]
    data = packed.tobytes()
    return [int.from_bytes(data[r * width : (r + 1) * width], "little") for r in range(m)]


def _count_cycles(
    M: np.ndarray,
    edges: tuple[np.ndarray, np.ndarray, np.ndarray],
    labels: np.ndarray,
    n_labels: int,
    cap: int,
) -> np.ndarray:
    """Simple cycles of each directed graph (G, n, n) bool, capped at ``cap``, shape (G,).

    Every simple cycle lies inside one strongly connected component (SCC), so counts add up
    over SCCs: a self-loop is one cycle; an SCC of m >= 2 vertices with exactly m internal
    edges (loops aside) is a single cycle; a denser one has at least ``e - m + 1``.  Only
    graphs whose lower bound stays below the cap are enumerated
    (:func:`simple_cycles_capped`, which stops at the cap), on their dense SCCs only.
    ``edges``: :func:`_edges` of ``M``; ``labels``: its strong components.
    """
    G, n, _ = M.shape
    diag = np.arange(n)
    loops = M[:, diag, diag].sum(-1)
    g, i, j = edges
    src, dst = g * n + i, g * n + j
    inside = (labels[src] == labels[dst]) & (i != j)
    comp_edges = np.bincount(labels[src[inside]], minlength=n_labels)
    comp_size = np.bincount(labels, minlength=n_labels)
    comp_graph = np.empty(n_labels, dtype=np.int64)
    comp_graph[labels] = np.arange(G * n) // n
    ring = (comp_size >= 2) & (comp_edges == comp_size)
    dense = (comp_size >= 2) & (comp_edges > comp_size)
    out = loops + np.bincount(comp_graph[ring], minlength=G)
    # a strongly connected digraph's cycle space has a basis of simple directed cycles
    # (Berge), so an SCC with m vertices and e internal edges has at least e - m + 1 of them
    rank = np.where(comp_size >= 2, comp_edges - comp_size + 1, 0)
    lower = loops + np.bincount(comp_graph, weights=rank, minlength=G)
    todo = np.flatnonzero((np.bincount(comp_graph[dense], minlength=G) > 0) & (lower < cap))
    out[lower >= cap] = cap
    if todo.size:
        lab = labels.reshape(G, n)
        dense_vertex = dense[lab]  # (G, n)
        for k in todo:
            keep = np.flatnonzero(dense_vertex[k])
            lk = lab[k, keep]
            sub = M[k][np.ix_(keep, keep)] & (lk[:, None] == lk[None, :])
            sub[np.arange(keep.size), np.arange(keep.size)] = False
            room = max(cap - int(out[k]), 0)
            out[k] += simple_cycles_capped(_row_masks(sub), room)
    return np.minimum(out, cap).astype(np.float64)


def _chordal(U: np.ndarray) -> np.ndarray:
    """1.0 where the undirected graph (G, n, n) bool, no loops, is chordal (Tarjan–Yannakakis).

    Maximum cardinality search numbers the vertices; the graph is chordal iff the reverse of
    that order is a perfect elimination ordering: for every vertex ``v`` with earlier-numbered
    neighbours ``N⁻(v)``, the latest of them, ``f(v)``, is adjacent to all of ``N⁻(v) − {f(v)}``.
    """
    G, n, _ = U.shape
    rows = np.arange(G)
    weight = np.zeros((G, n), dtype=np.int64)
    done = np.zeros((G, n), dtype=bool)
    pos = np.zeros((G, n), dtype=np.int64)
    for step in range(n):
        v = np.argmax(np.where(done, -1, weight), axis=1)
        done[rows, v] = True
        pos[rows, v] = step
        weight += U[rows, v]
    earlier = U & (pos[:, None, :] < pos[:, :, None])  # earlier[g, v, u]: u numbered before v
    has = earlier.any(-1)
    f = np.argmax(np.where(earlier, pos[:, None, :], -1), axis=-1)  # latest earlier neighbour
    fn = earlier[rows[:, None], f]  # N⁻(f(v)), shape (G, n, n)
    rest = earlier.copy()
    rest[rows[:, None], np.arange(n)[None, :], f] = False
    bad = (rest & ~fn & has[:, :, None]).any((-1, -2))
    return (~bad).astype(np.float64)


def _greedy_matching(M: np.ndarray) -> np.ndarray:
    """la-tda's greedy maximal matching of each directed graph (G, n, n) bool, size (G,).

    ``networkx.maximal_matching`` of ``nx.Graph(MultiDiGraph(M).to_undirected())`` scans the
    vertices ``u = 0, 1, …`` and, for a free ``u``, takes the first free neighbour ``v > u`` in
    that graph's adjacency order: the out-neighbours of ``u`` (``M[u, v]``) by increasing ``v``
    first, then its in-only neighbours (``M[v, u]``, not ``M[u, v]``) by increasing ``v``.
    """
    G, n, _ = M.shape
    rows = np.arange(G)
    matched = np.zeros((G, n), dtype=bool)
    size = np.zeros(G)
    later = np.arange(n)
    for u in range(n - 1):
        free = ~matched & (later > u)
        out = M[:, u, :] & free
        into = M[:, :, u] & free
        has_out = out.any(-1)
        take = (has_out | into.any(-1)) & ~matched[:, u]
        v = np.where(has_out, np.argmax(out, axis=-1), np.argmax(into, axis=-1))
        matched[rows[take], u] = True
        matched[rows[take], v[take]] = True
        size += take
    return size


def graph_features(
    A: np.ndarray,
    *,
    thresholds: Sequence[float] = DEFAULT_THRESHOLDS,
    cycle_cap: int = CYCLE_CAP,
) -> np.ndarray:
    """The ``graph`` set for a stack of attention matrices.

    Parameters
    ----------
    A : ndarray of shape (B, n, n)
        Attention matrices (rows are distributions over the same n tokens).
    thresholds : sequence of float
        Edge thresholds τ on the weights.
    cycle_cap : int
        Most simple cycles counted.

    Returns
    -------
    ndarray of shape (B, len(thresholds) * 8), float64
        Columns in the order of :func:`graph_names` (threshold-major).
    """
    A = np.asarray(A)
    B, n, _ = A.shape
    taus = np.asarray(thresholds, dtype=np.float64)
    T = taus.size
    M = (A[:, None, :, :] >= taus[None, :, None, None]).reshape(B * T, n, n)
    diag = np.arange(n)
    G = B * T
    loops = M[:, diag, diag].sum(-1).astype(np.float64)
    E = _edges(M)
    edges = np.bincount(E[0], minlength=G).astype(np.float64)
    U = M | M.transpose(0, 2, 1)
    U[:, diag, diag] = False
    undirected = U.sum((-1, -2)) / 2 + loops
    b0 = _components(E, G, n, "weak")[0]  # the weak components of G_τ are those of U_τ
    scc, labels, n_labels = _components(E, G, n, "strong")
    cycles = _count_cycles(M, E, labels, n_labels, int(cycle_cap))
    b1 = undirected - n + b0
    # a forest (cycle rank 0 once the loops go) is chordal: the search runs on the others only
    chordal = np.ones(G)
    rest = np.flatnonzero(b1 - loops > 0)
    if rest.size:
        chordal[rest] = _chordal(U[rest])
    out = np.stack(
        [scc, b0, edges, 2.0 * edges / n, cycles, b1, chordal, _greedy_matching(M)],
        axis=-1,
    )  # (B*T, 8)
    return out.reshape(B, T * len(GRAPH_QUANTITIES))
