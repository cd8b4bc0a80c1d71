"""The parameters of one AIM run (:class:`AIMSettings`) and their defaults for a table's width.

T, the number of rounds the per-round budget is sized for (:func:`default_rounds`), and the limit on
the model the selected cliques may build (:func:`default_model_size`) follow the number of columns
unless given; the other fields choose the estimation engine, the per-round fits and when the final
fit stops (``FINAL_TOL``). The loop that reads them is :func:`ddssp.marginals.aim.run_aim`.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ddssp.errors import DDSSPError, WorkloadError
from ddssp.marginals.aim_rounds import MIN_ROUNDS_LEFT, STRONG_SIGNAL
from ddssp.marginals.mirror_descent import TOL_BLOCK

#: Final fit (fast loop): stop once the loss improves by less than ``FINAL_TOL`` (relative) over
#: ``TOL_BLOCK`` steps, after at most ``final_iters``. The workload error is flat from ~100
#: iterations on and slightly rises later (fitting the noise), so stopping early costs nothing.
FINAL_TOL = 1e-3

#: Final fit (fast loop) when the noise is small against the table (every measurement's sigma below
#: ``STRONG_SIGNAL`` times the rows): also stop once ``TOL_BLOCK`` steps move the model's measured
#: marginals (L1, summed) by at most this share of the L1 error their noise makes. ``FINAL_TOL`` is
#: relative to the loss, which shrinks towards the noise floor while the precision it asks of the
#: marginals grows with the signal: on 1M-10M rows it ran 300 to 1,000 steps that the workload
#: error did not see.
FINAL_MOVE_TOL = 0.01

#: Share of AIM's zCDP budget spent, when a release names a regression target Y, on measuring Y's
#: one-way marginal and every pair (Y, other column) before the adaptive rounds. Chosen by
#: measurement on Adult (eps 1; shares 0.2, 0.35 and 0.5): see the documentation's AIM page.
DEFAULT_TARGET_SHARE = 0.35


def default_rounds(d: int) -> int:
    """AIM's default T for ``d`` columns: 16 * d up to 20 columns (the AIM paper's setting), then
    ``max(320, 4 * d)``.

    T sets the per-round budget, not the number of rounds run (annealing ends the run sooner). On
    wider tables 16 * d makes many rounds of large noise, and every round scores every pair: on
    generated tables of 30 and 50 columns (50,000 rows, eps 1, 2-8 noise seeds) T = 4d, 8d and 16d
    gave the same mean workload error within the spread between seeds, and 2d + 1 a clearly larger
    one, while the CPU time fell with T (numbers in the documentation's benchmark page).

    Parameters
    ----------
    d : int
        The number of columns.

    Returns
    -------
    int
    """
    return 16 * d if d <= 20 else max(320, 4 * d)


#: Where the noise is small against the table, the rounds measure several cliques each so that a run
#: takes at most about ``T * FITS_SHARE`` per-round fits (:func:`fits_for`).
FITS_SHARE = 0.25


def fits_for(rounds: int) -> int:
    """The number of per-round fits a run of ``rounds`` (T) aims to stay under when the noise is small.

    Parameters
    ----------
    rounds : int
        T.

    Returns
    -------
    int
    """
    return max(1, math.ceil(FITS_SHARE * rounds))


def final_move_tolerance(measurements, total: float) -> float | None:
    """The final fit's movement tolerance: ``FINAL_MOVE_TOL`` when every measurement's noise scale is
    below ``STRONG_SIGNAL`` times the (noisy) row count ``total``, else None (the loss tolerance
    alone, as on weaker signals, where it stops within a few hundred steps).

    Parameters
    ----------
    measurements : sequence
        The run's measurements (objects with a ``sigma``).
    total : float
        The estimate of the row count.

    Returns
    -------
    float or None
    """
    strong = bool(measurements) and max(m.sigma for m in measurements) < STRONG_SIGNAL * total
    return FINAL_MOVE_TOL if strong else None


#: The fast loop's final fit takes its first steps with float32 calibrations when float32's rounding
#: of the table's counts (``rows * eps32``) is at most this share of the smallest measurement's noise
#: scale, then goes on in float64 (:func:`fast_final_fit`).
F32_NOISE_SHARE = 1e-2


def fast_final_fit(est, measurements, iters: int, tol: float | None, move_tol: float | None) -> int:
    """The fast loop's final fit (and ``ddssp synth``'s refit under rules): accelerated steps until
    ``tol`` or ``move_tol`` stops them.

    When float32's rounding of the counts is far below every measurement's noise
    (:data:`F32_NOISE_SHARE`), the steps run first with float32 calibrations (about half the memory
    traffic of a step on a large tree) until the same rules stop them, then go on in float64 from
    there, with the step size reached, until the rules stop them again: the float32 steps leave at
    least one block of ``TOL_BLOCK`` steps of the budget to float64, so the released potentials are
    always those of a float64 fit and the budget is kept (with neither rule, exactly ``iters``).

    Parameters
    ----------
    est : MirrorDescentNumpy
        The estimator: warm from AIM's rounds, or new for the refit
        (:func:`~ddssp.marginals.rules_model.refitted`).
    measurements : sequence
        The run's measurements (objects with a ``sigma``).
    iters : int
        At most this many steps in all.
    tol, move_tol : float or None
        The stopping rules (:meth:`MirrorDescentNumpy.fit_accelerated`).

    Returns
    -------
    int
        The steps taken.
    """
    sigma = min((m.sigma for m in measurements), default=0.0)
    if iters <= TOL_BLOCK or est.total * float(np.finfo(np.float32).eps) > F32_NOISE_SHARE * sigma:
        return int(est.fit_accelerated(iters, tol=tol, move_tol=move_tol)["iterations"])
    low = int(est.fit_accelerated(iters - TOL_BLOCK, tol=tol, move_tol=move_tol, dtype=np.float32)["iterations"])
    return low + int(est.fit_accelerated(iters - low, tol=tol, move_tol=move_tol, resume=True)["iterations"])


def default_model_size(d: int) -> float:
    """AIM's default model-size limit (MB) for ``d`` columns: 80 up to 25 columns (the AIM paper's
    setting), then 2000 / d.

    Scoring every candidate pair costs about (the columns' sizes summed) x (model cells) per round,
    so on wide tables the last rounds, with the model near its limit, dominate a release. Keeping
    columns x limit at 25 x 80 holds that cost near a 25-column table's. On generated tables (eps 1,
    one or two noise seeds): at 50 columns (50,000 rows) limits of 20 and 40 MB gave the same
    workload error as 80 MB (0.0186, 0.0186, 0.0190) at a third to a half of the CPU, 10 MB a
    slightly larger one (0.0192); at 100 columns (100,000 rows) 20 MB gave 0.0201 against 0.0200 at
    80 MB, in 210 instead of 623 CPU s. Numbers in the documentation's benchmark page.

    Parameters
    ----------
    d : int
        The number of columns.

    Returns
    -------
    float
    """
    return 80.0 if d <= 25 else 2000.0 / d


@dataclass(frozen=True)
class AIMSettings:
    """The parameters of one AIM run (validated on construction).

    Parameters
    ----------
    max_model_size : float or None
        Limit, in MB of float64 junction-tree tables, on the model the selected cliques may build
        (reached with the whole budget; each round may use the share of the budget spent by then).
        None: :func:`default_model_size` of the number of columns.
    rounds : int or None
        T, the number of rounds the per-round sigma and eps_em are set for (default
        :func:`default_rounds`: 16 * d up to 20 columns; must
        exceed d).
    iters : int or None
        None: the fast, tolerance-stopped per-round fits. An int: exactly that many plain
        mirror-descent iterations per round (1000 = the reference setting; tests and benchmarks).
    final_iters : int
        At most this many iterations of the final fit (exactly this many when ``final_tol`` is None).
    final_tol : float, None or "auto"
        Relative-loss tolerance of the final fit: stop once the loss decreases by less than
        ``final_tol * max(loss, 1)`` over ``TOL_BLOCK`` iterations. "auto" = ``FINAL_TOL`` in the fast
        loop and None (exactly ``final_iters``) when ``iters`` is given or ``engine="mbi"``.
    engine : {"numpy", "mbi"}
        Estimation engine; "numpy" never imports JAX, "mbi" is the estimation reference.
    fit : {"fast", "legacy"}
        Per-round estimation of the numpy engine; "legacy" is kept for before/after comparisons.
        With ``iters`` given or ``engine="mbi"`` the loop is the legacy one whatever ``fit`` says.
    target_share : float or None
        Share of the budget, in (0, 1), of the first phase of a run given a target (its one-way
        marginal and its pairs with every other column); unused without a target. None:
        ``DEFAULT_TARGET_SHARE``, raised for a small table
        (:func:`~ddssp.marginals.aim_target.first_phase_share`).
    min_rounds_left : float or None
        AIM anneals only while the budget left pays for at least this many regular rounds at the
        annealed scale (:func:`~ddssp.marginals.aim_rounds.may_anneal`); 0 anneals whenever the model
        stops learning (the AIM paper's rule). None: ``MIN_ROUNDS_LEFT``.
    """

    max_model_size: float | None = None
    rounds: int | None = None
    iters: int | None = None
    final_iters: int = 1000
    final_tol: float | None | str = "auto"
    engine: str = "numpy"
    fit: str = "fast"
    target_share: float | None = None
    min_rounds_left: float | None = None

    def __post_init__(self):
        mms = self.max_model_size
        if mms is not None and not (isinstance(mms, (int, float)) and mms > 0):
            raise WorkloadError(f"max_model_size must be a positive number of MB, got {mms!r}")
        if self.engine not in ("numpy", "mbi"):
            raise WorkloadError(f"unknown estimation engine {self.engine!r} (use 'numpy' or 'mbi')")
        if self.fit not in ("fast", "legacy"):
            raise WorkloadError(f"unknown fit mode {self.fit!r} (use 'fast' or 'legacy')")
        share = self.target_share
        if share is not None and (isinstance(share, bool) or not (isinstance(share, (int, float)) and 0 < share < 1)):
            raise WorkloadError(f"target_share must be a number in (0, 1) or None, got {share!r}")
        left = self.min_rounds_left
        if left is not None and (
            isinstance(left, bool) or not (isinstance(left, (int, float)) and math.isfinite(left) and left >= 0)
        ):
            raise WorkloadError(f"min_rounds_left must be a non-negative number or None, got {left!r}")
        if self.iters is not None and int(self.iters) < 1:
            raise WorkloadError(f"iters must be a positive integer, got {self.iters!r}")
        if int(self.final_iters) < 1:
            raise WorkloadError(f"final_iters must be a positive integer, got {self.final_iters!r}")
        tol = self.final_tol
        if isinstance(tol, str):
            if tol != "auto":
                raise WorkloadError(f"final_tol must be a non-negative number, None or 'auto', got {tol!r}")
        elif tol is not None:
            if not (isinstance(tol, (int, float)) and math.isfinite(tol) and tol >= 0):
                raise WorkloadError(f"final_tol must be a non-negative number, None or 'auto', got {tol!r}")
            object.__setattr__(self, "final_tol", float(tol))

    @property
    def fast(self) -> bool:
        """True for the fast loop (numpy engine, ``fit="fast"``, no fixed ``iters``)."""
        return self.fit == "fast" and self.engine == "numpy" and self.iters is None

    @property
    def anneal_floor(self) -> float:
        """``min_rounds_left`` with None resolved to ``MIN_ROUNDS_LEFT``."""
        return float(MIN_ROUNDS_LEFT if self.min_rounds_left is None else self.min_rounds_left)

    def final_tolerance(self) -> float | None:
        """``final_tol`` with "auto" resolved.

        Returns
        -------
        float or None
            ``FINAL_TOL`` in the fast numpy loop, else None (exactly ``final_iters``), unless set.
        """
        if self.final_tol == "auto":
            return FINAL_TOL if self.iters is None and self.engine == "numpy" else None
        return self.final_tol

    def model_size_for(self, d: int) -> float:
        """The model-size limit (MB) for ``d`` columns: ``max_model_size``, or its default.

        Parameters
        ----------
        d : int
            The number of columns.

        Returns
        -------
        float
        """
        return default_model_size(d) if self.max_model_size is None else float(self.max_model_size)

    def rounds_for(self, d: int) -> int:
        """T, the number of rounds, for ``d`` columns (checked: T > d).

        Parameters
        ----------
        d : int
            The number of columns.

        Returns
        -------
        int

        Raises
        ------
        WorkloadError
            When T <= d (the one-way initialisation alone would use the budget of d rounds).
        """
        T = default_rounds(d) if self.rounds is None else int(self.rounds)
        if T <= d:
            raise WorkloadError(
                f"rounds={T} is too small: the one-way initialisation alone uses d/T of 90% of the budget "
                f"with d={d} columns; give rounds > {d} (default {default_rounds(d)})"
            )
        return T


#: False-alarm rate of the release's model-fit check (``ddssp.releasefile.selfcheck``): an honest fit's
#: statistic stays under :func:`model_fit_bound` with probability 1 - this.
MODEL_FIT_FALSE_ALARM = 1e-9
#: An early-stopped final fit must leave the fit statistic under this upper quantile of its law at
#: the truth, far inside :func:`model_fit_bound`, or the fit goes on.
EARLY_STOP_QUANTILE = 1e-3
#: Steps an early-stopped final fit may take past its stop toward :func:`early_stop_fit_limit`, in
#: units of ``final_iters``.
FINISH_ITERS_FACTOR = 3
#: Steps it may then take toward the release file's own check (:func:`model_fit_bound`), in units of
#: ``final_iters``: at 100M rows of raw Adult the fit needs about 2,100 steps past the first budget
#: (measured offline from a refused release's measurements), about 0.11 CPU s each.
LOADABLE_ITERS_FACTOR = 4


def model_fit_statistic(model, measurements) -> tuple[float, int]:
    """sum over measurements of ||y - model marginal||^2 / sigma^2, and the number of cells summed.

    For a Gaussian measurement y = mu + N(0, sigma^2 I) of a marginal mu with m cells,
    ||y - mu||^2 / sigma^2 ~ chi^2_m (the discrete Gaussian is no wider). The model is fitted to
    minimise this very loss over a family that holds the true marginals of the measured cliques, so at
    its optimum the statistic is at most the truth's: chi^2 with the total number of cells.

    Parameters
    ----------
    model : GraphicalModel
        The fitted model.
    measurements : sequence
        Objects with ``clique``, ``values`` and ``sigma``.

    Returns
    -------
    statistic : float
        inf for a forged huge value.
    cells : int
    """
    stat, n = 0.0, 0
    with np.errstate(all="ignore"):  # a forged huge value gives inf, refused by the caller
        for m in measurements:
            mu = model.marginal(tuple(m.clique))
            d = np.asarray(m.values, dtype=float).reshape(mu.shape) - mu
            stat += float(np.dot(d.ravel(), d.ravel())) / float(m.sigma) ** 2
            n += d.size
    return stat, n


def model_fit_bound(cells: int) -> float:
    """The largest :func:`model_fit_statistic` a release's check accepts for a number of cells.

    The chi^2 quantile at 1 - :data:`MODEL_FIT_FALSE_ALARM`, plus slack for a fit stopped before its
    optimum (10% and 50).

    Parameters
    ----------
    cells : int
        The number of cells summed.

    Returns
    -------
    float
    """
    from scipy.stats import chi2

    return 1.1 * float(chi2.isf(MODEL_FIT_FALSE_ALARM, max(cells, 1))) + 50.0


def early_stop_fit_limit(cells: int) -> float:
    """The fit statistic under which an early-stopped final fit may stay stopped
    (:data:`EARLY_STOP_QUANTILE` upper quantile of chi^2 with ``cells`` degrees of freedom).

    Parameters
    ----------
    cells : int

    Returns
    -------
    float
    """
    from scipy.stats import chi2

    return float(chi2.isf(EARLY_STOP_QUANTILE, max(cells, 1)))


def finish_early_stop(est, measurements, domain, iters_left: int, more_left: int = 0):
    """Go on with a final fit that the movement rule stopped early while its fit statistic is above
    :func:`early_stop_fit_limit`, until the statistic is under the limit or ``iters_left`` is spent;
    then, while it is above :func:`model_fit_bound` (the release's own check), for at most
    ``more_left`` further steps toward that bound.

    The movement rule measures the marginals' change per block of steps; under momentum a block can
    move little while the fit is still far from its optimum, and a release whose model does not fit
    its measurements is refused on load (the release's model-fit check). The fit goes on as one run
    from the step size the early-stopped fit reached (momentum and step size are not restarted) and
    stops at the first step whose loss puts the statistic under the limit: the statistic is twice the
    fit's pooled loss plus the spread of repeated measurements of a clique around their pooled mean,
    a constant. The loss's relative tolerance is not used here: on a strong signal (100M rows) it
    stops while the statistic is several times the number of cells. A model still above the check's
    bound after both budgets is refused here, before anything is written: its file would not load.

    Parameters
    ----------
    est : MirrorDescentNumpy
        The estimator after the early stop (it goes on from its current potentials).
    measurements : sequence
        The run's measurements.
    domain : Domain
        The column order of the model the statistic is computed on.
    iters_left : int
        The steps the final fit may still take toward :func:`early_stop_fit_limit`.
    more_left : int, optional
        The steps it may take beyond ``iters_left`` toward :func:`model_fit_bound`.

    Returns
    -------
    model : GraphicalModel
        The model in ``domain``'s column order (the last one checked).
    taken : int
        The further steps taken.

    Raises
    ------
    DDSSPError
        When the statistic is still above :func:`model_fit_bound` after both budgets.
    """
    taken = 0
    while True:
        model = est.model(domain)
        stat, cells = model_fit_statistic(model, measurements)
        limit = early_stop_fit_limit(cells)
        if stat <= limit:
            return model, taken
        if taken < iters_left:
            budget = iters_left - taken
        else:  # the guard's own budget is spent: what is left is the file's check
            bound = model_fit_bound(cells)
            if stat <= bound:
                return model, taken
            budget = iters_left + more_left - taken
            if budget <= 0:
                raise DDSSPError(
                    f"the final fit did not converge in {taken} further steps (fit statistic {stat:.4g} over "
                    f"{cells} cells, above the {bound:.4g} a release file's check accepts), so no file is "
                    "written; release fewer columns (--columns) or give a schema with fewer levels"
                )
            limit = bound * (1.0 - 1e-3)
        spread = stat - 2.0 * est.loss()  # repeated measurements around their pooled mean
        target = 0.5 * (limit - spread) - 1e-9 * limit  # a hair inside, for rounding
        out = est.fit_accelerated(budget, tol=None, loss_below=target, resume=True)
        step = int(out["iterations"])
        taken += step if step > 0 else budget  # no step taken: this budget is spent


def public_settings(
    s: AIMSettings, run: tuple[float, int, float, float], first: list, rounds: tuple[int, float], share: float | None
) -> dict[str, Any]:
    """The run's settings as released (``info["settings"]``); the target phase's share only when it ran.

    Parameters
    ----------
    s : AIMSettings
        The run's settings.
    run : tuple
        ``(rho, rounds_T, max_model_size, final_tol)`` of the run.
    first : list
        The target phase's cliques (empty: no target phase).
    rounds : tuple
        ``(max iterations, tolerance)`` of a round's fit when ``s.iters`` is not set.
    share : float or None
        The share of the budget the target phase spent (None: no target phase).

    Returns
    -------
    dict
    """
    rho, rounds_T, cap, final_tol = run
    round_max_iters, round_tol = rounds
    public = {
        "rho": rho,
        "rounds_T": rounds_T,
        "max_model_size": cap,
        "iters": s.iters,
        "final_iters": int(s.final_iters),
        "final_tol": final_tol,
        "engine": s.engine,
        "fit": s.fit,
        "round_max_iters": round_max_iters if s.iters is None else int(s.iters),
        "round_tol": round_tol if s.iters is None else None,
        "min_rounds_left": s.anneal_floor,
    }
    if first:
        public["target_share"] = float(share)
        public["target_share_given"] = s.target_share is not None
        public["target_measurements"] = len(first)
    return public


def settings_from(settings: AIMSettings | None, options: dict[str, Any]) -> AIMSettings:
    """The run's settings, given either as an :class:`AIMSettings` or as its fields (keywords).

    Parameters
    ----------
    settings : AIMSettings or None
        The settings, or None to build them from ``options``.
    options : dict
        :class:`AIMSettings` fields given as keywords (only without ``settings``).

    Returns
    -------
    AIMSettings

    Raises
    ------
    TypeError
        For an unknown keyword, or settings given both ways.
    """
    if settings is None:
        unknown = set(options) - {f.name for f in dataclasses.fields(AIMSettings)}
        if unknown:
            raise TypeError(f"run_aim() got unexpected keyword argument(s) {sorted(unknown)}")
        return AIMSettings(**options)
    if options:
        raise TypeError(f"give AIM's settings either as settings= or as keywords, not both ({sorted(options)})")
    return settings
