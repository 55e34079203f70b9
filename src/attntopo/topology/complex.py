"""The Vietoris–Rips complex at one scale, connection scales and single-linkage clusters.

A persistence diagram summarises every scale at once; the questions a reader asks about
*tokens* are asked at one ``scale``:

* which tokens are joined by an edge (``D[i, j] <= scale``), which triples span a filled
  triangle (all three sides ``<= scale``) — :func:`complex_at` returns that :class:`Complex`;
* when do two tokens get an edge (:func:`edge_birth`, their distance) and when do they first
  lie in one connected component (:func:`connection_scale`, the *minimax path distance*:
  the smallest ``scale`` with a path of edges ``<= scale`` between them);
* when does a set of tokens span a simplex (:func:`simplex_scale`, its largest pairwise
  distance);
* which tokens form one cluster at ``scale`` (:func:`clusters_at`, the connected components
  of the ``scale``-graph).

H0 persistence *is* single-linkage clustering: the H0 bars die at the merge heights of
single linkage (the edge lengths of a minimum spanning tree), the connection scale of two
tokens is the height where single linkage merges them (the *subdominant ultrametric*, or
cophenetic distance), and the number of clusters at ``scale`` equals the number of H0 bars
alive at ``scale`` (``Diagram.betti(scale)[0]``).  :func:`linkage` and :func:`dendrogram`
expose that hierarchy with SciPy's conventions.

Scale convention (the same as the persistence engines): an edge of length exactly ``scale``
is in the complex at ``scale`` (``<=``).  Everything here is pure NumPy/SciPy; no model.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

import numpy as np

from .._validation import check_index, check_int, check_positive_int, check_scale, check_simplex_dim
from ..errors import InvalidInputError, InvalidMatrixError
from .persistence import validate_distance_matrix

__all__ = [
    "Complex",
    "complex_at",
    "edge_birth",
    "connection_scale",
    "connection_scales",
    "simplex_scale",
    "clusters_at",
    "linkage",
    "dendrogram",
    "cophenetic_matrix",
    "MAX_SIMPLICES",
]

#: Default cap on the number of simplices of one dimension :func:`complex_at` builds
#: (a complete complex on 512 tokens has 22 million triangles).
MAX_SIMPLICES = 5_000_000

# rows of the (simplices × n) common-neighbour masks built at once (memory bound)
_CHUNK_ELEMENTS = 8 * 2**20


# ------------------------------------------------------------------ argument checks
def _check_scale_arg(scale: Any, unit: str = "the unit of the distances") -> float:
    """``scale`` as a float >= 0 (inf = everything); ``unit`` says in the error what scale it is."""
    return check_scale(scale, "scale", unit=unit)


def _check_labels(labels: Any, n: int) -> list[str] | None:
    if labels is None:
        return None
    if isinstance(labels, str):
        raise InvalidInputError(
            "labels must be a sequence of strings (one per token), not a string"
        )
    out = [str(x) for x in labels]
    if len(out) != n:
        raise InvalidInputError(f"got {len(out)} labels for {n} tokens: give one label per token")
    return out


def _validated(D: Any) -> np.ndarray:
    """Validated float64 matrix, exactly symmetric (the mean of D and D.T, as persistence uses)."""
    A = validate_distance_matrix(D)
    if not np.array_equal(A, A.T):
        A = (A + A.T) / 2.0
    return A


def _check_token(i: Any, n: int, name: str) -> int:
    return check_index(i, n, "token", name=name, owner="the matrix")


# ----------------------------------------------------------------------- the complex
@dataclass(frozen=True, eq=False)
class Complex:
    """The Vietoris–Rips complex of a distance matrix at one ``scale``.

    Build it with :func:`complex_at`.  Simplices are stored as arrays, vertices of each
    simplex in increasing order, simplices in lexicographic order of their vertices;
    the tuple views (:attr:`edges`, :attr:`triangles`, :attr:`tetrahedra`) are built from
    them on access.

    Attributes
    ----------
    scale : float
        The scale: a simplex is present when all its pairwise distances are ``<= scale``.
    n_vertices : int
        Number of tokens; every token is a vertex, isolated ones included.
    max_simplex_dim : int
        Highest simplex dimension built (1 edges, 2 triangles, 3 tetrahedra).  Not a
        homology dimension: a complex built up to triangles determines H0 and H1.
    simplex_arrays : tuple of ndarray
        ``simplex_arrays[k - 1]`` is the int64 array of shape (m_k, k + 1) of the
        k-simplices (k = 1..max_simplex_dim).
    birth_arrays : tuple of ndarray
        ``birth_arrays[k - 1]`` is the float64 array of shape (m_k,) of their births (the
        largest pairwise distance among their vertices: where they enter the filtration).
    labels : list of str or None
        Token labels (for :meth:`named`).
    """

    scale: float
    n_vertices: int
    max_simplex_dim: int
    simplex_arrays: tuple[np.ndarray, ...]
    birth_arrays: tuple[np.ndarray, ...]
    labels: list[str] | None = None
    _components: np.ndarray = field(default=None, repr=False)  # type: ignore[assignment]

    # ------------------------------------------------------------------ views
    @property
    def vertices(self) -> list[int]:
        """All token indices ``0..n-1`` (isolated tokens included)."""
        return list(range(self.n_vertices))

    def _tuples(self, k: int) -> list[tuple]:
        if k > self.max_simplex_dim:
            return []
        s, b = self.simplex_arrays[k - 1], self.birth_arrays[k - 1]
        return [tuple(row) + (birth,) for row, birth in zip(s.tolist(), b.tolist())]

    @property
    def edges(self) -> list[tuple[int, int, float]]:
        """``[(i, j, birth), ...]`` with ``i < j`` and ``birth = D[i, j] <= scale``."""
        return self._tuples(1)

    @property
    def triangles(self) -> list[tuple[int, int, int, float]]:
        """``[(i, j, k, birth), ...]``, ``i < j < k``, birth = the longest of the three sides
        (empty when built with ``max_simplex_dim=1``)."""
        return self._tuples(2)

    @property
    def tetrahedra(self) -> list[tuple[int, int, int, int, float]]:
        """``[(i, j, k, l, birth), ...]`` (only with ``max_simplex_dim=3``; empty otherwise)."""
        return self._tuples(3)

    def simplices(self, dim: int) -> np.ndarray:
        """int ndarray of shape (m, dim + 1): the ``dim``-simplices (dim 0: the vertices)."""
        if dim == 0:
            return np.arange(self.n_vertices, dtype=np.int64)[:, None]
        check_int(dim, "dim", lo=0, hi=self.max_simplex_dim, hint="the simplex dimensions built")
        return self.simplex_arrays[dim - 1]

    def births(self, dim: int) -> np.ndarray:
        """float ndarray of shape (m,): births of the ``dim``-simplices (0 for vertices)."""
        if dim == 0:
            return np.zeros(self.n_vertices)
        self.simplices(dim)  # validates dim
        return self.birth_arrays[dim - 1]

    def counts(self) -> np.ndarray:
        """Number of simplices per dimension 0..max_simplex_dim, int ndarray of that length + 1."""
        return np.array([self.n_vertices] + [len(s) for s in self.simplex_arrays], dtype=np.int64)

    def euler_characteristic(self) -> int:
        """Alternating sum of the simplex counts (of the simplices built)."""
        c = self.counts()
        return int(sum((-1) ** k * int(x) for k, x in enumerate(c)))

    def named(self, *, dim: int = 1) -> list[tuple]:
        """Simplices of dimension ``dim`` with token labels: ``[(label_i, label_j, …, birth)]``."""
        labels = (
            self.labels if self.labels is not None else [str(i) for i in range(self.n_vertices)]
        )
        s, b = self.simplices(dim), self.births(dim)
        return [
            tuple(labels[v] for v in row) + (birth,) for row, birth in zip(s.tolist(), b.tolist())
        ]

    # ------------------------------------------------------------- components
    def _labels_of_components(self) -> np.ndarray:
        if self._components is None:
            object.__setattr__(
                self, "_components", _component_labels(self.n_vertices, self.simplex_arrays[0])
            )
        return self._components

    @property
    def n_components(self) -> int:
        """Number of connected components (isolated tokens count as one each)."""
        lab = self._labels_of_components()
        return int(lab.max()) + 1 if lab.size else 0

    def components(self) -> list[np.ndarray]:
        """The connected components as int arrays of token indices.

        Each array is sorted; components are ordered by their smallest token.
        """
        lab = self._labels_of_components()
        order = np.argsort(lab, kind="stable")
        cuts = np.flatnonzero(np.diff(lab[order])) + 1
        return [np.asarray(c, dtype=np.int64) for c in np.split(order, cuts)]

    def component_labels(self) -> np.ndarray:
        """int ndarray of shape (n,): the component of each token (numbered by smallest token)."""
        return self._labels_of_components().copy()

    def betti(self) -> np.ndarray:
        """Betti numbers (Z/2 coefficients) of the complex at ``scale``,
        dims ``0..max_simplex_dim-1``.

        Only dimensions below :attr:`max_simplex_dim` are returned: they are determined by
        the simplices built (a ``k``-cycle is killed by ``(k+1)``-simplices), and they equal
        the Betti numbers of the whole Vietoris–Rips complex at ``scale``, i.e.
        ``persistence(D, maxdim=k).betti(scale)`` for ``k < max_simplex_dim``.  Uses gudhi for
        dims ≥ 1.

        Returns
        -------
        int ndarray of shape (max_simplex_dim,)
        """
        b0 = self.n_components
        if self.max_simplex_dim == 1:
            return np.array([b0], dtype=np.int64)
        import gudhi

        st = gudhi.SimplexTree()
        st.insert_batch(
            np.arange(self.n_vertices, dtype=np.int32)[None, :], np.zeros(self.n_vertices)
        )
        for k, (s, b) in enumerate(zip(self.simplex_arrays, self.birth_arrays), start=1):
            if len(s):
                st.insert_batch(np.ascontiguousarray(s.T, dtype=np.int32), b)
        st.compute_persistence(homology_coeff_field=2, persistence_dim_max=True)
        bet = list(st.betti_numbers())
        out = np.zeros(self.max_simplex_dim, dtype=np.int64)
        out[0] = b0
        for d in range(1, self.max_simplex_dim):
            out[d] = bet[d] if d < len(bet) else 0
        return out

    def __repr__(self) -> str:
        names = ("edges", "triangles", "tetrahedra")
        parts = ", ".join(f"{len(s)} {names[k]}" for k, s in enumerate(self.simplex_arrays))
        return f"Complex(scale={self.scale:g}, {self.n_vertices} vertices, {parts})"


def _component_labels(n: int, edges: np.ndarray) -> np.ndarray:
    """Connected-component label of each vertex, numbered in order of smallest vertex."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    if n == 0:
        return np.zeros(0, dtype=np.int64)
    g = (
        coo_matrix(
            (np.ones(len(edges), dtype=np.int8), (edges[:, 0], edges[:, 1])), shape=(n, n)
        ).tocsr()
        if len(edges)
        else coo_matrix((n, n), dtype=np.int8).tocsr()
    )
    _, lab = connected_components(g, directed=False)
    return _renumber(lab)


def _renumber(lab: np.ndarray) -> np.ndarray:
    """Relabel clusters 0, 1, … in order of their smallest member."""
    lab = np.asarray(lab)
    _, first = np.unique(lab, return_index=True)
    order = np.argsort(first)  # cluster ids sorted by first appearance
    uniq = np.unique(lab)
    mapping = np.empty(uniq.size, dtype=np.int64)
    mapping[order] = np.arange(uniq.size)
    return mapping[np.searchsorted(uniq, lab)]


def _expand(
    prev: np.ndarray, adj: np.ndarray, D: np.ndarray, prev_births: np.ndarray, limit: int, what: str
) -> tuple[np.ndarray, np.ndarray]:
    """(k+1)-simplices from k-simplices: add every common neighbour larger than the last vertex.

    ``adj`` is the symmetric boolean adjacency (no diagonal).  Works on chunks of the
    (simplices × n) common-neighbour mask, so memory stays bounded.
    """
    n = adj.shape[0]
    m = len(prev)
    if m == 0:
        return np.zeros((0, prev.shape[1] + 1), dtype=np.int64), np.zeros(0)
    # neighbours larger than j: upper-triangular adjacency
    upper = np.triu(adj, 1)
    step = max(1, _CHUNK_ELEMENTS // max(1, n))
    simp, births = [], []
    total = 0
    for s in range(0, m, step):
        blk = prev[s : s + step]
        mask = upper[blk[:, -1]]
        for c in range(blk.shape[1] - 1):
            mask &= adj[blk[:, c]]
        rows, new = np.nonzero(mask)
        total += rows.size
        if total > limit:
            raise InvalidInputError(
                f"the complex at this scale has more than {limit} {what}: lower scale or "
                "max_simplex_dim, or raise max_simplices"
            )
        if rows.size == 0:
            continue
        verts = blk[rows]
        b = prev_births[s + rows]
        for c in range(verts.shape[1]):
            b = np.maximum(b, D[verts[:, c], new])
        simp.append(np.column_stack([verts, new]))
        births.append(b)
    if not simp:
        return np.zeros((0, prev.shape[1] + 1), dtype=np.int64), np.zeros(0)
    return np.concatenate(simp).astype(np.int64), np.concatenate(births)


def complex_at(
    D: Any,
    scale: float,
    *,
    max_simplex_dim: int = 2,
    labels: Sequence[str] | None = None,
    max_simplices: int = MAX_SIMPLICES,
) -> Complex:
    """The Vietoris–Rips complex of ``D`` at ``scale``.

    Parameters
    ----------
    D : array-like of shape (n, n)
        Distance matrix (validated as by :func:`~attntopo.topology.persistence`: finite,
        non-negative, symmetric, zero diagonal).
    scale : float
        Scale, ``>= 0``: an edge joins ``i < j`` when ``D[i, j] <= scale``; a triangle (a
        tetrahedron) is present when all its sides are edges.  ``inf`` gives the full simplex.
    max_simplex_dim : {1, 2, 3}
        Highest simplex dimension to build: 1 edges, 2 triangles (default), 3 tetrahedra.
        (A simplex dimension, not a homology dimension.)
    labels : sequence of str of length n, optional
        Token labels, kept on the complex for :meth:`Complex.named`.
    max_simplices : int
        Refuse (``InvalidInputError``) to build more simplices than this in one dimension.

    Returns
    -------
    Complex
        Vertices ``0..n-1`` (isolated tokens stay), edges ``(i, j, birth)``, triangles
        ``(i, j, k, birth)`` with ``birth`` the longest side, tetrahedra if asked.

    Notes
    -----
    Vectorized: edges come from the boolean adjacency ``D <= scale``; each ``k``-simplex is
    extended by the common neighbours of its vertices that are larger than its last vertex
    (one boolean AND of adjacency rows per vertex, for a block of simplices at once), so
    every simplex is produced exactly once and no Python loop runs over all triples.

    Examples
    --------
    >>> import numpy as np
    >>> D = np.array([[0, .1, .2, .9], [.1, 0, .15, .9], [.2, .15, 0, .9], [.9, .9, .9, 0]])
    >>> cx = complex_at(D, 0.2)
    >>> cx.edges
    [(0, 1, 0.1), (0, 2, 0.2), (1, 2, 0.15)]
    >>> cx.triangles
    [(0, 1, 2, 0.2)]
    >>> cx.n_components            # token 3 is isolated
    2
    """
    A = _validated(D)
    scale = _check_scale_arg(scale)
    top = check_simplex_dim(max_simplex_dim)
    n = A.shape[0]
    lab = _check_labels(labels, n)
    max_simplices = check_positive_int(max_simplices, "max_simplices", allow_none=False)
    adj = A <= scale
    np.fill_diagonal(adj, False)
    iu, ju = np.nonzero(np.triu(adj, 1))
    if iu.size > max_simplices:
        raise InvalidInputError(
            f"the complex at this scale has {iu.size} edges, more than "
            f"max_simplices={max_simplices}: lower scale or raise max_simplices"
        )
    edges = np.column_stack([iu, ju]).astype(np.int64).reshape(-1, 2)
    eb = A[iu, ju].astype(np.float64)
    simp = [edges]
    births = [eb]
    names = {2: "triangles", 3: "tetrahedra"}
    for k in range(2, top + 1):
        s, b = _expand(simp[-1], adj, A, births[-1], int(max_simplices), names[k])
        simp.append(s)
        births.append(b)
    for a in simp + births:
        a.setflags(write=False)
    return Complex(
        scale=scale,
        n_vertices=n,
        max_simplex_dim=top,
        simplex_arrays=tuple(simp),
        birth_arrays=tuple(births),
        labels=lab,
    )


# ------------------------------------------------------------------ pairs and sets
def edge_birth(D: Any, i: int, j: int) -> float:
    """Scale at which tokens ``i`` and ``j`` get an edge: their distance ``D[i, j]``."""
    A = _validated(D)
    n = A.shape[0]
    return float(A[_check_token(i, n, "i"), _check_token(j, n, "j")])


def connection_scales(D: Any) -> np.ndarray:
    """Minimax path distance of every pair: the subdominant ultrametric of ``D``.

    A torch tensor (on any device) goes through :func:`attntopo.topology.single_linkage`: the
    minimum spanning tree and its sort where the tensor is, the cophenetic matrix on the host.

    ``U[i, j]`` is the smallest ``scale`` at which ``i`` and ``j`` lie in one connected
    component of the ``scale``-graph: the minimum over paths from ``i`` to ``j`` of the
    longest edge on the path, which is the largest edge on their path in a minimum
    spanning tree and the height where single linkage merges them.

    Parameters
    ----------
    D : array-like of shape (n, n)

    Returns
    -------
    ndarray of shape (n, n), float64
        Symmetric, zero diagonal, ``U <= D`` entrywise, an ultrametric
        (``U[i, k] <= max(U[i, j], U[j, k])``); every value is an entry of ``D``.

    Notes
    -----
    Computed as the cophenetic matrix of SciPy's single linkage (an O(n²) minimum
    spanning tree); zero distances between distinct tokens are handled.
    """
    if _is_tensor(D):
        if D.ndim == 2 and D.shape == (1, 1):
            return np.zeros((1, 1))
        return cophenetic_matrix(_tensor_linkage(D))
    A = _validated(D)
    return _ultrametric(A)


def _ultrametric(A: np.ndarray) -> np.ndarray:
    n = A.shape[0]
    if n == 1:
        return np.zeros((1, 1))
    return cophenetic_matrix(_linkage(A))


def cophenetic_matrix(Z: np.ndarray) -> np.ndarray:
    """The ``(n, n)`` cophenetic matrix (merge height of every pair) of a linkage matrix
    ``Z`` of shape ``(n - 1, 4)``: symmetric, float64, zero diagonal."""
    from scipy.cluster.hierarchy import cophenet, is_valid_linkage
    from scipy.spatial.distance import squareform

    Z = np.asarray(Z)
    if (
        Z.ndim != 2
        or Z.shape[1:] != (4,)
        or not np.issubdtype(Z.dtype, np.number)
        or not is_valid_linkage(Z.astype(np.float64))
    ):
        raise InvalidMatrixError(
            f"Z must be a linkage matrix of shape (n - 1, 4) in SciPy's format (single_linkage "
            f"gives one per head), got shape {Z.shape}"
        )
    U = squareform(cophenet(Z.astype(np.float64)))
    # heights are entries of D already; make the matrix exactly symmetric with a zero diagonal
    np.fill_diagonal(U, 0.0)
    return U


def connection_scale(D: Any, i: int, j: int) -> float:
    """Smallest scale at which tokens ``i`` and ``j`` are connected (minimax path distance).

    See :func:`connection_scales`.  Always ``<= edge_birth(D, i, j)``.
    """
    A = _validated(D)
    n = A.shape[0]
    i = _check_token(i, n, "i")
    j = _check_token(j, n, "j")
    if i == j:
        return 0.0
    return float(_ultrametric(A)[i, j])


def simplex_scale(D: Any, tokens: Iterable[int]) -> float:
    """Scale at which a set of tokens spans a simplex: its largest pairwise distance.

    A single token gives 0.  Repeated indices are an error.
    """
    A = _validated(D)
    n = A.shape[0]
    if isinstance(tokens, (int, np.integer)):
        tokens = [tokens]
    idx = [_check_token(t, n, "token") for t in tokens]
    if not idx:
        raise InvalidInputError("tokens must hold at least one token index")
    if len(set(idx)) != len(idx):
        raise InvalidInputError(f"tokens must be distinct, got {idx}")
    sub = A[np.ix_(idx, idx)]
    return float(sub.max())


# ----------------------------------------------------------- clusters and hierarchy
def _linkage(A: np.ndarray) -> np.ndarray:
    from scipy.cluster.hierarchy import linkage as _sc_linkage
    from scipy.spatial.distance import squareform

    return _sc_linkage(squareform(A, checks=False), method="single")


def _is_tensor(D: Any) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(D, torch.Tensor)


def _tensor_linkage(D: Any) -> np.ndarray:
    """:func:`attntopo.topology.single_linkage` of one ``(n, n)`` tensor, on its device."""
    from ._mst import single_linkage

    if D.ndim != 2 or D.shape[0] != D.shape[1]:
        raise InvalidMatrixError(f"D must be a square (n, n) matrix, got shape {tuple(D.shape)}")
    if D.shape[0] < 2:
        raise InvalidInputError("a linkage needs at least 2 tokens")
    return single_linkage(D[None])[0]


def linkage(D: Any) -> np.ndarray:
    """Single-linkage hierarchy of the tokens (SciPy's linkage-matrix format).

    Parameters
    ----------
    D : array-like or torch.Tensor of shape (n, n), n >= 2
        A tensor (on any device, not validated) goes through
        :func:`attntopo.topology.single_linkage`: the minimum spanning tree and its sort on
        the tensor's device, only the ``n - 1`` edges to the host.  Among equal heights the
        merges may then come in another order than SciPy's (the same clusters at every cut).

    Returns
    -------
    ndarray of shape (n - 1, 4)
        Row ``t`` merges clusters ``Z[t, 0]`` and ``Z[t, 1]`` at height ``Z[t, 2]`` into a
        cluster of ``Z[t, 3]`` tokens.  The heights are exactly the finite H0 deaths of
        ``persistence(D)`` (the minimum-spanning-tree edge lengths), sorted.
    """
    if _is_tensor(D):
        return _tensor_linkage(D)
    A = _validated(D)
    if A.shape[0] < 2:
        raise InvalidInputError("a linkage needs at least 2 tokens")
    return _linkage(A)


def dendrogram(D: Any, *, labels: Sequence[str] | None = None) -> dict:
    """The single-linkage dendrogram as data (no drawing).

    Returns SciPy's ``dendrogram(..., no_plot=True)`` dictionary: ``icoord``/``dcoord``
    (the U-shaped links; heights are merge scales), ``ivl`` (leaf labels, left to right),
    ``leaves`` (token indices, left to right), plus ``linkage`` (the matrix of
    :func:`linkage`).  Draw it with matplotlib or :func:`scipy.cluster.hierarchy.dendrogram`.
    """
    from scipy.cluster.hierarchy import dendrogram as _sc_dendrogram

    Z = linkage(D)
    n = Z.shape[0] + 1
    lab = _check_labels(labels, n)
    out = _sc_dendrogram(Z, no_plot=True, labels=lab)
    out["linkage"] = Z
    return out


def clusters_at(D: Any, scale: float) -> np.ndarray:
    """Token clusters at ``scale``: connected components of the ``scale``-graph.

    Equivalently the single-linkage clusters cut at height ``scale`` (tokens whose connection
    scale is ``<= scale``).  Their number equals the number of H0 bars alive at ``scale``,
    ``persistence(D).betti(scale)[0]``.

    Parameters
    ----------
    D : array-like of shape (n, n)
    scale : float, >= 0

    Returns
    -------
    int ndarray of shape (n,)
        Cluster of each token, numbered 0, 1, … in order of each cluster's smallest token.
    """
    A = _validated(D)
    scale = _check_scale_arg(scale)
    adj = A <= scale
    np.fill_diagonal(adj, False)
    iu, ju = np.nonzero(np.triu(adj, 1))
    return _component_labels(A.shape[0], np.column_stack([iu, ju]).reshape(-1, 2))
