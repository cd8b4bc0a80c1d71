"""The release: what a data holder publishes, and everything an analyst can do from it alone.

``release(df, schema, eps=..., delta=...)`` runs AIM on the table (the only step that reads the data)
and returns a :class:`Release`. ``Release.save`` writes one portable file; ``Release.load`` reads it in a
fresh process without the data. Post-processing (marginals, synthetic rows, DD-SSP fits) needs nothing
else.

File format ``ddssp-release`` version 1 (see README "The release file"): a ZIP archive with
- ``manifest.json``: {"format": "ddssp-release", "format_version": 1, "files": {member: sha256}};
- ``release.json``: parameters, schema, ledger, workload, measurement index, model metadata;
- ``arrays/<name>.npy``: plain numeric arrays (model parameters, noisy measurements), loaded with
  ``allow_pickle=False``.
Loading checks the format and version, that the member list equals the manifest, every checksum, and
that arrays are numeric and fit the schema. It never unpickles or executes anything.
"""

from __future__ import annotations

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
from ddssp.dp import Ledger, check_delta, check_eps, eps_from_rho_delta, make_rng, rho_from_eps_delta

FORMAT = "ddssp-release"
FORMAT_VERSION = 1
DEFAULT_DELTA = 1e-9
_MAX_MEMBER_BYTES = 4 << 30  # refuse absurd members before reading them


@dataclass
class Release:
    """A published DP release: schema, privacy parameters and ledger, workload, noisy measurements and
    the fitted graphical model that answers any marginal. Holds no rows and no exact counts."""

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

    # ------------------------------------------------------------------ analyst API
    @property
    def rho_budget(self) -> float:
        return self.ledger.rho_budget

    @property
    def rho_spent(self) -> float:
        return self.ledger.spent

    @property
    def eps_spent(self) -> float:
        """The (eps, delta) guarantee actually used (<= eps), by the same CKS conversion."""
        return min(eps_from_rho_delta(self.rho_spent, self.delta), self.eps) if self.rho_spent > 0 else 0.0

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
        return {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "ddssp_version": self.ddssp_version,
            "created": self.created,
            "eps": self.eps,
            "delta": self.delta,
            "eps_spent": self.eps_spent,
            "rho_budget": self.rho_budget,
            "rho_spent": self.rho_spent,
            "target": self.target,
            "columns": {c.name: {"kind": c.kind, "size": c.size} for c in self.schema.columns},
            "cliques": [
                {"clique": list(c), "measurements": len(s), "sigma": s} for c, s in by_clique.items()
            ],
            "selections": n_select,
            "model_cliques": [list(c) for c in self.model.cliques],
            "model_total": self.total,
            "workload_size": len(self.workload),
            "info": self.info,
        }

    # ------------------------------------------------------------------ file I/O
    def save(self, path: str | Path, force: bool = False, inputs: Sequence[str | Path] = ()) -> Path:
        """Write the release atomically (temporary file + rename). Refuses to overwrite unless ``force``."""
        out = check_output_path(path, force=force, inputs=inputs)
        arrays: dict[str, np.ndarray] = {}
        model_meta, model_arrays = self.model.to_arrays()
        model_names = {}
        for k, a in model_arrays.items():
            name = f"model/{len(model_names)}"
            model_names[k] = name
            arrays[name] = np.asarray(a, dtype=float)
        meas_index = []
        for i, m in enumerate(self.measurements):
            name = f"measurements/{i}"
            arrays[name] = np.asarray(m.values, dtype=float)
            meas_index.append({"clique": list(m.clique), "sigma": float(m.sigma), "round": int(m.round), "array": name})
        doc = {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "ddssp_version": self.ddssp_version,
            "created": self.created,
            "eps": self.eps,
            "delta": self.delta,
            "target": self.target,
            "schema": self.schema.to_dict(),
            "ledger": self.ledger.to_dict(),
            "workload": [{"clique": list(c), "weight": float(w)} for c, w in self.workload],
            "measurements": meas_index,
            "model": {"meta": model_meta, "arrays": model_names},
            "info": self.info,
        }
        members: dict[str, bytes] = {"release.json": _json_bytes(doc)}
        for name, a in arrays.items():
            buf = io.BytesIO()
            np.save(buf, a, allow_pickle=False)
            members[f"arrays/{name}.npy"] = buf.getvalue()
        manifest = {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "files": {k: hashlib.sha256(v).hexdigest() for k, v in members.items()},
        }
        with atomic_write(out, "wb") as fh:
            with zipfile.ZipFile(fh, "w", compression=zipfile.ZIP_DEFLATED) as zf:
                zf.writestr("manifest.json", _json_bytes(manifest))
                for k, v in members.items():
                    zf.writestr(k, v)
        return out

    @classmethod
    def load(cls, path: str | Path) -> "Release":
        """Read and validate a release file. Any problem raises :class:`ReleaseFileError`."""
        from ddssp.marginals.aim import Measurement
        from ddssp.marginals.model import GraphicalModel
        from ddssp.data import Schema

        path = Path(path)
        if not path.exists():
            raise ReleaseFileError(f"release file {path} not found")
        if path.is_dir():
            raise ReleaseFileError(f"{path} is a directory, not a release file")
        members = _read_members(path)
        try:
            doc = json.loads(members["release.json"])
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ReleaseFileError(f"{path}: release.json is not valid JSON ({exc})") from None

        def arr(name: str) -> np.ndarray:
            key = f"arrays/{name}.npy"
            if key not in members:
                raise ReleaseFileError(f"{path}: array {name!r} is missing")
            try:
                a = np.load(io.BytesIO(members[key]), allow_pickle=False)
            except ValueError as exc:
                raise ReleaseFileError(
                    f"{path}: array {name!r} holds Python objects (pickle); refusing to load it ({exc})"
                ) from None
            except Exception as exc:  # noqa: BLE001 - any decoding failure is a corrupt file
                raise ReleaseFileError(f"{path}: array {name!r} is not a valid .npy array ({exc})") from None
            if a.dtype.kind not in "fiu":
                raise ReleaseFileError(f"{path}: array {name!r} has non-numeric dtype {a.dtype}")
            if not np.all(np.isfinite(a)):
                raise ReleaseFileError(f"{path}: array {name!r} has NaN or infinite values")
            return a

        try:
            schema = Schema.from_dict(doc["schema"])
            ledger = Ledger.from_dict(doc["ledger"])
            eps, delta = check_eps(doc["eps"]), check_delta(doc["delta"])
            workload = [(tuple(w["clique"]), float(w["weight"])) for w in doc["workload"]]
            measurements = [
                Measurement(
                    clique=tuple(m["clique"]), sigma=float(m["sigma"]), values=arr(m["array"]), round=int(m["round"])
                )
                for m in doc["measurements"]
            ]
            model_arrays = {k: arr(v) for k, v in doc["model"]["arrays"].items()}
            model = GraphicalModel.from_arrays(doc["model"]["meta"], model_arrays)
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
            )
        except ReleaseFileError:
            raise
        except (KeyError, TypeError, ValueError, DDSSPError) as exc:
            raise ReleaseFileError(f"{path}: release content is invalid or incomplete ({type(exc).__name__}: {exc})") from None
        rel._validate(path)
        return rel

    def _validate(self, path: Path) -> None:
        if dict(self.model.domain) != dict(self.schema.domain):
            raise ReleaseFileError(f"{path}: the model's domain does not match the release's schema")
        if self.ledger.spent > self.ledger.rho_budget * (1 + 1e-9):
            raise ReleaseFileError(f"{path}: ledger spends more than its budget; the file is not trustworthy")
        budget = rho_from_eps_delta(self.eps, self.delta)
        if not math.isclose(budget, self.ledger.rho_budget, rel_tol=1e-9):
            raise ReleaseFileError(f"{path}: rho budget does not match eps={self.eps}, delta={self.delta}")
        names = set(self.schema.names)
        for m in self.measurements:
            if not set(m.clique) <= names:
                raise ReleaseFileError(f"{path}: measurement on unknown columns {m.clique}")
            shape = tuple(self.schema.domain[c] for c in m.clique)
            if m.values.size != math.prod(shape):
                raise ReleaseFileError(f"{path}: measurement {m.clique} has {m.values.size} cells, expected {shape}")


def _json_bytes(obj: Any) -> bytes:
    return json.dumps(obj, indent=1, sort_keys=False, allow_nan=False).encode("utf-8")


def _read_members(path: Path) -> dict[str, bytes]:
    try:
        zf = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        raise ReleaseFileError(f"{path} is not a ddssp release file (not a readable archive: {exc})") from None
    with zf:
        names = zf.namelist()
        if "manifest.json" not in names:
            raise ReleaseFileError(f"{path} is not a ddssp release file (no manifest.json)")
        try:
            manifest = json.loads(zf.read("manifest.json"))
        except Exception as exc:  # noqa: BLE001
            raise ReleaseFileError(f"{path}: manifest is unreadable ({exc})") from None
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
        if not isinstance(files, dict) or "release.json" not in files:
            raise ReleaseFileError(f"{path}: manifest lists no release.json")
        extra = sorted(set(names) - set(files) - {"manifest.json"})
        if extra:
            raise ReleaseFileError(f"{path} contains unexpected members {extra[:3]}; refusing a tampered file")
        out: dict[str, bytes] = {}
        for name, digest in files.items():
            if name not in names:
                raise ReleaseFileError(f"{path}: member {name} is missing (truncated file?)")
            if zf.getinfo(name).file_size > _MAX_MEMBER_BYTES:
                raise ReleaseFileError(f"{path}: member {name} is implausibly large")
            try:
                data = zf.read(name)
            except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
                raise ReleaseFileError(f"{path}: member {name} is corrupt ({exc})") from None
            if hashlib.sha256(data).hexdigest() != digest:
                raise ReleaseFileError(f"{path}: checksum mismatch in {name}; the file is corrupt or was modified")
            out[name] = data
        return out


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


def release(
    data: pd.DataFrame,
    schema: Any,
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
) -> Release:
    """Run AIM on ``data`` (raw values per ``schema``, or integer codes with ``encoded=True``) and return
    the release. The privacy budget (eps, delta) is converted to zCDP and spent in full."""
    from ddssp.marginals.aim import run_aim

    eps, delta = check_eps(eps), check_delta(delta)
    if target is not None:
        schema.column(target)
    codes = schema.encode(data) if not encoded else _check_codes(data, schema)
    if len(codes) == 0:
        raise SchemaError("the table has no rows")
    domain = schema.domain
    w = build_workload(workload, domain, target, max_cells)
    rho = rho_from_eps_delta(eps, delta)
    rng = make_rng(seed)
    result = run_aim(
        codes, domain, w, rho, rng=rng, max_model_size=max_model_size, rounds=rounds, iters=iters, callback=callback,
        engine=engine,
    )
    info = {k: v for k, v in dict(result.info).items() if _jsonable(v)}
    info["rounds"] = int(result.rounds)
    return Release(
        schema=schema,
        model=result.model,
        ledger=result.ledger,
        eps=eps,
        delta=delta,
        workload=list(result.workload),
        measurements=list(result.measurements),
        target=target,
        created=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        info=info,
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
