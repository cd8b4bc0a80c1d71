"""The ``ddssp-release`` file format: its name and version, the fields of release.json, and the
encoding helpers the writer and the reader share.

File format ``ddssp-release`` version 2 (see README "The release file"): a ZIP archive with
- ``manifest.json``: {"format": "ddssp-release", "format_version": 2,
  "files": {member: {"sha256": hex, "size": bytes}}};
- ``release.json``: parameters, schema, ledger, workload, measurement index, model metadata, the noise
  source (secure, or the insecure-seed stamp) and public settings. Nothing in it depends on the data
  except the noisy outputs listed in :data:`NOISY_FIELDS` (no timings, row counts or iteration counts);
- ``arrays/<name>.npy``: plain numeric arrays (model parameters, noisy measurements);
- optionally ``signature.json``: an Ed25519 signature of manifest.json (:mod:`ddssp.releasefile.signing`).
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from ddssp.errors import DDSSPError

FORMAT = "ddssp-release"
FORMAT_VERSION = 2
#: ``schema_status`` values recorded in a release
SCHEMA_DECLARED = "declared"
SCHEMA_DISCOVERED = "discovered"
SCHEMA_NOT_PRIVATE = (
    "schema not private: a data-derived draft schema was used without review "
    "(--accept-draft-schema); its levels, bounds and bin edges may reveal individual rows"
)
#: Optional member holding an Ed25519 signature of manifest.json (see :meth:`Release.verify`).
SIGNATURE_MEMBER = "signature.json"

#: The fields of release.json that depend on the data, each a noisy output paid for in the ledger or
#: post-processing of noisy outputs only. Every other field is a public input: equal for any two tables
#: released with the same schema, settings and ddssp version (tests/test_release.py checks this).
NOISY_FIELDS: dict[str, str] = {
    "ledger.entries": "one entry per paid mechanism: which cliques the (noisy) selections chose and the "
    "sigma each was measured with (AIM halves sigma after a noisy test)",
    "ledger.rho_spent": "the float sum of the entries (equal to the budget up to rounding)",
    "measurements": "index of the noisy marginals (clique, sigma, round), as in the ledger",
    "model": "the graphical model fitted to the noisy marginals alone: cliques, tree, estimated total",
    "created": "the UTC date the release was started (public, not data; no time of day)",
    "recycled": "optional: one-way marginals summed from discovery's noisy grid counts (clique, the "
    "ledger entry that paid for the counts, its sigma, the cells each level sums), fitted with the "
    "measurements at no further charge",
    "info.settings.target_share": "with a target: the first phase's share of AIM's budget; without a "
    "given share, the default raised on a small table by the noisy total of the target's one-way "
    "measurement (post-processing of that measurement, which the file holds)",
    "grade_evidence": "optional: discovery's noisy shares of numeric columns' numbers outside their ranges "
    "with their noise sds, and why discovered columns were left out (post-processing of discovery's "
    "noisy counts, paid for in the ledger; read by the release's grade)",
}

#: Every field of release.json (dotted paths down to the noisy ones): anything else is refused by the
#: field test, so a new field must be declared public or noisy here.
PUBLIC_FIELDS = (
    "format",
    "format_version",
    "ddssp_version",
    "eps",
    "delta",
    "target",
    "schema",
    "ledger.rho_budget",
    "ledger.delta_budget",
    "ledger.delta_spent",
    "workload",
    "noise",
    "schema_status",
    "info.settings",
    "info.reading",
)


def check_reading(reading: Any) -> dict[str, Any]:
    """The reading options a release records, checked.

    Parameters
    ----------
    reading : dict
        Public settings of how the raw table was read: ``na_values``, ``delimiter``, ``encoding``.

    Returns
    -------
    dict
        With defaults filled in.

    Raises
    ------
    ValueError
        When malformed.
    """
    if not isinstance(reading, dict) or set(reading) - {"na_values", "delimiter", "encoding"}:
        raise ValueError("info.reading must be an object with na_values, delimiter, encoding")
    na = reading.get("na_values", [])
    if not isinstance(na, list) or len(na) > 1000 or not all(isinstance(v, str) and len(v) <= 1000 for v in na):
        raise ValueError("info.reading.na_values must be a list of strings")
    d = reading.get("delimiter", ",")
    if not isinstance(d, str) or len(d) != 1 or d in '"\n\r':
        raise ValueError("info.reading.delimiter must be one character")
    e = reading.get("encoding", "utf-8")
    if not isinstance(e, str) or not e or len(e) > 64:
        raise ValueError("info.reading.encoding must be a short string")
    return {"na_values": list(na), "delimiter": d, "encoding": e}


def is_integral(v: np.ndarray) -> bool:
    """Whether an array holds whole numbers only (an integer dtype, or finite integral floats below 2**62).

    Parameters
    ----------
    v : numpy.ndarray
        The array.

    Returns
    -------
    bool
    """
    v = np.asarray(v)
    if v.dtype.kind in "iu":
        return True
    return bool(
        v.dtype.kind == "f" and np.all(np.isfinite(v)) and np.all(v == np.round(v)) and np.all(np.abs(v) < 2**62)
    )


def json_bytes(obj: Any) -> bytes:
    """An object as the UTF-8 JSON the file stores (indented, key order kept, no NaN).

    Parameters
    ----------
    obj : any
        A JSON-able object.

    Returns
    -------
    bytes

    Raises
    ------
    ValueError
        For NaN or infinite floats.
    """
    return json.dumps(obj, indent=1, sort_keys=False, allow_nan=False).encode("utf-8")


def check_dataset_name(name: Any) -> None:
    """Refuse a data-set name unless it is None or a non-empty line of at most 200 characters.

    Parameters
    ----------
    name : any
        The name.

    Raises
    ------
    DDSSPError
        For an invalid name.
    """
    if name is not None and (
        not isinstance(name, str) or not name.strip() or len(name) > 200 or any(c in name for c in "\r\n")
    ):
        raise DDSSPError("--dataset-name must be a non-empty line of at most 200 characters")


def check_rows(rows: Any) -> int:
    """A requested number of rows as an int.

    Parameters
    ----------
    rows : any
        The value.

    Returns
    -------
    int

    Raises
    ------
    DDSSPError
        Unless it is a positive integer.
    """
    if isinstance(rows, bool) or not isinstance(rows, (int, np.integer)) or rows < 1:
        raise DDSSPError(f"rows must be a positive integer, got {rows!r}")
    return int(rows)
