"""The agency benchmark's bins recipes: the numeric columns' declared edges (a partial schema,
:func:`bins_schema`), the columns left to the release as quantile bins (:func:`quantile_hints`) and
SDNist's density bins (:func:`density_edges`). Public choices only: nothing here reads data.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

#: The agency recipe's default bins: an edge at every age SDNist's checks name (3, 5, 15, 16), income
#: and income-to-poverty ratio at round numbers; N (not applicable) is each column's missing level.
DEFAULT_BINS = {
    "AGEP": [0, 3, 5, 10, 15, 16, 18, 20, 25, 30, 35, 40, 45, 50, 55, 60, 65, 70, 75, 80, 85, 100],
    "PINCP": [-9000, 0, 1, 5000, 10000, 15000, 20000, 25000, 30000, 40000, 50000, 60000, 75000, 100000]
    + [150000, 200000, 300000, 1341001],
    "POVPIP": [0, 50, 100, 150, 200, 250, 300, 350, 400, 450, 501, 502],
    "within": "uniform",
}
#: The counts top-coded (NOC at 10, NPF at 14), one bin per count: the dictionary's 20 levels of each
#: are mostly empty, and every empty level takes noisy cells in every marginal with the column.
TOPCODED_COUNTS = {"NOC": list(range(0, 12)), "NPF": list(range(2, 16))}
#: counts a recipe may top-code: each bin decodes to its lowest value
COUNTS = ("NOC", "NPF")
#: The same top-codes as reviewed ranges of the codebook (``ranges``): the dictionary's bounds of NOC
#: and NPF narrowed to 0..10 and 2..14 (values above clip to the top), one level per whole number,
#: so that the release marks empty the levels its noisy counts show no rows in.
TOPCODED_RANGES = {"NOC": [0, 10], "NPF": [2, 14]}


#: The ``quantiles`` recipe's codebook fields: AGEP, PINCP and POVPIP left to the release as 20
#: equal-frequency bins each (SDNist reads them in 20 percentile bins), cut from noisy counts inside
#: the dictionary's bounds; AGEP keeps an edge at every age the rules name, PINCP's cells end just
#: above whole thousands (incomes heap there). POVPIP's top-code 501 stays in the ranks, as SDNist
#: ranks it (it holds 37-61% of the rows, so it is a bin of its own anyway); leaving it out as a
#: declared point scored 0.8-1.3 lower in seeded releases (benchmarks page, "Agencies, round 7").
QUANTILE_HINTS = {
    "AGEP": {"bins": 20, "cuts": [3, 5, 15, 16, 18]},
    "PINCP": {"bins": 20, "step": 1000},
    "POVPIP": {"bins": 20},
}


def quantile_hints(bins: dict) -> dict:
    """The codebook fields of the columns a recipe leaves to quantile bins (``quantiles``: true for
    all of :data:`QUANTILE_HINTS`, or a list of them).

    Parameters
    ----------
    bins : dict
        The recipe.

    Returns
    -------
    dict
        ``{column: fields}``.
    """
    q = bins.get("quantiles", False)
    names = list(QUANTILE_HINTS) if q is True else (q or [])
    return {c: QUANTILE_HINTS[c] for c in names}


def density_edges(dictionary: dict) -> list[float]:
    """SDNist's bins of population density: 20 log-spaced edges from 10 to the maximum + 500, the
    lowest eight replaced by one bin (0, 150].

    Parameters
    ----------
    dictionary : dict
        The data dictionary (``DENSITY.values.max``).

    Returns
    -------
    list of float
    """
    top = float(dictionary["DENSITY"]["values"]["max"]) + 500.0
    return [0.0, 150.0] + [float(x) for x in np.logspace(1.0, math.log10(top), 21)[8:]]


def _within_uniform(edges: list[float], whole: bool) -> dict:
    """A declared ``within``: each bin split at every whole number inside it, equal weights."""
    bins = []
    for lo, hi in zip(edges[:-1], edges[1:]):
        cuts = [float(x) for x in range(int(math.floor(lo)) + 1, int(math.ceil(hi)))] if hi - lo > 1 else []
        if len(cuts) > 200:  # a wide bin: cuts at 100 equal steps
            cuts = [float(x) for x in np.round(np.linspace(lo, hi, 101)[1:-1])]
            cuts = sorted(set(c for c in cuts if lo < c < hi))
        bins.append({"cuts": cuts, "weights": [1.0] * (len(cuts) + 1)} if cuts else None)
    return {"bins": bins, "whole": whole} if whole else {"bins": bins}


def binned_columns(columns: list[str], bins: dict) -> tuple[str, ...]:
    """The released columns a bins recipe declares (DENSITY always, at SDNist's bins).

    Parameters
    ----------
    columns : list of str
        The released columns.
    bins : dict
        The recipe.

    Returns
    -------
    tuple of str
    """
    quantiles = quantile_hints(bins)
    return tuple(
        c
        for c in columns
        if c == "DENSITY" or (c in bins and c not in ("within", "ranges", "quantiles") and c not in quantiles)
    )


def bins_schema(columns: list[str], bins: dict, dictionary: dict) -> dict:
    """A partial schema (``ddssp-schema/1``) declaring the bins of the released numeric columns.

    AGEP, PINCP and POVPIP get the recipe's edges (N, not applicable, is PINCP's and POVPIP's
    missing level), each bin's representative value a whole number inside it and, with ``within =
    "uniform"``, its values spread evenly over the whole numbers inside it (public: no data is read);
    DENSITY gets SDNist's density bins.

    Parameters
    ----------
    columns : list of str
        The released columns.
    bins : dict
        The recipe: ``AGEP``, ``PINCP``, ``POVPIP`` edge lists and ``within``.
    dictionary : dict
        The data dictionary (DENSITY's maximum).

    Returns
    -------
    dict
    """
    out = []
    for name in binned_columns(columns, bins):
        if name == "DENSITY":
            continue
        e = [float(x) for x in bins[name]]
        count = name in COUNTS  # a top-coded count: the bin's lowest value, no spread
        values = [a if count or b - a <= 1 else float(int((a + b - 1) // 2)) for a, b in zip(e[:-1], e[1:])]
        col: dict[str, Any] = {"name": name, "kind": "numeric", "edges": e, "values": values}
        if "N" in dictionary.get(name, {}).get("values", {}):
            col["missing"] = "N"
        if bins.get("within", "uniform") == "uniform" and not count:
            col["within"] = _within_uniform(e, whole=True)
        out.append(col)
    if "DENSITY" in columns:
        out.append({"name": "DENSITY", "kind": "numeric", "edges": density_edges(dictionary)})
    return {"format": "ddssp-schema/1", "columns": out}
