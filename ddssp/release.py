"""The release: what a data holder publishes, and everything an analyst can do from it alone.

``release(df, schema, eps=..., delta=...)`` runs AIM on the table (the only step that reads the data)
and returns a :class:`Release`. ``Release.save`` writes one portable file; ``Release.load`` reads it in a
fresh process without the data. Post-processing (marginals, synthetic rows, DD-SSP fits) needs nothing
else.

File format ``ddssp-release`` version 2 (see README "The release file"): a ZIP archive with
- ``manifest.json``: {"format": "ddssp-release", "format_version": 2,
  "files": {member: {"sha256": hex, "size": bytes}}};
- ``release.json``: parameters, schema, ledger, workload, measurement index, model metadata, the noise
  source (secure, or the insecure-seed stamp) and public settings. Nothing in it depends on the data
  except the noisy outputs listed in :data:`NOISY_FIELDS` (no timings, row counts or iteration counts);
- ``arrays/<name>.npy``: plain numeric arrays (model parameters, noisy measurements).

Loading is defensive, in this order, and refuses with one :class:`ReleaseFileError` line:
1. the archive's central directory only: no duplicate names, the sum of the members' declared sizes
   under a total cap (:data:`MAX_TOTAL_BYTES`), each size equal to the manifest's;
2. ``release.json`` (capped, streamed, checksummed); from it the exact shape of every array is known
   (schema domain x clique), so an array member whose declared size does not fit its shape, or a member
   nobody references, is refused *before it is decompressed*;
3. arrays are streamed into a preallocated array of that shape while their checksum is computed
   (float64/int64 only, never pickle);
4. the self-check: every ledger entry is consistent with itself (rho = 1/(2 sigma^2) for a Gaussian
   measurement of sensitivity 1, eps_em^2/8 for a selection), the measure entries match the
   measurements one to one (clique, sigma, round), one selection per round, the entries sum to the
   stated rho, rho converts to the stated (eps, delta), noisy counts are integers (discrete Gaussian).
It never unpickles or executes anything.
"""

from __future__ import annotations

import base64
import datetime as _dt
import hashlib
import io
import json
import math
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd

from ddssp._version import __version__
from ddssp.errors import DDSSPError, ReleaseFileError, SchemaError, WorkloadError
from ddssp.data.fileio import atomic_write, check_output_path
from ddssp.dp import (
    Ledger,
    approx_zcdp_rho_budget,
    LedgerEntry,
    check_delta,
    check_eps,
    entry_problem,
    eps_from_rho_delta,
    make_rng,
    rho_for_release,
    rho_from_eps_delta,
)
from ddssp.dp.noise import INSECURE_STAMP, make_noise

FORMAT = "ddssp-release"
FORMAT_VERSION = 2
DEFAULT_DELTA = 1e-9
#: share of the zCDP budget spent on private schema discovery when some column is not declared
#: (measured on Adult raw; see README "Private schema discovery")
DEFAULT_DISCOVERY_SHARE = 0.1
#: share of delta set aside for the key release of categorical columns (approximate zCDP) when
#: some column is discovered; given back to the zCDP budget when no discovered column is categorical
DISCOVERY_DELTA_SHARE = 0.5
#: ``schema_status`` values recorded in a release
SCHEMA_DECLARED = "declared"
SCHEMA_DISCOVERED = "discovered"
SCHEMA_NOT_PRIVATE = ("schema not private: a data-derived draft schema was used without review "
                      "(--accept-draft-schema); its levels, bounds and bin edges may reveal individual rows")
#: Cap on the sum of the members' declared (uncompressed) sizes, checked before anything is read.
MAX_TOTAL_BYTES = 2 << 30
#: Cap on manifest.json and release.json, each.
MAX_JSON_BYTES = 64 << 20
#: Room for a .npy header (version 1/2 headers are padded to 64 bytes; 64 KiB is far above any shape).
_NPY_HEADER_MAX = 1 << 16
_ARRAY_DTYPES = (np.dtype("<f8"), np.dtype("<i8"))
_CHUNK = 1 << 20
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
}

#: Every field of release.json (dotted paths down to the noisy ones): anything else is refused by the
#: field test, so a new field must be declared public or noisy here.
PUBLIC_FIELDS = ("format", "format_version", "ddssp_version", "eps", "delta", "target", "schema",
                 "ledger.rho_budget", "ledger.delta_budget", "ledger.delta_spent", "workload", "noise", "schema_status",
                 "info.settings")


@dataclass
class Release:
    """A published DP release: schema, privacy parameters and ledger, workload, noisy measurements and
    the fitted graphical model that answers any marginal. Holds no rows and no exact counts.

    ``noise`` describes the noise source (``{"source": "opendp", "secure": True}``, or the insecure
    seeded source with its :attr:`stamp`). ``local_info`` (timings, iteration counts) is for the
    terminal of the data holder and is never written to the file."""

    schema: Any  # ddssp.data.schema.Schema
    model: Any  # ddssp.marginals.model.GraphicalModel
    ledger: Ledger
    eps: float
    delta: float
    workload: list[tuple[tuple[str, ...], float]]
    measurements: list[Any]  # ddssp.marginals.aim.Measurement
    target: str | None = None
    created: str = ""
    ddssp_version: str = __version__
    info: dict[str, Any] = field(default_factory=dict)
    noise: dict[str, Any] = field(default_factory=lambda: {"source": "opendp", "secure": True})
    signature: dict[str, Any] | None = field(default=None, repr=False, compare=False)
    local_info: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    #: "declared" (public schema), "discovered" (all or part found under DP, in the ledger), or the
    #: SCHEMA_NOT_PRIVATE stamp (an unreviewed data-derived draft was accepted)
    schema_status: str = SCHEMA_DECLARED

    # ------------------------------------------------------------------ analyst API
    @property
    def stamp(self) -> str | None:
        """:data:`~ddssp.dp.noise.INSECURE_STAMP` when the noise is reproducible from a seed, else None."""
        return None if self.noise.get("secure") is True else INSECURE_STAMP

    @property
    def signed_by(self) -> str | None:
        """Fingerprint of the key embedded in the signature (NOT verified: see :meth:`verify`)."""
        if not self.signature:
            return None
        try:
            return "ed25519:" + hashlib.sha256(base64.b64decode(self.signature["public_key"])).hexdigest()[:16]
        except (ValueError, KeyError):
            return "malformed"

    @property
    def rho_budget(self) -> float:
        return self.ledger.rho_budget

    @property
    def rho_spent(self) -> float:
        return self.ledger.spent

    @property
    def eps_spent(self) -> float:
        """The (eps, delta) guarantee actually used (<= eps), by the same CKS conversion."""
        if self.rho_spent <= 0:
            return 0.0
        return min(eps_from_rho_delta(self.rho_spent, self.delta - self.ledger.delta_budget), self.eps)

    @property
    def schema_private(self) -> bool:
        return self.schema_status != SCHEMA_NOT_PRIVATE

    @property
    def domain(self) -> dict[str, int]:
        return self.schema.domain

    @property
    def total(self) -> float:
        """The model's (noisy) estimate of the number of rows; the exact count is never stored."""
        return float(self.model.total)

    def marginal(self, cols: str | Sequence[str]) -> np.ndarray:
        """Counts of the model's marginal over ``cols`` (in that order); shape = their sizes."""
        cols = (cols,) if isinstance(cols, str) else tuple(cols)
        for c in cols:
            self.schema.column(c)  # SchemaError naming an unknown column
        if len(set(cols)) != len(cols):
            raise SchemaError(f"repeated column in marginal query {cols}")
        return self.model.marginal(cols)

    def synthesize_codes(self, rows: int, seed: int | np.random.Generator | None = None) -> pd.DataFrame:
        rows = _check_rows(rows)
        codes = self.model.sample(rows, make_rng(seed))
        return codes[self.schema.names]

    def synthesize(self, rows: int, seed: int | np.random.Generator | None = None) -> pd.DataFrame:
        """``rows`` synthetic records decoded to the schema's labels / numeric representatives."""
        return self.schema.decode(self.synthesize_codes(rows, seed))

    def summary(self) -> dict[str, Any]:
        """What was released, at what cost (the ``inspect`` view)."""
        by_clique: dict[tuple[str, ...], list[float]] = {}
        for m in self.measurements:
            by_clique.setdefault(tuple(m.clique), []).append(float(m.sigma))
        n_select = sum(1 for e in self.ledger.entries if e.kind == "select")
        disc = self.ledger.discovery_entries
        discovery = {
            "columns": sorted({c for e in disc for c in (e.clique or ())}),
            "entries": [e.to_dict() for e in disc],
            "rho": math.fsum(e.rho for e in disc),
            "delta": math.fsum(e.delta for e in disc),
        }
        return {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "ddssp_version": self.ddssp_version,
            "created": self.created,
            "stamp": self.stamp,
            "signed_by_unverified": self.signed_by,
            "noise": dict(self.noise),
            "eps": self.eps,
            "delta": self.delta,
            "eps_spent": self.eps_spent,
            "rho_budget": self.rho_budget,
            "rho_spent": self.rho_spent,
            "delta_budget_approx_zcdp": self.ledger.delta_budget,
            "target": self.target,
            "schema_status": self.schema_status,
            "delta_threshold_budget": self.ledger.delta_budget,
            "discovery": discovery,
            "rho_aim": math.fsum(e.rho for e in self.ledger.entries if not e.is_discovery),
            "columns": {c.name: {"kind": c.kind, "size": c.size} for c in self.schema.columns},
            "cliques": [
                {"clique": list(c), "measurements": len(s), "sigma": s} for c, s in by_clique.items()
            ],
            "selections": n_select,
            "rounds": max((int(m.round) for m in self.measurements), default=0),
            "model_cliques": [list(c) for c in self.model.cliques],
            "model_total": self.total,
            "workload_size": len(self.workload),
            "info": self.info,
        }

    # ------------------------------------------------------------------ file I/O
    def to_document(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """release.json as a dict, and the arrays by name (what :meth:`save` writes)."""
        arrays: dict[str, np.ndarray] = {}
        model_meta, model_arrays = self.model.to_arrays()
        model_names = {}
        for k, a in model_arrays.items():
            name = f"model/{len(model_names)}"
            model_names[k] = name
            arrays[name] = np.asarray(a, dtype="<f8")
        meas_index = []
        for i, m in enumerate(self.measurements):
            name = f"measurements/{i}"
            v = np.asarray(m.values)
            arrays[name] = v.astype("<i8") if _is_integral(v) else v.astype("<f8")
            meas_index.append({"clique": list(m.clique), "sigma": float(m.sigma), "round": int(m.round), "array": name})
        doc = {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "ddssp_version": self.ddssp_version,
            "created": self.created,
            "eps": self.eps,
            "delta": self.delta,
            "target": self.target,
            "schema_status": self.schema_status,
            "noise": dict(self.noise),
            "schema": self.schema.to_dict(),
            "ledger": self.ledger.to_dict(),
            "workload": [{"clique": list(c), "weight": float(w)} for c, w in self.workload],
            "measurements": meas_index,
            "model": {"meta": model_meta, "arrays": model_names},
            "info": self.info,
        }
        return doc, arrays

    def save(self, path: str | Path, force: bool = False, inputs: Sequence[str | Path] = (),
             sign_key: str | Path | bytes | None = None) -> Path:
        """Write the release atomically (temporary file + rename). Refuses to overwrite unless ``force``.
        With ``sign_key`` (an unencrypted Ed25519 private key in PEM), add an Ed25519 signature of
        manifest.json (needs the ``cryptography`` package: ``pip install 'ddssp[sign]'``)."""
        out = check_output_path(path, force=force, inputs=inputs)
        private = _load_private_key(sign_key) if sign_key is not None else None
        doc, arrays = self.to_document()
        members: dict[str, bytes] = {"release.json": _json_bytes(doc)}
        for name, a in arrays.items():
            buf = io.BytesIO()
            np.save(buf, a, allow_pickle=False)
            members[f"arrays/{name}.npy"] = buf.getvalue()
        manifest = {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "files": {k: {"sha256": hashlib.sha256(v).hexdigest(), "size": len(v)} for k, v in members.items()},
        }
        with atomic_write(out, "wb") as fh:
            with zipfile.ZipFile(fh, "w", compression=zipfile.ZIP_DEFLATED) as zf:
                manifest_bytes = _json_bytes(manifest)
                zf.writestr("manifest.json", manifest_bytes)
                if private is not None:
                    pub = private.public_key()
                    zf.writestr(SIGNATURE_MEMBER, _json_bytes({
                        "algorithm": "ed25519",
                        "public_key": base64.b64encode(_raw_public(pub)).decode(),
                        "fingerprint": _fingerprint(pub),
                        "signature": base64.b64encode(private.sign(manifest_bytes)).decode(),
                    }))
                for k, v in members.items():
                    zf.writestr(k, v)
        return out

    @classmethod
    def load(cls, path: str | Path, *, max_bytes: int = MAX_TOTAL_BYTES) -> "Release":
        """Read, bound, checksum and self-check a release file (see the module docstring).
        Any problem raises :class:`ReleaseFileError` with one line."""
        from ddssp.data import Schema
        from ddssp.marginals.aim import Measurement
        from ddssp.marginals.model import GraphicalModel

        path = Path(path)
        if not path.exists():
            raise ReleaseFileError(f"release file {path} not found")
        if path.is_dir():
            raise ReleaseFileError(f"{path} is a directory, not a release file")
        doc, arrays = _read_release(path, max_bytes)
        sig = doc.pop("__signature__")
        try:
            schema = Schema.from_dict(doc["schema"])
            ledger = Ledger.from_dict(doc["ledger"])
            eps, delta = check_eps(doc["eps"]), check_delta(doc["delta"])
            workload = [(tuple(w["clique"]), float(w["weight"])) for w in doc["workload"]]
            measurements = [
                Measurement(clique=tuple(m["clique"]), sigma=float(m["sigma"]),
                            values=arrays[m["array"]].astype(float), round=int(m["round"]))
                for m in doc["measurements"]
            ]
            model_arrays = {k: arrays[v] for k, v in doc["model"]["arrays"].items()}
            model = GraphicalModel.from_arrays(doc["model"]["meta"], model_arrays)
            noise = doc["noise"]
            if not isinstance(noise, dict) or not isinstance(noise.get("secure"), bool):
                raise ValueError("the noise source is not described")
            rel = cls(
                schema=schema,
                model=model,
                ledger=ledger,
                eps=eps,
                delta=delta,
                workload=workload,
                measurements=measurements,
                target=doc.get("target"),
                created=str(doc.get("created", "")),
                ddssp_version=str(doc.get("ddssp_version", "")),
                info=dict(doc.get("info", {})),
                noise=dict(noise),
                schema_status=str(doc.get("schema_status", SCHEMA_DECLARED)),
            )
        except ReleaseFileError:
            raise
        except (KeyError, TypeError, ValueError, DDSSPError) as exc:
            raise ReleaseFileError(f"{path}: release content is invalid or incomplete ({type(exc).__name__}: {exc})") from None
        rel._validate(path)
        problem = rel.self_check(stated_rho_spent=doc["ledger"].get("rho_spent"))
        if problem:
            raise ReleaseFileError(f"{path}: self-check failed: {problem}; refusing a corrupt or tampered release")
        rel._manifest_bytes = sig["manifest"]
        rel.signature = sig["signature"]
        return rel

    # ------------------------------------------------------------------ signatures (optional)
    def verify(self, public_key: str | Path | bytes) -> str:
        """Check this (loaded) release's Ed25519 signature against ``public_key`` (a PEM file or PEM
        bytes). Returns the key's fingerprint; raises :class:`ReleaseFileError` if the release is not
        signed, or not by that key. The signature covers manifest.json, which holds the SHA-256 and
        size of every other member, so it covers the whole release."""
        if not self.signature or getattr(self, "_manifest_bytes", None) is None:
            raise ReleaseFileError("the release is not signed (it was written without --sign-key)")
        pub = _load_public_key(public_key)
        fp = _fingerprint(pub)
        from cryptography.exceptions import InvalidSignature

        try:
            embedded = base64.b64decode(self.signature["public_key"], validate=True)
            sig = base64.b64decode(self.signature["signature"], validate=True)
        except ValueError:
            raise ReleaseFileError("the release's signature is malformed") from None
        if embedded != _raw_public(pub):
            other = "ed25519:" + hashlib.sha256(embedded).hexdigest()[:16]
            raise ReleaseFileError(f"the release was signed by another key ({other}), not by {fp}")
        try:
            pub.verify(sig, self._manifest_bytes)
        except InvalidSignature:
            raise ReleaseFileError(f"the signature does not match key {fp}: the release was modified or forged") from None
        return fp

    def _validate(self, path: Path) -> None:
        if dict(self.model.domain) != dict(self.schema.domain):
            raise ReleaseFileError(f"{path}: the model's domain does not match the release's schema")
        names = set(self.schema.names)
        for m in self.measurements:
            if not set(m.clique) <= names:
                raise ReleaseFileError(f"{path}: measurement on unknown columns {m.clique}")
            shape = tuple(self.schema.domain[c] for c in m.clique)
            if m.values.size != math.prod(shape):
                raise ReleaseFileError(f"{path}: measurement {m.clique} has {m.values.size} cells, expected {shape}")

    def self_check(self, stated_rho_spent: Any = None) -> str | None:
        """The ledger against itself, the measurements and (eps, delta); the first problem found, or None.

        - every entry passes its kind's check (:func:`ddssp.dp.entry_problem`: e.g. rho = 1/(2 sigma^2)
          for a Gaussian measurement of sensitivity 1, rho = eps_em^2/8 for a selection);
        - the 'measure' entries and the measurements agree one to one, in order (clique, sigma, round);
        - one 'select' entry for each round >= 1, one measurement per such round, none in round 0;
        - noisy counts are integers (the discrete Gaussian's outputs);
        - the entries sum to the stated rho_spent, which equals the budget (AIM spends all of it);
        - the budget is what (eps, delta) convert to, and the approximate-zCDP delta stays in its budget.
        """
        led = self.ledger
        for i, e in enumerate(led.entries):
            p = entry_problem(e)
            if p:
                return f"ledger entry {i} ({e.kind}): {p}"
        meas_entries = [e for e in led.entries if e.kind == "measure"]
        if len(meas_entries) != len(self.measurements):
            return (f"the ledger pays for {len(meas_entries)} measurements but the file holds "
                    f"{len(self.measurements)}")
        for i, (e, m) in enumerate(zip(meas_entries, self.measurements)):
            if tuple(e.clique or ()) != tuple(m.clique) or e.round != m.round:
                return f"measurement {i} ({','.join(m.clique)}, round {m.round}) is not the one its ledger entry paid for"
            if not math.isclose(float(e.sigma), float(m.sigma), rel_tol=1e-12):
                return f"measurement {i} ({','.join(m.clique)}) has sigma {m.sigma:.6g} but its ledger entry paid for {e.sigma:.6g}"
            if not _is_integral(m.values):
                return f"measurement {i} ({','.join(m.clique)}) holds non-integer counts (not discrete Gaussian noise)"
        sel_rounds = sorted(int(e.round) for e in led.entries if e.kind == "select" and e.round is not None)
        if len([e for e in led.entries if e.kind == "select"]) != len(sel_rounds):
            return "a selection entry has no round"
        meas_rounds = sorted(int(m.round) for m in self.measurements if m.round >= 1)
        if sel_rounds != meas_rounds or len(set(sel_rounds)) != len(sel_rounds):
            return "selections and measured rounds do not match (one selection and one measurement per round)"
        spent = led.spent
        if stated_rho_spent is not None:
            try:
                stated = float(stated_rho_spent)
            except (TypeError, ValueError):
                return f"stated rho_spent {stated_rho_spent!r} is not a number"
            if not math.isclose(stated, spent, rel_tol=1e-9):
                return f"the ledger entries sum to rho={spent:.9g} but the file states {stated:.9g}"
        if not math.isclose(spent, led.rho_budget, rel_tol=1e-9):
            return f"the ledger entries sum to rho={spent:.9g}, not the budget {led.rho_budget:.9g}"
        if led.delta_spent > led.delta_budget * (1 + 1e-9):
            return f"approximate-zCDP delta spent {led.delta_spent:.3g} exceeds its budget {led.delta_budget:.3g}"
        if not led.delta_budget < self.delta:
            return f"approximate-zCDP delta budget {led.delta_budget:.3g} is not below delta={self.delta:g}"
        budget = approx_zcdp_rho_budget(self.eps, self.delta, led.delta_budget)
        if not math.isclose(budget, led.rho_budget, rel_tol=1e-9):
            return (f"rho budget {led.rho_budget:.9g} is not what eps={self.eps:g}, delta={self.delta:g} "
                    f"convert to ({budget:.9g})")
        return None


def _is_integral(v: np.ndarray) -> bool:
    v = np.asarray(v)
    if v.dtype.kind in "iu":
        return True
    return bool(v.dtype.kind == "f" and np.all(np.isfinite(v)) and np.all(v == np.round(v)) and np.all(np.abs(v) < 2**62))


def _json_bytes(obj: Any) -> bytes:
    return json.dumps(obj, indent=1, sort_keys=False, allow_nan=False).encode("utf-8")


# --------------------------------------------------------------------------- defensive reading
class _HashingReader:
    """A read-only stream that feeds every byte it hands out into a hash and counts them."""

    def __init__(self, raw, h):
        self.raw, self.h, self.count = raw, h, 0

    def read(self, n: int = -1) -> bytes:
        b = self.raw.read(n)
        self.h.update(b)
        self.count += len(b)
        return b

    def readinto(self, buf) -> int:
        n = self.raw.readinto(buf)
        if n:
            self.h.update(memoryview(buf)[:n])
            self.count += n
        return n


def _read_json_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, path: Path, digest: str | None,
                      raw_out: list | None = None) -> Any:
    if info.file_size > MAX_JSON_BYTES:
        raise ReleaseFileError(f"{path}: {info.filename} declares {info.file_size:,} bytes, more than the "
                               f"{MAX_JSON_BYTES >> 20} MiB cap; refusing it")
    h = hashlib.sha256()
    try:
        with zf.open(info) as raw:
            data = _HashingReader(raw, h).read(MAX_JSON_BYTES + 1)
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
        raise ReleaseFileError(f"{path}: member {info.filename} is corrupt ({exc})") from None
    if len(data) > MAX_JSON_BYTES:
        raise ReleaseFileError(f"{path}: {info.filename} is larger than the {MAX_JSON_BYTES >> 20} MiB cap")
    if digest is not None and h.hexdigest() != digest:
        raise ReleaseFileError(f"{path}: checksum mismatch in {info.filename}; the file is corrupt or was modified")
    if raw_out is not None:
        raw_out.append(data)
    try:
        return json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ReleaseFileError(f"{path}: {info.filename} is not valid JSON ({exc})") from None


def _expected_arrays(doc: Any, path: Path) -> dict[str, tuple[str, tuple[int, ...]]]:
    """{member name: (array name, shape)} of every array release.json refers to, shapes from the schema."""
    from ddssp.data import Schema

    try:
        domain = Schema.from_dict(doc["schema"]).domain
        out: dict[str, tuple[str, tuple[int, ...]]] = {}

        def add(name: Any, shape: tuple[int, ...]) -> None:
            if not isinstance(name, str) or not name:
                raise ValueError(f"bad array name {name!r}")
            member = f"arrays/{name}.npy"
            if member in out:
                raise ValueError(f"array {name!r} is referenced twice")
            out[member] = (name, shape)

        for m in doc["measurements"]:
            clique = m["clique"]
            if not isinstance(clique, list) or not clique or any(c not in domain for c in clique):
                raise ValueError(f"measurement on unknown columns {clique!r}")
            add(m["array"], tuple(domain[c] for c in clique))
        meta = doc["model"]["meta"]
        mdomain = {str(a): int(n) for a, n in meta["domain"]}
        if mdomain != dict(domain):
            raise ValueError("the model's domain does not match the schema")
        cliques = meta["cliques"]
        arrays = doc["model"]["arrays"]
        if not isinstance(arrays, dict) or set(arrays) != {f"theta_{i}" for i in range(len(cliques))}:
            raise ValueError("model arrays do not match the model's cliques")
        for i, c in enumerate(cliques):
            if not isinstance(c, list) or not c or any(a not in mdomain for a in c):
                raise ValueError(f"model clique {c!r} does not fit the domain")
            add(arrays[f"theta_{i}"], tuple(mdomain[a] for a in c))
        return out
    except ReleaseFileError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError, DDSSPError) as exc:
        raise ReleaseFileError(f"{path}: release content is invalid or incomplete ({type(exc).__name__}: {exc})") from None


def _read_array(zf: zipfile.ZipFile, info: zipfile.ZipInfo, shape: tuple[int, ...], digest: str, path: Path) -> np.ndarray:
    """Stream one .npy member into a preallocated array of the expected ``shape``, hashing as it goes."""
    name = info.filename
    h = hashlib.sha256()
    try:
        with zf.open(info) as raw:
            fp = _HashingReader(raw, h)
            version = np.lib.format.read_magic(fp)
            if version == (1, 0):
                got_shape, fortran, dtype = np.lib.format.read_array_header_1_0(fp)
            elif version == (2, 0):
                got_shape, fortran, dtype = np.lib.format.read_array_header_2_0(fp)
            else:
                raise ValueError(f"unsupported .npy version {version}")
            if dtype not in _ARRAY_DTYPES:
                raise ReleaseFileError(f"{path}: array {name} has dtype {dtype}; only float64/int64 are allowed "
                                       "(never pickled objects)")
            if tuple(got_shape) != tuple(shape) or fortran:
                raise ReleaseFileError(f"{path}: array {name} has shape {tuple(got_shape)}, expected {tuple(shape)}")
            nbytes = math.prod(shape) * dtype.itemsize
            if fp.count + nbytes != info.file_size:
                raise ReleaseFileError(f"{path}: array {name} declares {info.file_size:,} bytes, but its shape "
                                       f"{tuple(shape)} needs {fp.count + nbytes:,}")
            out = np.empty(shape, dtype=dtype)
            view = memoryview(out.reshape(-1).view(np.uint8))
            pos = 0
            while pos < nbytes:
                n = fp.readinto(view[pos : pos + _CHUNK])
                if not n:
                    raise ValueError("unexpected end of data")
                pos += n
            if raw.read(1):
                raise ValueError("trailing data")
    except ReleaseFileError:
        raise
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
        raise ReleaseFileError(f"{path}: array {name} is corrupt or not a valid .npy array ({exc})") from None
    if h.hexdigest() != digest:
        raise ReleaseFileError(f"{path}: checksum mismatch in {name}; the file is corrupt or was modified")
    if dtype.kind == "f" and not np.all(np.isfinite(out)):
        raise ReleaseFileError(f"{path}: array {name} has NaN or infinite values")
    return out


def _read_release(path: Path, max_bytes: int = MAX_TOTAL_BYTES) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """release.json and its arrays (by array name), read defensively: see the module docstring."""
    try:
        zf = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        raise ReleaseFileError(f"{path} is not a ddssp release file (not a readable archive: {exc})") from None
    with zf:
        infos = zf.infolist()
        by_name = {i.filename: i for i in infos}
        if len(by_name) != len(infos):
            raise ReleaseFileError(f"{path} holds two members with the same name; refusing a tampered file")
        total = sum(i.file_size for i in infos)
        if total > max_bytes:
            raise ReleaseFileError(f"{path}: members declare {total / 2**20:,.0f} MiB uncompressed, more than the "
                                   f"{max_bytes / 2**20:,.0f} MiB cap; refusing it without decompressing")
        if "manifest.json" not in by_name:
            raise ReleaseFileError(f"{path} is not a ddssp release file (no manifest.json)")
        manifest_raw: list[bytes] = []
        manifest = _read_json_member(zf, by_name["manifest.json"], path, None, manifest_raw)
        if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
            raise ReleaseFileError(f"{path} is not a ddssp release file (format {manifest.get('format')!r})"
                                   if isinstance(manifest, dict) else f"{path}: manifest is not an object")
        version = manifest.get("format_version")
        if version != FORMAT_VERSION:
            raise ReleaseFileError(
                f"{path} has release format version {version!r}; this ddssp (version {__version__}) reads "
                f"version {FORMAT_VERSION} only"
            )
        files = manifest.get("files")
        if (not isinstance(files, dict) or "release.json" not in files
                or not all(isinstance(f, dict) and isinstance(f.get("sha256"), str) and isinstance(f.get("size"), int)
                           for f in files.values())):
            raise ReleaseFileError(f"{path}: manifest lists no release.json or is malformed")
        extra = sorted(set(by_name) - set(files) - {"manifest.json", SIGNATURE_MEMBER})
        if extra:
            raise ReleaseFileError(f"{path} contains unexpected members {extra[:3]}; refusing a tampered file")
        for name, f in files.items():
            if name not in by_name:
                raise ReleaseFileError(f"{path}: member {name} is missing (truncated file?)")
            if by_name[name].file_size != f["size"]:
                raise ReleaseFileError(f"{path}: member {name} declares {by_name[name].file_size:,} bytes, the "
                                       f"manifest {f['size']:,}; refusing a tampered file")
        doc = _read_json_member(zf, by_name["release.json"], path, files["release.json"]["sha256"])
        if not isinstance(doc, dict):
            raise ReleaseFileError(f"{path}: release.json is not an object")
        expected = _expected_arrays(doc, path)
        unreferenced = sorted(set(files) - set(expected) - {"release.json"})
        if unreferenced:
            raise ReleaseFileError(f"{path}: member {unreferenced[0]} is not referenced by release.json; "
                                   "refusing a tampered file")
        missing = sorted(set(expected) - set(files))
        if missing:
            raise ReleaseFileError(f"{path}: array member {missing[0]} is missing (truncated file?)")
        for member, (_, shape) in expected.items():  # every size against its shape, before any decompression
            size, need = by_name[member].file_size, 8 * math.prod(shape)
            if not need <= size <= need + _NPY_HEADER_MAX:
                raise ReleaseFileError(f"{path}: member {member} declares {size:,} bytes but its shape {shape} "
                                       f"needs {need:,} (+ header); refusing it without decompressing")
        arrays = {
            name: _read_array(zf, by_name[member], shape, files[member]["sha256"], path)
            for member, (name, shape) in expected.items()
        }
        signature = None
        if SIGNATURE_MEMBER in by_name:
            if by_name[SIGNATURE_MEMBER].file_size > 4096:
                raise ReleaseFileError(f"{path}: {SIGNATURE_MEMBER} is implausibly large; refusing it")
            signature = _read_json_member(zf, by_name[SIGNATURE_MEMBER], path, None)
            if not (isinstance(signature, dict) and signature.get("algorithm") == "ed25519"
                    and isinstance(signature.get("signature"), str) and isinstance(signature.get("public_key"), str)):
                raise ReleaseFileError(f"{path}: {SIGNATURE_MEMBER} is malformed")
        doc["__signature__"] = {"manifest": manifest_raw[0], "signature": signature}
        return doc, arrays


# --------------------------------------------------------------------------- Ed25519 keys (optional)
def _crypto():
    try:
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import ed25519
    except ImportError:
        raise DDSSPError("signing needs the 'cryptography' package: pip install 'ddssp[sign]'") from None
    return serialization, ed25519


def _read_key_bytes(key: str | Path | bytes, what: str) -> bytes:
    if isinstance(key, bytes):
        return key
    p = Path(key)
    if not p.is_file():
        raise DDSSPError(f"{what} {p} not found")
    if p.stat().st_size > 64 << 10:
        raise DDSSPError(f"{what} {p} is not a PEM key (too large)")
    return p.read_bytes()


def load_signing_key(key: Any):
    """An Ed25519 private key from a PEM file (or PEM bytes, or a key object), checked before any work."""
    return _load_private_key(key)


def _load_private_key(key: Any):
    serialization, ed25519 = _crypto()
    if isinstance(key, ed25519.Ed25519PrivateKey):
        return key
    data = _read_key_bytes(key, "signing key")
    try:
        k = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as exc:
        raise DDSSPError(f"the signing key is not an unencrypted PEM private key ({exc}); make one with "
                         "`openssl genpkey -algorithm ed25519 -out key.pem`") from None
    if not isinstance(k, ed25519.Ed25519PrivateKey):
        raise DDSSPError("the signing key is not an Ed25519 key; make one with "
                         "`openssl genpkey -algorithm ed25519 -out key.pem`")
    return k


def _load_public_key(key: str | Path | bytes):
    serialization, ed25519 = _crypto()
    data = _read_key_bytes(key, "public key")
    try:
        k = serialization.load_pem_public_key(data)
    except (ValueError, TypeError) as exc:
        raise DDSSPError(f"the public key is not a PEM public key ({exc}); export it with "
                         "`openssl pkey -in key.pem -pubout -out key.pub.pem`") from None
    if not isinstance(k, ed25519.Ed25519PublicKey):
        raise DDSSPError("the public key is not an Ed25519 key")
    return k


def _raw_public(pub) -> bytes:
    serialization, _ = _crypto()
    return pub.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def _fingerprint(pub) -> str:
    return "ed25519:" + hashlib.sha256(_raw_public(pub)).hexdigest()[:16]


def _check_rows(rows: Any) -> int:
    if isinstance(rows, bool) or not isinstance(rows, (int, np.integer)) or rows < 1:
        raise DDSSPError(f"rows must be a positive integer, got {rows!r}")
    return int(rows)


def build_workload(workload: Any, domain: dict[str, int], target: str | None, max_cells: int | None = None):
    """'all-pairs', 'target' (pairs with the target), a JSON file path, or an explicit list."""
    from ddssp.marginals import workload as wl

    if isinstance(workload, str) and workload == "all-pairs":
        w = wl.all_pairs(domain, max_cells=max_cells)
    elif isinstance(workload, str) and workload == "target":
        if target is None:
            raise WorkloadError("workload 'target' needs a target column (--target)")
        w = wl.target_pairs(domain, target, max_cells=max_cells)
    elif isinstance(workload, (str, Path)):
        w = wl.load_workload(workload, domain)
        if max_cells is not None:
            w = wl.cap_cells(w, domain, max_cells)
    else:
        w = [(tuple(c), float(wt)) for c, wt in workload]
    return wl.validate_workload(w, domain)


@dataclass
class SchemaPlan:
    """A schema ready for a release, and what it cost: ``ledger`` holds the discovery entries (and
    those of a DP schema file), with the final zCDP budget and thresholding delta of the release."""

    schema: Any
    ledger: Ledger
    status: str
    notes: dict[str, str] = field(default_factory=dict)
    discovered: list[str] = field(default_factory=list)


def plan_schema(
    data: pd.DataFrame,
    schema: Any = None,
    *,
    eps: float,
    delta: float,
    discovery_share: float = DEFAULT_DISCOVERY_SHARE,
    categorical: Sequence[str] = (),
    numeric: Sequence[str] = (),
    bins: int | None = None,
    max_levels: int | None = None,
    accept_draft: bool = False,
    replan: bool = True,
    noise: Any = None,
) -> SchemaPlan:
    """The schema of a release of ``data`` at (eps, delta): the declared columns of ``schema`` (may be
    None or partial) as they are, every other column of ``data`` discovered under DP
    (:func:`ddssp.data.discovery.discover`) with ``discovery_share`` of the zCDP budget and
    ``DISCOVERY_DELTA_SHARE`` of delta for key release.

    Accounting: the budget is approximate zCDP. With delta_t the delta set aside for thresholding
    (key release; plus that recorded by a DP schema file), the zCDP budget is
    rho = rho_from_eps_delta(eps, delta - delta_t), so that delta_t + cks_delta(rho, eps) = delta:
    the whole release is (eps, delta)-DP, exactly. When no discovered column turns out categorical
    (known after the scans), delta_t is given back and rho recomputed (``replan``). A DP schema
    file's entries are charged to the same ledger (its cost counts inside eps)."""
    from ddssp.data import Schema
    from ddssp.data.discovery import DEFAULT_MAX_LEVELS, discover
    from ddssp.dp.discovery import ChargedMechanisms

    if noise is None:
        noise = make_noise(None)

    eps, delta = check_eps(eps), check_delta(delta)
    if not (isinstance(discovery_share, (int, float)) and 0 < float(discovery_share) <= 1):
        raise DDSSPError(f"--discovery-share must be in (0, 1], got {discovery_share!r}")
    if isinstance(data, pd.DataFrame):
        if data.shape[1] == 0:
            raise SchemaError("the table has no columns")
        if len(data) == 0:
            raise SchemaError("the table has no rows")
        names = [str(c) for c in data.columns]
    else:  # the header of a table read by the counting layer: nothing can be discovered from it
        names = [str(c) for c in data]
        if not names:
            raise SchemaError("the table has no columns")
    status = SCHEMA_DECLARED
    prior: list[LedgerEntry] = []
    prior_delta = 0.0
    declared: dict[str, Any] = {}
    if schema is not None:
        if getattr(schema, "draft", None) is not None:
            if not accept_draft:
                raise SchemaError(
                    "the schema is a data-derived draft (it carries the draft stamp of `ddssp schema`): "
                    "its levels and bounds were read from the data without privacy. Review it and delete "
                    "its \"draft\" key, or discover the schema privately (`ddssp schema DATA --eps E`, or "
                    "leave out --schema), or pass --accept-draft-schema to release it marked not private"
                )
            status = SCHEMA_NOT_PRIVATE
        rec = getattr(schema, "discovery", None)
        if rec is not None:
            try:
                prior = [LedgerEntry.from_dict(e) for e in rec["entries"]]
                prior_delta = float(rec.get("delta_budget", math.fsum(e.delta for e in prior)))
            except (KeyError, TypeError, ValueError) as exc:
                raise SchemaError(f"the schema's discovery record is invalid ({exc})") from None
            if status == SCHEMA_DECLARED:
                status = SCHEMA_DISCOVERED
        declared = {c.name: c for c in schema.columns}
    missing = [n for n in declared if n not in names]
    if missing:
        raise SchemaError(f"schema column(s) missing from the data: {missing}; the data has {names[:20]}")
    todo = [n for n in names if n not in declared]
    kinds: dict[str, str] = {}
    for lst, kind in ((categorical, "categorical"), (numeric, "numeric")):
        for n in lst or ():
            if n not in names:
                raise SchemaError(f"--{kind} names column {n!r}, which is not in the data (columns: {names[:20]})")
            if n in kinds:
                raise SchemaError(f"column {n!r} is declared both categorical and numeric")
            kinds[n] = kind
    reserved = DISCOVERY_DELTA_SHARE * delta if todo else 0.0
    delta_t = prior_delta + reserved
    if not delta_t < delta:
        raise SchemaError(f"the schema file's thresholding delta {prior_delta:g} is not below delta={delta:g}")
    rho = rho_for_release(eps, delta, delta_t)
    ledger = Ledger(rho, delta_budget=delta_t)
    for e in prior:
        try:
            ledger.charge(e)
        except DDSSPError as exc:
            raise SchemaError(f"the DP schema file costs more than this release's budget ({exc}); give a "
                              "larger --eps or discover the schema inside this release") from None
    found: dict[str, Any] = {}
    notes: dict[str, str] = {}
    used = 0.0
    if todo and not isinstance(data, pd.DataFrame):
        raise SchemaError(
            f"column(s) {todo[:5]} are not declared in the schema; discovering them reads the table in "
            "memory: declare them, or use --backend numpy (a DataFrame in the Python API)"
        )
    if todo:
        rho_disc = min(float(discovery_share) * rho, ledger.remaining)
        found, report, used = discover(
            data, todo, ChargedMechanisms(ledger, noise), rho=rho_disc, delta=reserved, kinds=kinds, bins=bins,
            max_levels=max_levels or DEFAULT_MAX_LEVELS,
        )
        notes = dict(report.notes)
        if status == SCHEMA_DECLARED:
            status = SCHEMA_DISCOVERED
    if replan and todo and used == 0.0:  # no key release: give the reserved delta back to zCDP
        final = Ledger(rho_for_release(eps, delta, prior_delta), delta_budget=prior_delta)
        final.entries = list(ledger.entries)
        ledger = final
    cols = [declared[n] if n in declared else found[n] for n in names]
    return SchemaPlan(schema=Schema(cols), ledger=ledger, status=status, notes=notes, discovered=todo)


def release(
    data: Any,
    schema: Any = None,
    *,
    eps: float,
    delta: float = DEFAULT_DELTA,
    target: str | None = None,
    workload: Any = "all-pairs",
    max_cells: int | None = None,
    max_model_size: float = 80.0,
    seed: int | np.random.Generator | None = None,
    rounds: int | None = None,
    iters: int | None = None,
    callback: Callable[[Any], None] | None = None,
    encoded: bool = False,
    engine: str = "numpy",
    insecure_seed: int | None = None,
    discover: bool | None = None,
    discovery_share: float = DEFAULT_DISCOVERY_SHARE,
    categorical: Sequence[str] = (),
    numeric: Sequence[str] = (),
    bins: int | None = None,
    max_levels: int | None = None,
    accept_draft_schema: bool = False,
    plan: SchemaPlan | None = None,
    backend: str | None = None,
    csv_options: Any = None,
    memory_limit: str | None = None,
    spark_master: str | None = None,
) -> Release:
    """Run AIM on ``data`` (raw values per ``schema``, or integer codes with ``encoded=True``) and return
    the release. The privacy budget (eps, delta) is converted to zCDP and spent in full.

    ``data`` may also be a path to a CSV / Parquet file or a Spark DataFrame: AIM gets its exact
    answers from the counting layer (:mod:`ddssp.data.counting`) in one scan, with ``backend``
    "numpy" (in memory; the default for DataFrames), "duckdb" (out of core; the default for files;
    ``memory_limit`` such as "2GB") or "spark" (``spark_master``); ``csv_options`` is a
    :class:`ddssp.data.counting.CsvOptions`. A table given by path needs every column declared
    (or a ``plan``): discovery reads a DataFrame.

    seed: reproducibility of everything that is not DP noise (AIM itself draws nothing else today).
        It never reaches the noise: that comes from OpenDP's secure samplers.
    insecure_seed: FOR TESTS ONLY. Draw the noise from ``numpy.random.default_rng(insecure_seed)``:
        the release is then reproducible, NOT PRIVATE (anyone with the seed can subtract the noise),
        and stamped so (:attr:`Release.stamp`) in the file and by every command that reads it.

    Columns of ``data`` that ``schema`` does not declare are discovered under DP inside the same
    budget (:func:`plan_schema`, with the same noise source) when ``discover`` is True (the default
    when ``schema`` is None); with ``discover=False`` a column missing from the schema is an error.
    ``plan`` (from :func:`plan_schema`) gives the schema and its ledger directly."""
    from ddssp.data.counting import count_marginals, default_backend, table_columns
    from ddssp.marginals.aim import run_aim

    eps, delta = check_eps(eps), check_delta(delta)
    created = _dt.datetime.now(_dt.timezone.utc).date().isoformat()  # taken before the data is read
    noise = make_noise(insecure_seed)
    chosen = default_backend(data) if backend is None else backend
    in_memory = isinstance(data, pd.DataFrame) and chosen == "numpy"
    if not isinstance(data, pd.DataFrame) and not encoded:
        if plan is None:
            plan = plan_schema(table_columns(data, csv_options), schema, eps=eps, delta=delta,
                               discovery_share=discovery_share, accept_draft=accept_draft_schema, noise=noise)
    if discover is None:
        discover = schema is None
    if encoded:
        if schema is None:
            raise SchemaError("integer-coded data (encoded=True) needs its schema")
        plan = SchemaPlan(schema=schema, ledger=Ledger(rho_from_eps_delta(eps, delta)), status=SCHEMA_DECLARED)
    elif plan is None:
        if not discover:
            if schema is None:
                raise SchemaError("no schema given: pass one, or discover it privately (discover=True)")
            extra = [str(c) for c in data.columns if str(c) not in schema]
            if extra:
                schema.encode(data)  # the usual error naming the columns not in the schema
        plan = plan_schema(data, schema, eps=eps, delta=delta, discovery_share=discovery_share,
                           categorical=categorical, numeric=numeric, bins=bins, max_levels=max_levels,
                           accept_draft=accept_draft_schema, noise=noise)
    schema = plan.schema
    if target is not None:
        schema.column(target)
    if encoded or in_memory:
        codes = schema.encode(data) if not encoded else _check_codes(data, schema)
        if len(codes) == 0:
            raise SchemaError("the table has no rows")
    else:
        def codes(cliques):  # AIM calls this once, with every clique it may measure
            return count_marginals(data, schema, cliques, backend=chosen, csv_options=csv_options,
                                   memory_limit=memory_limit, spark_master=spark_master)
    domain = schema.domain
    w = build_workload(workload, domain, target, max_cells)
    ledger = plan.ledger
    rho_aim = ledger.rho_budget - ledger.spent
    if not rho_aim > 0:
        raise DDSSPError("nothing of the budget is left for the marginals after schema discovery")
    rng = make_rng(seed)
    result = run_aim(
        codes, domain, w, rho_aim, rng=rng, max_model_size=max_model_size, rounds=rounds, iters=iters,
        callback=callback, engine=engine, noise=noise,
    )
    full = Ledger(ledger.rho_budget, delta_budget=ledger.delta_budget)
    full.entries = list(ledger.entries) + list(result.ledger.entries)
    # Only public settings go to the file; timings and iteration counts stay on the terminal.
    settings = dict(result.info.get("settings", {}))
    info = {"settings": settings} if _jsonable(settings) else {}
    return Release(
        schema=schema,
        model=result.model,
        ledger=full,
        eps=eps,
        delta=delta,
        workload=list(result.workload),
        measurements=list(result.measurements),
        target=target,
        created=created,
        info=info,
        noise=noise.describe(),
        schema_status=plan.status,
        local_info={k: v for k, v in dict(result.info).items() if k != "settings"} | {"rounds": int(result.rounds)},
    )


def _check_codes(codes: pd.DataFrame, schema: Any) -> pd.DataFrame:
    missing = [c for c in schema.names if c not in codes.columns]
    if missing:
        raise SchemaError(f"columns {missing} of the schema are not in the data")
    codes = codes[schema.names]
    for c in schema.names:
        col = codes[c]
        if not np.issubdtype(col.dtype, np.integer):
            raise SchemaError(f"column {c!r} is not integer-coded")
        if col.min() < 0 or col.max() >= schema.domain[c]:
            raise SchemaError(f"column {c!r} has codes outside 0..{schema.domain[c] - 1}")
    return codes.astype(np.int64)


def _jsonable(v: Any) -> bool:
    try:
        json.dumps(v, allow_nan=False)
        return True
    except (TypeError, ValueError):
        return False
