"""The :class:`Release` model: what a data holder publishes, and what an analyst can do from it alone."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ddssp._version import __version__
from ddssp.errors import DDSSPError, ReleaseFileError, SchemaError
from ddssp.releasefile.conditions import sample_under_rules, stored_rules, structural_zero_model
from ddssp.releasefile.format import (
    FORMAT,
    FORMAT_VERSION,
    SCHEMA_DECLARED,
    SCHEMA_NOT_PRIVATE,
    check_dataset_name,
    check_reading,
    check_rows,
    is_integral,
)
from ddssp.releasefile.reader import MAX_TOTAL_BYTES, read_release
from ddssp.releasefile.recycled import recycled_summary, write_recycled
from ddssp.releasefile.signing import (
    embedded_fingerprint,
    embedded_signature_valid,
    load_private_key,
    verify_signature,
)
from ddssp.releasefile.tails import decoded_rows
from ddssp.releasefile.writer import write_release

if TYPE_CHECKING:
    import pandas as pd

    from ddssp.dp import Ledger

# The privacy stack (ddssp.dp, OpenDP) and pandas are imported by the methods that use them: a file
# is read and checked by the reader first, so a malformed or hostile one is refused before them.


@dataclass
class Release:
    """A published DP release: everything an analyst needs, and no rows or exact counts.

    Made by :func:`ddssp.release` (the only step that reads the data); written with :meth:`save` to
    one portable file and read back with :meth:`load` in a fresh process without the data.
    Post-processing (:meth:`marginal`, :meth:`synthesize`, DD-SSP fits) needs nothing else.

    Parameters
    ----------
    schema : ddssp.data.Schema
        The columns, their kinds and code sizes.
    model : ddssp.marginals.model.GraphicalModel
        The graphical model fitted to the noisy marginals; it answers any marginal. Levels the schema
        marks empty (:attr:`ddssp.data.columns.Column.empty`) get no mass: the release holds the
        model conditioned on them (:func:`structural_zero_model`), and its file the fitted one.
    ledger : ddssp.dp.Ledger
        Every paid mechanism (discovery, selections, measurements) and the zCDP budget.
    eps, delta : float
        The (eps, delta)-DP guarantee of the whole release.
    workload : list of (tuple of str, float)
        The weighted cliques AIM was asked to answer well.
    measurements : list of ddssp.marginals.aim.Measurement
        The noisy marginals (clique, sigma, round, values).
    target : str, optional
        The column a regression will predict, if one was named.
    created : str
        The UTC date the release was started (no time of day).
    ddssp_version : str
        The version that wrote it.
    info : dict
        Public settings written to the file.
    noise : dict
        The noise source: ``{"source": "opendp", "secure": True}``, or the insecure seeded source
        (see :attr:`stamp`).
    signature : dict, optional
        The signature member as read by :meth:`load` (check it with :meth:`verify`).
    local_info : dict
        Timings and iteration counts for the terminal of the data holder; never written to the file.
    schema_status : str
        "declared" (public schema), "discovered" (all or part found under DP, in the ledger), or the
        ``SCHEMA_NOT_PRIVATE`` stamp (an unreviewed data-derived draft was accepted).
    signature_valid : bool or None
        Whether the signature checks against the key embedded in it: True, False (invalid: the file
        was modified after signing, or the signature member was copied from another file), or None
        (unsigned, or ``cryptography`` is missing). This says nothing about who signed: see
        :meth:`verify`.
    dataset_name : str, optional
        The publisher-chosen name of the data set, from manifest.json (covered by the signature).
    manifest_bytes : bytes, optional
        manifest.json as read by :meth:`load`, the bytes the signature covers (for :meth:`verify`).
    evidence : dict
        Discovery's public evidence for :meth:`grade` (noisy clipped shares of numeric columns, why
        columns were left out), written to the file's optional ``grade_evidence`` section.

    rules : list of str
        Declared consistency rules (:mod:`ddssp.data.rules`, public input, charged nothing), in their
        canonical text: synthetic rows never break one.
    recycled : list of ddssp.marginals.recycled.RecycledMeasurement
        One-way marginals summed from discovery's noisy grid counts, fitted with the measurements at
        no further charge; each names the ledger entry that paid for its counts.
    """

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
    schema_status: str = SCHEMA_DECLARED
    signature_valid: bool | None = field(default=None, repr=False, compare=False)
    dataset_name: str | None = field(default=None, compare=False)
    manifest_bytes: bytes | None = field(default=None, repr=False, compare=False)
    evidence: dict[str, Any] = field(default_factory=dict, repr=False)
    rules: list[str] = field(default_factory=list)
    recycled: list[Any] = field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        # levels the schema marks empty (structural zeros) get no mass: the model is conditioned on
        # them once, so its marginals, the fits that read them and synthetic rows all agree; the file
        # keeps the fitted model (finite log-potentials), which a load conditions again
        self._fitted = getattr(self.model, "unconditioned", self.model)
        if self.model is not None:
            self.model = structural_zero_model(self.schema, self.model)
        self._conditioned = self.model

    # ------------------------------------------------------------------ analyst API
    @property
    def stamp(self) -> str | None:
        """:data:`~ddssp.dp.noise.INSECURE_STAMP` when the noise is reproducible from a seed, else None."""
        from ddssp.dp.noise import INSECURE_STAMP

        return None if self.noise.get("secure") is True else INSECURE_STAMP

    @property
    def signed_by(self) -> str | None:
        """Fingerprint of the key embedded in the signature (NOT verified against a trusted key: see
        :meth:`verify`), or None when unsigned or when the signature does not even check against
        that embedded key (:attr:`signature_valid` is False)."""
        if self.signature_valid is False:
            return None
        return embedded_fingerprint(self.signature)

    @property
    def reading(self) -> dict[str, Any]:
        """How the release's raw table was read (``na_values``, ``delimiter``, ``encoding``): public
        settings stored in the file, reused by commands that read raw rows with its schema
        (``ddssp evaluate``). Defaults (empty cells only, ``,``, UTF-8) when the file has none."""
        r = self.info.get("reading") if isinstance(self.info, dict) else None
        return check_reading(r) if r is not None else {"na_values": [], "delimiter": ",", "encoding": "utf-8"}

    @property
    def fitted_model(self) -> Any:
        """The model as fitted to the measurements, before the schema's empty levels are zeroed in
        :attr:`model` (what the file holds, and what the model-fit self-check tests)."""
        return self._fitted if self.model is self._conditioned else self.model

    @property
    def rho_budget(self) -> float:
        """The zCDP budget of the release."""
        return self.ledger.rho_budget

    @property
    def rho_spent(self) -> float:
        """The zCDP the ledger has charged."""
        return self.ledger.spent

    @property
    def eps_spent(self) -> float:
        """The (eps, delta) guarantee actually used (<= eps), by the same CKS conversion."""
        from ddssp.dp import eps_from_rho_delta

        if self.rho_spent <= 0:
            return 0.0
        return min(eps_from_rho_delta(self.rho_spent, self.delta - self.ledger.delta_budget), self.eps)

    @property
    def schema_private(self) -> bool:
        """False when the schema is an unreviewed data-derived draft (``SCHEMA_NOT_PRIVATE``)."""
        return self.schema_status != SCHEMA_NOT_PRIVATE

    @property
    def domain(self) -> dict[str, int]:
        """``{column: number of codes}``, in schema order."""
        return self.schema.domain

    @property
    def total(self) -> float:
        """The model's (noisy) estimate of the number of rows; the exact count is never stored."""
        return float(self.model.total)

    def marginal(self, cols: str | Sequence[str]) -> np.ndarray:
        """Counts of the model's marginal over some columns (post-processing).

        Parameters
        ----------
        cols : str or sequence of str
            The columns, in the order of the result's axes.

        Returns
        -------
        numpy.ndarray
            Shape: the columns' sizes.

        Raises
        ------
        SchemaError
            For an unknown or repeated column.
        """
        cols = (cols,) if isinstance(cols, str) else tuple(cols)
        for c in cols:
            self.schema.column(c)  # SchemaError naming an unknown column
        if len(set(cols)) != len(cols):
            raise SchemaError(f"repeated column in marginal query {cols}")
        return self.model.marginal(cols)

    def synthesize_codes(self, rows: int, seed: int | np.random.Generator | None = None) -> pd.DataFrame:
        """Synthetic records as integer codes, sampled from the model by controlled rounding.

        Parameters
        ----------
        rows : int
            The number of records, positive.
        seed : int or numpy.random.Generator, optional
            Seeds the sampling (post-processing, not DP noise); fresh entropy by default.

        Returns
        -------
        pandas.DataFrame
            Columns in schema order.

        Raises
        ------
        DDSSPError
            For a ``rows`` that is not a positive integer.
        """
        from ddssp.dp import make_rng

        rows = check_rows(rows)
        codes = sample_under_rules(self, rows, make_rng(seed), method="rounded")
        return codes[self.schema.names]

    def compiled_rules(self) -> list[Any]:
        """The release's rules compiled under its schema (:func:`ddssp.data.rules.compile_rules`).

        Returns
        -------
        list of CompiledRule
        """
        from ddssp.data.rules import compile_rules

        return compile_rules(list(self.rules), self.schema) if self.rules else []

    def synthesize(self, rows: int, seed: int | np.random.Generator | None = None) -> pd.DataFrame:
        """Synthetic records decoded to the schema's labels and numeric values.

        The codes of :meth:`synthesize_codes` with the same seed, decoded after them (no privacy cost):
        values drawn inside bins, then sorted inside bins by declared orders
        (:func:`~ddssp.releasefile.tails.decoded_rows`).

        Parameters
        ----------
        rows : int
            The number of records, positive.
        seed : int or numpy.random.Generator, optional
            Seeds the sampling (post-processing, not DP noise); fresh entropy by default.

        Returns
        -------
        pandas.DataFrame

        Raises
        ------
        DDSSPError
            For a ``rows`` that is not a positive integer.
        """
        from ddssp.dp import make_rng

        rng = make_rng(seed)
        return decoded_rows(self, self.synthesize_codes(rows, rng), rng)

    def sample(self, rows: int, seed: int | np.random.Generator | None = None) -> pd.DataFrame:
        """``rows`` synthetic records as a DataFrame in the data's own labels and values.

        The name synthetic-data libraries use (SDV, smartnoise-synth, synthcity); the same as
        :meth:`synthesize`. Sampling is post-processing: it costs no privacy.

        Parameters
        ----------
        rows : int
            Number of records.
        seed : int or numpy.random.Generator, optional
            Makes the draw reproducible.

        Returns
        -------
        pandas.DataFrame
            One column per schema column, in schema order.
        """
        return self.synthesize(rows, seed)

    def grade(self) -> Any:
        """How far each column and pair can be trusted, from the release alone (post-processing).

        Returns
        -------
        ddssp.releasefile.quality.Grade
            Per column its one-way noise, clipped and folded shares and why it is weak; per pair
            measured or inferred; the dropped columns (see :mod:`ddssp.releasefile.quality`).
        """
        from ddssp.releasefile.quality import grade

        return grade(self)

    def __repr__(self) -> str:
        k = len(self.schema.names)
        insecure = "" if self.stamp is None else f", {self.stamp}"
        weak = self.grade().weak
        shown = ", ".join(weak[:5]) + (f" and {len(weak) - 5} more" if len(weak) > 5 else "")
        return (
            f"<ddssp Release: eps={self.eps:g}, delta={self.delta:g}, {k} columns, "
            f"{len(self.measurements)} noisy marginals, schema {self.schema_status}{insecure}"
            + (f"; weak columns: {shown}" if weak else "")
            + ">"
        )

    def _repr_html_(self) -> str:
        """The release in a notebook: the one-line summary and the grade's table."""
        import html

        from ddssp.releasefile.quality import grade_html

        return f"<p>{html.escape(repr(self))}</p>" + grade_html(self.grade())

    def summary(self) -> dict[str, Any]:
        """What was released, at what cost (the ``inspect`` view).

        Returns
        -------
        dict
            Format, versions, stamps and signature status, the budget and spending (with discovery's
            share), the columns, the measured cliques and their sigmas, rounds, the model's cliques and
            the one-way marginals recycled from discovery's counts (measured levels, their sigmas).
        """
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
            "signature_valid": self.signature_valid,
            "dataset_name": self.dataset_name,
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
            "cliques": [{"clique": list(c), "measurements": len(s), "sigma": s} for c, s in by_clique.items()],
            "selections": n_select,
            "rounds": max((int(m.round) for m in self.measurements), default=0),
            "model_cliques": [list(c) for c in self.model.cliques],
            "model_total": self.total,
            "workload_size": len(self.workload),
            "rules": list(self.rules),
            "info": self.info,
            "recycled": recycled_summary(self.recycled),
        }

    # ------------------------------------------------------------------ file I/O
    def to_document(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """release.json as a dict, and the arrays by name (what :meth:`save` writes).

        Returns
        -------
        doc : dict
        arrays : dict
            ``{name: array}``: the model's log-potentials (float64) and the measurements (int64 when
            integral, else float64).
        """
        arrays: dict[str, np.ndarray] = {}
        model_meta, model_arrays = self.fitted_model.to_arrays()
        model_names = {}
        for k, a in model_arrays.items():
            name = f"model/{len(model_names)}"
            model_names[k] = name
            arrays[name] = np.asarray(a, dtype="<f8")
        meas_index = []
        for i, m in enumerate(self.measurements):
            name = f"measurements/{i}"
            v = np.asarray(m.values)
            arrays[name] = v.astype("<i8") if is_integral(v) else v.astype("<f8")
            meas_index.append({"clique": list(m.clique), "sigma": float(m.sigma), "round": int(m.round), "array": name})
        recycled = write_recycled(self.recycled, arrays)  # discovery's counts summed onto levels
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
        from ddssp.releasefile.quality import SECTION, evidence_section

        evidence = evidence_section(self.evidence.get("clipped", {}), self.evidence.get("dropped", {}))
        if evidence:  # optional: a release without discovery evidence writes none (as older versions)
            doc[SECTION] = evidence

        if recycled:  # optional: a release that fitted none writes none (as older versions)
            doc["recycled"] = recycled
        if self.rules:
            doc["rules"] = list(self.rules)
        return doc, arrays

    def save(
        self,
        path: str | Path,
        force: bool = False,
        inputs: Sequence[str | Path] = (),
        sign_key: str | Path | bytes | None = None,
        dataset_name: str | None = None,
    ) -> Path:
        """Write the release to one file, atomically (temporary file + rename).

        Parameters
        ----------
        path : str or Path
            Where to write it.
        force : bool
            Overwrite an existing file.
        inputs : sequence of paths
            The input files of the run: writing over one of them is refused.
        sign_key : str, Path or bytes, optional
            An unencrypted Ed25519 private key in PEM (file or bytes): adds an Ed25519 signature of
            manifest.json (needs the ``cryptography`` package: ``pip install 'ddssp[sign]'``).
        dataset_name : str, optional
            A public name of the data set chosen by the publisher, written to manifest.json beside
            the creation date (:attr:`created`, a date without time of day): a signature binds both,
            so a signed file cannot be passed off as the release of another data set or date.

        Returns
        -------
        Path
            The path written.

        Raises
        ------
        DDSSPError
            If ``path`` exists (without ``force``), is an input, or the key cannot be read.
        """
        from ddssp.data.fileio import check_output_path

        out = check_output_path(path, force=force, inputs=inputs)
        private = load_private_key(sign_key) if sign_key is not None else None
        check_dataset_name(dataset_name)
        doc, arrays = self.to_document()
        return write_release(out, doc, arrays, private, dataset_name=dataset_name)

    @classmethod
    def from_document(
        cls, document: dict[str, Any], arrays: dict[str, np.ndarray], *, source: str | Path = "release document"
    ) -> Release:
        """The release that :meth:`to_document` describes, checked as :meth:`load` checks a file.

        The inverse of :meth:`to_document`: ``Release.from_document(*rel.to_document())`` holds the
        same schema, ledger, measurements, model and settings as ``rel``. The content must pass the
        shape checks and :meth:`self_check` (and the noise stamp and model-fit checks of
        :mod:`ddssp.releasefile.selfcheck`). The signature and the manifest belong to the file, not the
        document: :meth:`load` adds them.

        Parameters
        ----------
        document : dict
            release.json as a dict.
        arrays : dict
            ``{name: numpy.ndarray}``: the arrays that ``document`` names.
        source : str or Path
            Where the document came from, the start of every error message.

        Returns
        -------
        Release

        Raises
        ------
        ReleaseFileError
            With one line, for a missing or malformed field, or content that fails a check.
        """
        from ddssp.data import Schema
        from ddssp.dp import Ledger, check_delta, check_eps
        from ddssp.marginals.aim import Measurement
        from ddssp.marginals.model import GraphicalModel
        from ddssp.releasefile.quality import SECTION, check_evidence
        from ddssp.releasefile.recycled import read_recycled
        from ddssp.releasefile.selfcheck import check_shapes, model_fit_problem, stamp_problem

        doc = document
        try:
            schema = Schema.from_dict(doc["schema"])
            ledger = Ledger.from_dict(doc["ledger"])
            eps, delta = check_eps(doc["eps"]), check_delta(doc["delta"])
            workload = [(tuple(w["clique"]), float(w["weight"])) for w in doc["workload"]]
            measurements = [
                Measurement(
                    clique=tuple(m["clique"]),
                    sigma=float(m["sigma"]),
                    values=arrays[m["array"]].astype(float),
                    round=int(m["round"]),
                )
                for m in doc["measurements"]
            ]
            model_arrays = {k: arrays[v] for k, v in doc["model"]["arrays"].items()}
            model = GraphicalModel.from_arrays(doc["model"]["meta"], model_arrays)
            info = doc.get("info", {})
            if not isinstance(info, dict):
                raise ValueError("info must be an object")
            if "reading" in info:
                check_reading(info["reading"])
            noise = doc["noise"]
            if not isinstance(noise, dict) or not isinstance(noise.get("secure"), bool):
                raise ValueError("the noise source is not described")
            disc = {e.clique[0] for e in ledger.discovery_entries if e.clique}
            evidence = check_evidence(doc[SECTION], schema.names, disc) if SECTION in doc else {}
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
                info=dict(info),
                noise=dict(noise),
                schema_status=str(doc.get("schema_status", SCHEMA_DECLARED)),
                evidence=evidence,
                rules=stored_rules(doc.get("rules", []), schema),
                recycled=read_recycled(doc.get("recycled", []), arrays),
            )
        except ReleaseFileError:
            raise
        except (KeyError, TypeError, ValueError, OverflowError, DDSSPError) as exc:
            raise ReleaseFileError(
                f"{source}: release content is invalid or incomplete ({type(exc).__name__}: {exc})"
            ) from None
        check_shapes(rel, source)
        try:
            problem = (
                rel.self_check(stated_rho_spent=doc["ledger"].get("rho_spent"))
                or stamp_problem(rel)
                or model_fit_problem(rel)
            )
        except (ArithmeticError, ValueError, TypeError) as exc:  # e.g. a sigma whose square under/overflows
            problem = f"its numbers cannot be checked ({type(exc).__name__}: {str(exc)[:120]})"
        if problem:
            raise ReleaseFileError(f"{source}: self-check failed: {problem}; refusing a corrupt or tampered release")
        return rel

    @classmethod
    def load(
        cls,
        path: str | Path,
        *,
        max_bytes: int = MAX_TOTAL_BYTES,
        max_memory: int | None = None,
        public_key: str | Path | bytes | None = None,
    ) -> Release:
        """Read, bound, checksum and self-check a release file, without the data.

        The reading is bounded (:mod:`ddssp.releasefile.reader`) and never unpickles or executes
        anything; the content is then rebuilt and checked by :meth:`from_document`, and the manifest's
        data-set name, creation date and signature are attached.

        Parameters
        ----------
        path : str or Path
            The release file.
        max_bytes : int
            Cap on the file's size and on the sum of the members' uncompressed sizes, checked before
            anything is read.
        max_memory : int, optional
            Budget in bytes for everything the load allocates (arrays, their float copies, the
            checks' temporaries, the model), computed from the declared shapes before any array is
            decompressed. Default: the ``DDSSP_MAX_LOAD_MEMORY`` environment variable, else 1 GiB.
        public_key : str, Path or bytes, optional
            An Ed25519 public key (PEM): the signature of manifest.json is checked against it before
            anything else in the file is parsed, and the load is refused unless it matches.

        Returns
        -------
        Release
            The release, with its signature (if any) kept for :meth:`verify`.

        Raises
        ------
        ReleaseFileError
            With one line, for a missing, malformed, oversized, corrupt or tampered file.
        """
        path = Path(path)
        doc, arrays = read_release(path, max_bytes, max_memory=max_memory, public_key=public_key)
        sig = doc.pop("__signature__")
        rel = cls.from_document(doc, arrays, source=path)
        manifest = sig.get("manifest_doc") or {}
        name = manifest.get("dataset_name")
        rel.dataset_name = name if isinstance(name, str) else None
        if "created" in manifest and manifest.get("created") != rel.created:
            raise ReleaseFileError(
                f"{path}: the manifest's creation date {manifest.get('created')!r} is not the "
                f"release's {rel.created!r}; refusing a tampered file"
            )
        rel.manifest_bytes = sig["manifest"]
        rel.signature = sig["signature"]
        rel.signature_valid = embedded_signature_valid(rel.signature, rel.manifest_bytes)
        return rel

    # ------------------------------------------------------------------ signatures (optional)
    def verify(self, public_key: str | Path | bytes) -> str:
        """Check this (loaded) release's Ed25519 signature against ``public_key``.

        The signature covers manifest.json, which holds the SHA-256 and size of every other member,
        so it covers the whole release.

        Parameters
        ----------
        public_key : str, Path or bytes
            A PEM file, or PEM bytes, of an Ed25519 public key.

        Returns
        -------
        str
            The key's fingerprint.

        Raises
        ------
        ReleaseFileError
            If the release is not signed, or not by that key, or was modified after signing.
        """
        return verify_signature(self.signature, self.manifest_bytes, public_key)

    def self_check(self, stated_rho_spent: Any = None) -> str | None:
        """The ledger against itself, the measurements and (eps, delta).

        See :func:`ddssp.releasefile.selfcheck.self_check` for the list of checks.

        Parameters
        ----------
        stated_rho_spent : float, optional
            The ``rho_spent`` written in the file, compared with the sum of the entries.

        Returns
        -------
        str or None
            The first problem found, or None.
        """
        from ddssp.releasefile.selfcheck import self_check

        return self_check(self, stated_rho_spent)
