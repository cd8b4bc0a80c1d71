"""Every mechanism that releases something noisy, charged first and then run: :class:`ChargedMechanisms`.

One object binds a :class:`~ddssp.dp.accounting.Ledger` (the bookkeeping: budget and entries) and a
:class:`~ddssp.dp.noise.NoiseSource` (the draws). Each of its methods checks its arguments, charges
the ledger what OpenDP's privacy map says the mechanism costs, and only then draws the noise. When
the ledger cannot pay, :class:`~ddssp.errors.BudgetExceededError` is raised and nothing is drawn, so
the ledger never passes its budget and holds an entry for every mechanism that ran.

- :meth:`~ChargedMechanisms.measure` (AIM): the discrete Gaussian on integer counts; entry ``measure``.
- :meth:`~ChargedMechanisms.select` (AIM): the exponential mechanism as Gumbel noisy max, on every
  candidate or on the allowed ones only (:func:`ddssp.dp.selection.restricted_noisy_max`); entry
  ``select``.
- :meth:`~ChargedMechanisms.counts`, :meth:`~ChargedMechanisms.keys`,
  :meth:`~ChargedMechanisms.medians` (schema discovery; their costs and checks are in
  :mod:`ddssp.dp.discovery_mechanisms`): entries ``discover-counts``, ``discover-keys``, ``discover-medians``.
- :meth:`~ChargedMechanisms.run_opendp`: any other OpenDP measurement, charged by its own map
  (:meth:`~ddssp.dp.accounting.Ledger.charge_opendp`); its kind needs an entry check
  (:func:`~ddssp.dp.entries.register_entry_check`) for a release holding it to verify on load.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from ddssp.dp.accounting import Ledger
from ddssp.dp.discovery_mechanisms import (
    MEDIAN_SENSITIVITY,
    choose_threshold,
    gaussian_counts_rho,
    gaussian_threshold_measurement,
    median_scale,
    median_scores,
    threshold_cost,
    threshold_fallback,
)
from ddssp.dp.entries import LedgerEntry
from ddssp.dp.measurements import gaussian_measurement, noisy_max_measurement, opendp_charge
from ddssp.dp.mechanisms import exponential_rho, gaussian_rho
from ddssp.dp.noise import NoiseSource, make_noise
from ddssp.dp.params import check_eps, check_positive
from ddssp.dp.selection import restricted_noisy_max
from ddssp.errors import PrivacyParameterError


def _agree(kind: str, ours: float, opendp: float) -> None:
    """Our formula and OpenDP's map must agree (OpenDP rounds up by a few ulps)."""
    if not math.isclose(ours, opendp, rel_tol=1e-9):  # pragma: no cover - a bug, not bad input
        raise RuntimeError(f"{kind}: ledger formula rho={ours!r} disagrees with OpenDP's map rho={opendp!r}")


class ChargedMechanisms:
    """A ledger and a noise source bound together: each call charges the ledger, then runs the mechanism.

    Schema discovery (:func:`ddssp.data.discovery.discover`, which reads the data only through
    :meth:`counts`, :meth:`keys` and :meth:`medians`; the data layer does not import the DP layer)
    and AIM (:meth:`measure`, :meth:`select`) run every noisy mechanism through one of these.

    Parameters
    ----------
    ledger : Ledger
        Pays for every call.
    noise : NoiseSource, optional
        Draws the noise; :class:`~ddssp.dp.noise.SecureNoise` by default.

    Raises
    ------
    TypeError
        When ``noise`` is not a :class:`~ddssp.dp.noise.NoiseSource` (e.g. a numpy Generator).
    """

    def __init__(self, ledger: Ledger, noise: NoiseSource | None = None):
        noise = make_noise(None) if noise is None else noise
        if not isinstance(noise, NoiseSource):
            raise TypeError(
                "DP noise must come from a ddssp.dp.noise.NoiseSource (secure by default), not "
                f"{type(noise).__name__}; numpy generators never draw DP noise"
            )
        self.ledger = ledger
        self.noise = noise

    # ------------------------------------------------------------------ AIM
    def measure(
        self,
        values: np.ndarray,
        sigma: float,
        *,
        clique: Iterable[str] | None = None,
        round: int | None = None,
        sensitivity: int = 1,
    ) -> np.ndarray:
        """Charge for, then run, the discrete Gaussian mechanism on integer counts (a 'measure' entry).

        Parameters
        ----------
        values : numpy.ndarray
            Integer counts, any shape.
        sigma : float
            The noise scale.
        clique : iterable of str, optional
            What is measured, for the entry.
        round : int, optional
            The AIM round, for the entry.
        sensitivity : int
            The L2 sensitivity of ``values``, a positive integer.

        Returns
        -------
        numpy.ndarray
            Integer noisy counts (int64), shaped like ``values``.

        Raises
        ------
        PrivacyParameterError
            For an invalid sensitivity or sigma.
        BudgetExceededError
            When the charge does not fit in the budget left (no noise is drawn).
        """
        if isinstance(sensitivity, bool) or int(sensitivity) != sensitivity or sensitivity < 1:
            raise PrivacyParameterError(f"the L2 sensitivity of counts must be a positive integer, got {sensitivity!r}")
        sigma = float(sigma)
        rho, _ = opendp_charge(gaussian_measurement(sigma), int(sensitivity))
        _agree("measure", gaussian_rho(sigma, sensitivity), rho)
        self.ledger.charge(
            LedgerEntry(
                "measure",
                rho,
                sigma=sigma,
                clique=tuple(clique) if clique is not None else None,
                round=round,
                params={"sensitivity": int(sensitivity), "noise": "discrete_gaussian"},
            )
        )
        return self.noise.gaussian_int(values, sigma)

    def select(
        self,
        scores: Iterable[float],
        eps_em: float,
        sensitivity: float,
        *,
        round: int | None = None,
        allowed: Callable[[int], bool] | None = None,
        tries: int = 8,
    ) -> int:
        """Charge for, then run, the exponential mechanism on scores (a 'select' entry).

        It runs as Gumbel noisy max with scale 2 * sensitivity / eps_em, whose zCDP cost is eps_em^2 / 8
        (OpenDP's map of ``make_noisy_max`` with a zCDP output measure).

        With ``allowed``, the mechanism runs on the allowed candidates only, deciding for as few
        candidates as it can whether they are allowed (:func:`~ddssp.dp.selection.restricted_noisy_max`).
        The output has the distribution of the exponential mechanism on the allowed set, so the
        charge is the same; ``sensitivity`` is then that of the allowed candidates' scores.

        Parameters
        ----------
        scores : iterable of float
            Finite quality scores, one per candidate (at least one).
        eps_em : float
            The exponential mechanism's parameter.
        sensitivity : float
            The L-inf sensitivity of the scores.
        round : int, optional
            The AIM round, for the entry.
        allowed : callable, optional
            ``allowed(i)`` tells whether candidate ``i`` may be selected (a decision on public
            information only; at least one candidate must be allowed).
        tries : int
            Draws that were not allowed before every candidate is decided.

        Returns
        -------
        int
            The index of the selected candidate.

        Raises
        ------
        PrivacyParameterError
            For no candidates, non-finite scores, or invalid parameters.
        BudgetExceededError
            When the charge does not fit in the budget left (no noise is drawn).
        """
        scores = np.asarray(list(scores), dtype=float)
        if scores.size == 0:
            raise PrivacyParameterError("the exponential mechanism needs at least one candidate")
        if not np.all(np.isfinite(scores)):
            raise PrivacyParameterError("exponential mechanism scores must be finite")
        eps_em = check_eps(eps_em, "eps_em")
        sens = float(sensitivity)
        if not (math.isfinite(sens) and sens > 0):
            raise PrivacyParameterError(f"quality sensitivity must be positive, got {sensitivity!r}")
        scale = 2.0 * sens / eps_em
        rho, _ = opendp_charge(noisy_max_measurement(scale), sens)
        _agree("select", exponential_rho(eps_em), rho)
        self.ledger.charge(
            LedgerEntry(
                "select",
                rho,
                eps_em=eps_em,
                round=round,
                params={"sensitivity": sens, "scale": scale, "candidates": int(scores.size), "noise": "gumbel"},
            )
        )
        if allowed is None:
            return self.noise.noisy_max(scores, scale)
        return restricted_noisy_max(scores, scale, self.noise, allowed, int(tries))

    # ------------------------------------------------------------------ schema discovery
    def counts(self, counts, sigma: float, *, column: str, note: str) -> np.ndarray:
        """Noisy counts (discrete Gaussian), charged as a 'discover-counts' entry on ``column``.

        Parameters
        ----------
        counts : array-like of int
            A non-empty vector of non-negative integer counts (L2 sensitivity 1: each row adds 1 to
            exactly one cell).
        sigma : float
            The noise scale.
        column : str
            The column, for the entry.
        note : str
            What is counted, for the entry.

        Returns
        -------
        numpy.ndarray
            Noisy integer counts (int64).

        Raises
        ------
        PrivacyParameterError
            For invalid counts or sigma.
        BudgetExceededError
            When the ledger cannot pay (no noise is drawn).
        """
        sigma = check_positive(sigma, "noise scale")
        c = np.asarray(counts)
        if c.ndim != 1 or c.size == 0 or c.dtype.kind not in "iu" or (c < 0).any():
            raise PrivacyParameterError("discovery counts must be a non-empty vector of non-negative integers")
        rho = gaussian_counts_rho(sigma)
        self.ledger.charge(
            LedgerEntry(
                "discover-counts",
                rho,
                sigma=sigma,
                clique=(column,),
                note=note,
                params={"sensitivity": 1, "cells": int(c.size), "noise": "discrete_gaussian"},
            )
        )
        return np.asarray(self.noise.gaussian_int(c.astype(np.int64), sigma), dtype=np.int64)

    def key_threshold(self, sigma: float, delta: float) -> int:
        """The threshold :meth:`keys` would use at ``sigma`` and ``delta`` (public; nothing drawn or charged).

        Parameters
        ----------
        sigma : float
            The noise sd of the key release.
        delta : float
            The largest delta allowed.

        Returns
        -------
        int
        """
        return choose_threshold(sigma, delta)

    def keys(self, counts: dict[str, int], sigma: float, delta: float, *, column: str) -> tuple[dict[str, int], int]:
        """Stable key release at the smallest threshold whose delta is at most ``delta``.

        Charged as a 'discover-keys' entry (rho and delta).

        Parameters
        ----------
        counts : dict
            ``{label: count}`` (each row holds one label).
        sigma : float
            The noise scale.
        delta : float
            The largest delta allowed for this column.
        column : str
            The column, for the entry.

        Returns
        -------
        released : dict
            ``{label: noisy count}`` of the labels released.
        threshold : int
            The threshold used.

        Raises
        ------
        BudgetExceededError
            When the ledger cannot pay (no noise is drawn).
        """
        sigma = check_positive(sigma, "noise scale")
        threshold = choose_threshold(sigma, delta)
        rho, d = threshold_cost(sigma, threshold)
        self.ledger.charge(
            LedgerEntry(
                "discover-keys",
                rho,
                sigma=sigma,
                clique=(column,),
                delta=d,
                note=f"stable key release, threshold {threshold}",
                params={"threshold": int(threshold), "l0": 1, "l2": 1, "linf": 1, "noise": "discrete_gaussian"},
            )
        )
        clean = {str(k): int(v) for k, v in counts.items() if int(v) > 0}
        if not clean:
            return {}, threshold
        out = self.noise.run_opendp(
            gaussian_threshold_measurement(sigma, threshold),
            clean,
            fallback=threshold_fallback(clean, sigma, threshold),
        )
        return {str(k): int(v) for k, v in out.items()}, threshold

    def medians(self, groups: list, rho: float, *, column: str, note: str) -> list[int]:
        """One level of a private median tree, charged once as a 'discover-medians' entry.

        Each group is a run of cells of one vector of exact counts in which every row is in one
        cell of one group, so a row changes one group's scores only and the level costs one
        exponential mechanism (parallel composition).

        Parameters
        ----------
        groups : list of array-like of int
            The exact counts of each group's cells (``k`` cells, ``k + 1`` candidate edges).
        rho : float
            The level's zCDP cost.
        column : str
            The column, for the entry.
        note : str
            What is chosen, for the entry.

        Returns
        -------
        list of int
            Per group, the index of the chosen edge (0 .. k).

        Raises
        ------
        PrivacyParameterError
            For an empty group or invalid rho.
        BudgetExceededError
            When the ledger cannot pay (no noise is drawn).
        """
        vecs = [np.asarray(g) for g in groups]
        if not vecs or any(v.ndim != 1 or v.size == 0 or v.dtype.kind not in "iu" or (v < 0).any() for v in vecs):
            raise PrivacyParameterError("median groups must be non-empty vectors of non-negative integer counts")
        scale = median_scale(rho)
        cost, _ = opendp_charge(noisy_max_measurement(scale), MEDIAN_SENSITIVITY)
        self.ledger.charge(
            LedgerEntry(
                "discover-medians",
                cost,
                clique=(column,),
                note=note,
                params={
                    "sensitivity": MEDIAN_SENSITIVITY,
                    "scale": scale,
                    "groups": len(vecs),
                    "candidates": int(sum(v.size + 1 for v in vecs)),
                    "noise": "gumbel",
                },
            )
        )
        return [int(self.noise.noisy_max(median_scores(v), scale)) for v in vecs]

    # ------------------------------------------------------------------ any other OpenDP measurement
    def run_opendp(
        self,
        kind: str,
        measurement: Any,
        d_in: Any,
        arg: Any,
        *,
        fallback: Callable[[np.random.Generator], Any] | None = None,
        **fields: Any,
    ) -> Any:
        """Charge an OpenDP measurement by its own privacy map, then run it on ``arg``.

        Parameters
        ----------
        kind : str
            The entry's kind (register a check for it with
            :func:`~ddssp.dp.entries.register_entry_check`).
        measurement : opendp Measurement
            The mechanism.
        d_in : any
            The input distance (the public sensitivity) its map is evaluated at.
        arg : any
            The measurement's input.
        fallback : callable, optional
            ``fallback(rng)`` draws the same output from a numpy Generator; the insecure seeded
            noise source runs it instead of the measurement (reproducible tests).
        **fields
            Other entry fields (e.g. ``params``, ``clique``, ``round``, ``note``).

        Returns
        -------
        any
            The measurement's output.

        Raises
        ------
        BudgetExceededError
            When the ledger cannot pay (nothing is run).
        """
        self.ledger.charge_opendp(kind, measurement, d_in, **fields)
        return self.noise.run_opendp(measurement, arg, fallback=fallback)
