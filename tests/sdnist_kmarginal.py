"""Run SDNist 2.4's own k-marginal on two CSV files of the NIST excerpts; print its scores as JSON.

Run with a Python that has ``sdnist==2.4`` installed (it pins old numpy and pandas, so usually a
separate virtual environment): ``python sdnist_kmarginal.py TARGET.csv DEID.csv DICTIONARY.json``.
It follows the steps of SDNist's report on its data (``sdnist.report.dataset.Dataset``): validation
against the data dictionary, the density bins, the codes of the categorical features, the 20
percentile bins of the numeric features, then ``KMarginal`` grouped by PUMA and without groups.
INDP is dropped first, as ``KMarginal`` leaves it out of the features anyway; a feature whose
synthetic values fall outside the dictionary is dropped by SDNist's validation (listed in the
output's ``features``, the features SDNist kept).
"""

from __future__ import annotations

import json
import sys


def _schema(data_dict: dict) -> dict:
    """The schema ``transform`` reads, built from the data dictionary (SDNist ships it with its data).

    A count with a not-applicable value (NOC, NPF) is listed by its values, so that ``transform``
    codes N as -1; the k-marginal compares those codes value for value either way.
    """
    out = {}
    for f, d in data_dict.items():
        vals = list(d.get("values", {}))
        entry = {"has_null": True, "null_value": "N"} if "N" in vals else {}
        if "min" in vals and (f in ("PINCP", "POVPIP") or "N" not in vals):
            entry.update({"min": d["values"]["min"], "max": d["values"]["max"]})
        else:
            entry["values"] = [v for v in vals]
        out[f] = entry
    return out


def main(target_path: str, deid_path: str, dict_path: str) -> None:
    import pandas as pd
    import sdnist.report  # noqa: F401  (loads the package in the order its modules need)
    from sdnist.metrics.kmarginal import KMarginal
    from sdnist.report.dataset.binning import (
        add_bin_for_NA,
        bin_density,
        percentile_rank_synthetic,
        percentile_rank_target,
    )
    from sdnist.report.dataset.transform import transform
    from sdnist.report.dataset.validate import validate

    with open(dict_path) as fh:
        data_dict = json.load(fh)
    schema = _schema(data_dict)
    target = pd.read_csv(target_path, dtype=str, keep_default_na=False).drop(columns=["INDP"])
    deid = pd.read_csv(deid_path, dtype=str, keep_default_na=False)[list(target.columns)]
    features = sorted(target.columns)
    c_deid, _ = validate(deid, data_dict, features)
    c_target, _ = validate(target, data_dict, features)
    features = [c for c in features if c in c_deid.columns]  # validation drops a feature with bad values
    c_target, c_deid = c_target[features], c_deid[features]
    if "DENSITY" in features:
        bin_density(c_target, data_dict)
        bin_density(c_deid, data_dict)
    t_target, t_deid = transform(c_target, schema), transform(c_deid, schema)
    numeric = ["AGEP", "POVPIP", "PINCP", "PWGTP", "WGTP"]
    d_target = add_bin_for_NA(percentile_rank_target(c_target, numeric), c_target, numeric)
    d_deid = percentile_rank_synthetic(c_deid, c_target, d_target, numeric)
    d_deid = add_bin_for_NA(d_deid, c_deid, numeric)
    other = [c for c in features if c not in numeric]
    d_target[other] = t_target[other]
    d_deid[other] = t_deid[other]
    grouped = KMarginal(d_target, d_deid, ["PUMA"])
    grouped.compute_score()
    plain = KMarginal(d_target.drop(columns=["PUMA"]), d_deid.drop(columns=["PUMA"]))
    plain.compute_score()
    labels = list(data_dict["PUMA"]["values"])  # transform codes PUMA in the dictionary's order
    groups = {labels[int(k)]: float(v) for k, v in grouped.scores.items() if pd.notna(v)}
    out = {"score_grouped": float(grouped.score), "score": float(plain.score), "groups": groups, "features": features}
    print(json.dumps(out))


if __name__ == "__main__":
    main(*sys.argv[1:4])
