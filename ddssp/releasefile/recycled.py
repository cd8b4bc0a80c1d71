"""The ``recycled`` section of release.json: one-way marginals summed from discovery's noisy grid
counts (:mod:`ddssp.marginals.recycled`), written, read back and summarised.

Each entry names its column, the index of the ``discover-counts`` ledger entry that paid for the
counts, that entry's sigma, how many grid cells each level sums (0: the level is not measured) and
the array of the sums (int64). The self-check ties each to its charge
(:func:`ddssp.marginals.recycled.recycled_problem`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ddssp.marginals.recycled import RecycledMeasurement


def write_recycled(recycled: list[RecycledMeasurement], arrays: dict[str, np.ndarray]) -> list[dict[str, Any]]:
    """The section's entries, each sum array added to ``arrays`` under ``recycled/<i>``.

    Parameters
    ----------
    recycled : list of RecycledMeasurement
        The release's recycled one-way marginals.
    arrays : dict
        The file's arrays by name (added to).

    Returns
    -------
    list of dict
    """
    out = []
    for i, r in enumerate(recycled):
        name = f"recycled/{i}"
        arrays[name] = np.asarray(r.values).astype("<i8")
        cells = [int(k) for k in r.cells]
        out.append(
            {"clique": list(r.clique), "sigma": float(r.sigma), "entry": int(r.entry), "cells": cells, "array": name}
        )
    return out


def read_recycled(items: Any, arrays: dict[str, np.ndarray]) -> list[RecycledMeasurement]:
    """The recycled one-way marginals release.json lists, with their arrays.

    Parameters
    ----------
    items : list
        The section's entries.
    arrays : dict
        The file's arrays by name.

    Returns
    -------
    list of RecycledMeasurement

    Raises
    ------
    ValueError, KeyError, TypeError
        For a malformed entry (the caller reports an invalid release).
    """
    if not isinstance(items, list):
        raise ValueError("recycled must be a list")
    out = []
    for r in items:
        cells = np.asarray([int(k) for k in r["cells"]], dtype=np.int64)
        values = np.asarray(arrays[r["array"]], dtype=float).reshape(-1)
        clique = tuple(str(c) for c in r["clique"])
        out.append(RecycledMeasurement(clique, values, cells, float(r["sigma"]), int(r["entry"])))
    return out


def marginal_arrays(doc: dict[str, Any], domain: dict[str, int]) -> list[tuple[str, tuple[int, ...]]]:
    """The arrays of release.json's measurements and recycled marginals, with the shape each must
    have (its columns' levels), for the bounded reading.

    Parameters
    ----------
    doc : dict
        release.json.
    domain : dict
        The schema's ``{column: levels}``.

    Returns
    -------
    list of (array name, shape)

    Raises
    ------
    ValueError
        For a marginal on columns the schema does not have (a recycled one: not one column).
    """
    out = []
    for m in doc["measurements"]:
        clique = m["clique"]
        if not isinstance(clique, list) or not clique or any(c not in domain for c in clique):
            raise ValueError(f"measurement on unknown columns {clique!r}")
        out.append((m["array"], tuple(domain[c] for c in clique)))
    items = doc.get("recycled", [])
    if not isinstance(items, list):
        raise ValueError("recycled must be a list")
    for r in items:
        clique = r["clique"]
        if not isinstance(clique, list) or len(clique) != 1 or clique[0] not in domain:
            raise ValueError(f"recycled measurement on {clique!r}: not one column of the schema")
        out.append((r["array"], (domain[clique[0]],)))
    return out


def recycled_summary(recycled: list[RecycledMeasurement]) -> list[dict[str, Any]]:
    """What ``inspect`` shows of each: column, measured levels of all, their sigmas, the ledger entry.

    Parameters
    ----------
    recycled : list of RecycledMeasurement
        The release's recycled one-way marginals.

    Returns
    -------
    list of dict
    """
    return [
        {
            "clique": list(r.clique),
            "levels": int(np.count_nonzero(r.cells)),
            "size": int(len(r.cells)),
            "sigma": [float(x) for x in r.sigmas if np.isfinite(x)],
            "entry": int(r.entry),
        }
        for r in recycled
    ]
