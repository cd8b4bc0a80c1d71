"""How values spread inside the bins of a binned numeric column (:class:`Within`).

A column's optional ``within`` entry splits each bin into a few sub-cells with weights. Synthetic
rows draw a value inside a bin by it; fits and every other decode keep the bin's representative
value. Discovery derives it from the noisy fine-grid counts it already paid for (post-processing);
a schema file may declare it. The column model that carries it is :mod:`ddssp.data.columns`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ddssp.data.values import format_number, int_if_whole
from ddssp.errors import SchemaError

#: most sub-cells per bin a ``within`` entry may have when read from a file
MAX_WITHIN_CELLS = 256


@dataclass(frozen=True)
class Within:
    """How values spread inside each bin of a binned numeric column.

    One entry per bin (the missing level has none): ``None`` (the bin decodes to its representative
    value, e.g. a point mass such as exact zero), or ``(cuts, weights)``: the bin ``[e_i, e_i+1)``
    split at the strictly increasing ``cuts`` (strictly inside the bin) into ``len(cuts) + 1``
    sub-cells with non-negative ``weights`` (not all zero). A value drawn for the bin falls in a
    sub-cell with probability proportional to its weight, uniformly inside it; with ``whole`` it is
    a whole number ``v`` with ``lo <= v < hi`` of the sub-cell (every weighted sub-cell holds one).
    Public: discovery builds it from noisy counts (post-processing), a user may declare it.

    Attributes
    ----------
    bins : tuple
        One entry per bin: None or ``(cuts, weights)``.
    whole : bool
        Draw whole numbers.
    """

    bins: tuple[tuple[tuple[float, ...], tuple[float, ...]] | None, ...]
    whole: bool = False

    def sub_edges(self, i: int, lo: float, hi: float) -> np.ndarray | None:
        """Edges of bin ``i``'s sub-cells.

        Parameters
        ----------
        i : int
            The bin.
        lo, hi : float
            The bin's edges.

        Returns
        -------
        numpy.ndarray or None
            ``[lo, cuts..., hi]``, or None for a representative-value bin.
        """
        b = self.bins[i]
        return None if b is None else np.array([lo, *b[0], hi], dtype=float)

    def to_dict(self) -> dict:
        """The schema-file form ``{"bins": [...], "whole": true}`` (``whole`` only when set).

        Returns
        -------
        dict
        """
        bins = [
            None if b is None else {"cuts": int_if_whole([float(x) for x in b[0]]), "weights": [float(w) for w in b[1]]}
            for b in self.bins
        ]
        d: dict[str, Any] = {"bins": bins}
        if self.whole:
            d["whole"] = True
        return d

    @classmethod
    def from_dict(cls, name: str, d: Any) -> Within:
        """Parse the schema-file form (not yet checked against the bins: :meth:`Column.validate` does that).

        Parameters
        ----------
        name : str
            The column, for messages.
        d : object
            The parsed JSON value.

        Returns
        -------
        Within

        Raises
        ------
        SchemaError
            For a malformed value.
        """
        where = f'column {name!r}: "within"'
        if not isinstance(d, dict) or set(d) - {"bins", "whole"} or not isinstance(d.get("bins"), list):
            raise SchemaError(f'{where} must be an object {{"bins": [...], "whole": true|false}}')
        whole = d.get("whole", False)
        if not isinstance(whole, bool):
            raise SchemaError(f'{where}: "whole" must be true or false')
        out = []
        for i, b in enumerate(d["bins"]):
            if b is None:
                out.append(None)
                continue
            if not isinstance(b, dict) or set(b) != {"cuts", "weights"}:
                raise SchemaError(f'{where}: bin {i} must be null or an object with "cuts" and "weights"')
            cuts, weights = b["cuts"], b["weights"]
            if not isinstance(cuts, list) or not isinstance(weights, list):
                raise SchemaError(f'{where}: bin {i}: "cuts" and "weights" must be lists of numbers')
            if len(weights) > MAX_WITHIN_CELLS:
                raise SchemaError(f"{where}: bin {i} has {len(weights)} sub-cells, more than {MAX_WITHIN_CELLS}")
            nums = cuts + weights
            if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in nums):
                raise SchemaError(f'{where}: bin {i}: "cuts" and "weights" must be lists of numbers')
            out.append((tuple(float(x) for x in cuts), tuple(float(x) for x in weights)))
        return cls(tuple(out), whole)

    def check(self, name: str, edges: list[float]) -> None:
        """Check every entry against its bin (see the class docstring).

        Parameters
        ----------
        name : str
            The column, for messages.
        edges : list of float
            The column's bin edges.

        Raises
        ------
        SchemaError
            Unless every entry fits its bin.
        """
        where = f'column {name!r}: "within"'
        m = len(edges) - 1
        if len(self.bins) != m:
            raise SchemaError(f"{where} has {len(self.bins)} entries for {m} bins")
        if self.whole and not max(abs(edges[0]), abs(edges[-1])) < 2**53:
            raise SchemaError(f'{where}: "whole": true needs bin edges within +-2**53 (whole numbers as floats)')
        for i, b in enumerate(self.bins):  # plain Python: bins hold a few numbers each, and many bins are cheap
            if b is None:
                continue
            cuts, weights = b
            lo, hi = edges[i], edges[i + 1]
            span = f"[{format_number(lo)}, {format_number(hi)})"
            if len(weights) != len(cuts) + 1:
                raise SchemaError(f"{where}: bin {i} {span} has {len(cuts)} cuts, so needs {len(cuts) + 1} weights")
            if len(weights) > MAX_WITHIN_CELLS:
                raise SchemaError(f"{where}: bin {i} has {len(weights)} sub-cells, more than {MAX_WITHIN_CELLS}")
            if not all(math.isfinite(x) for x in (*cuts, *weights)):
                raise SchemaError(f"{where}: bin {i} {span}: cuts and weights must be finite numbers")
            sub = (lo, *cuts, hi)
            if any(v <= u for u, v in zip(sub, sub[1:])):
                raise SchemaError(f"{where}: bin {i}: cuts must increase strictly inside the bin {span}")
            total = sum(weights)
            if any(w < 0 for w in weights) or not 0 < total < math.inf:
                raise SchemaError(f"{where}: bin {i} {span}: weights must be >= 0, not all zero, with a finite sum")
            if self.whole:
                for j, w in enumerate(weights):
                    if w > 0 and math.ceil(sub[j]) >= sub[j + 1]:
                        raise SchemaError(
                            f"{where}: bin {i}: sub-cell [{format_number(sub[j])}, {format_number(sub[j + 1])}) holds no whole "
                            'number but has weight (the column has "whole": true)'
                        )


def trimmed_entry(
    entry: tuple[tuple[float, ...], tuple[float, ...]], a: float, b: float, cut: float, tail: int, whole: bool
) -> tuple[tuple[float, ...], tuple[float, ...]] | None:
    """A bin's within-bin entry with no draws beyond ``cut``: the sub-cells past it get weight 0, the
    one it splits keeps the share of its weight that its part on the kept side holds (by width, or
    by whole numbers), the rest keep theirs. Post-processing of a public entry.

    Parameters
    ----------
    entry : (cuts, weights)
        The bin's entry (see :class:`Within`).
    a, b : float
        The bin.
    cut : float
        Strictly inside the bin.
    tail : int
        1: nothing is drawn from ``cut`` up; -1: nothing below it.
    whole : bool
        The column draws whole numbers.

    Returns
    -------
    (cuts, weights) or None
        None when no weight would be left on the kept side (the entry is then kept as it is).
    """
    if not a < cut < b:
        return None
    sub = np.array([a, *entry[0], b], dtype=float)
    w = np.asarray(entry[1], dtype=float)
    lo, hi = sub[:-1], sub[1:]
    if whole:
        size = np.ceil(hi) - np.ceil(lo)  # whole numbers in each sub-cell
        part = (
            (np.clip(np.ceil(cut), np.ceil(lo), np.ceil(hi)) - np.ceil(lo))
            if tail > 0
            else (np.ceil(hi) - np.clip(np.ceil(cut), np.ceil(lo), np.ceil(hi)))
        )
    else:
        size = hi - lo
        part = (np.clip(cut, lo, hi) - lo) if tail > 0 else (hi - np.clip(cut, lo, hi))
    kept = w * np.divide(part, size, out=np.zeros_like(w), where=size > 0)
    if not kept.sum() > 0:
        return None
    inner = [float(c) for c in entry[0] if (c < cut if tail > 0 else c > cut)]
    if tail > 0:
        cuts = [*inner, cut]
        weights = [*kept[: len(inner) + 1], 0.0]
    else:
        cuts = [cut, *inner]
        weights = [0.0, *kept[len(kept) - len(inner) - 1 :]]
    total = sum(weights)
    rounded = [round(x / total, 5) for x in weights]
    weights = rounded if sum(rounded) > 0 else [x / total for x in weights]
    return tuple(cuts), tuple(float(x) for x in weights)
