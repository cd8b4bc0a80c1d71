"""Exact scores of a release against the sensitive data it came from (NOT private).

:func:`compare` measures the total-variation error of every one- and two-way marginal of the
release's model against the data's exact counts and, with a target, the DD-SSP regression from the
release against the same regression on the data's exact marginals. Everything it returns is an
exact statistic of the data: :data:`BANNER` says so wherever it is shown.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ddssp.marginals.workload import total_variation as tv

BANNER = "NOT FOR PUBLICATION: this report holds exact statistics of the sensitive data (no privacy)"

__all__ = ["BANNER", "compare", "tv"]


def compare(rel: Any, codes: pd.DataFrame, target=None, model=None, features=None) -> dict:
    """Errors of a release against the integer codes of the data, as a plain dict (not private).

    The one-way and two-way total-variation errors of the release's model against the data, and with
    ``target`` the DD-SSP regression from the release against the same regression on the data's
    exact marginals. :func:`evaluate` wraps this in a :class:`QualityReport`.

    Parameters
    ----------
    rel : Release
        The release.
    codes : pandas.DataFrame
        The data, encoded with the release's schema.
    target : str, optional
        Also compare the DD-SSP regression of this column.
    model : str, optional
        ``"linear"`` or ``"logistic"`` (default: logistic for a two-level target, else linear).
    features : list of str, optional
        The regression's features (default: all other columns).

    Returns
    -------
    dict
        ``rows_data``, ``rows_release``, ``one_way``, ``two_way``, ``two_way_mean_tv``,
        ``two_way_max_tv`` and, with a target, ``regression``.

    Raises
    ------
    SchemaError
        For a target not in the schema.
    DDSSPError
        When the regression cannot be fitted (e.g. a logistic target without two levels).
    """
    import itertools

    from ddssp.errors import DDSSPError
    from ddssp.estimators.suffstats import ExactMarginals

    schema = rel.schema
    names = list(schema.names)
    exact = ExactMarginals(codes, schema)
    one = {}
    for c in names:
        d, r = exact.marginal([c]), rel.marginal([c])
        one[c] = {
            "tv": tv(d, r),
            "data": (d / d.sum()).tolist(),
            "release": (np.clip(r, 0, None) / max(r.sum(), 1e-300)).tolist(),
            "labels": [str(x) for x in (getattr(schema.column(c), "labels", None) or range(schema.domain[c]))],
        }
    pairs = {}
    for a, b in itertools.combinations(names, 2):
        pairs[(a, b)] = tv(exact.marginal([a, b]), rel.marginal([a, b]))
    out = {
        "rows_data": int(len(codes)),
        "rows_release": float(rel.total),
        "one_way": one,
        "two_way": [{"columns": list(k), "tv": v} for k, v in sorted(pairs.items(), key=lambda kv: -kv[1])],
        "two_way_mean_tv": float(np.mean(list(pairs.values()))) if pairs else 0.0,
        "two_way_max_tv": float(max(pairs.values())) if pairs else 0.0,
    }
    if target is not None:
        from ddssp.estimators.ddssp import DDSSPLinearRegression, DDSSPLogisticRegression

        schema.column(target)
        if model is None:
            model = "logistic" if schema.domain[target] == 2 else "linear"
        cls = DDSSPLogisticRegression if model == "logistic" else DDSSPLinearRegression
        try:
            r = cls(features=features).fit(rel, target)
            d = cls(features=features).fit(exact, target)
        except DDSSPError:
            raise
        coef_r = np.concatenate([[r.intercept_], r.coef_])
        coef_d = np.concatenate([[d.intercept_], d.coef_])
        out["regression"] = {
            "target": target,
            "model": model,
            "coefficients": [
                {"name": n, "release": float(x), "data": float(y)}
                for n, x, y in zip(["intercept"] + list(r.feature_names_in_), coef_r, coef_d)
            ],
            "max_abs_diff": float(np.max(np.abs(coef_r - coef_d))),
            "rel_l2_error": float(np.linalg.norm(coef_r - coef_d) / max(np.linalg.norm(coef_d), 1e-300)),
        }
    return out
