"""The noise source: every DP random draw of a release goes through one :class:`NoiseSource`.

Why a separate source. A release must not be undoable: if the noise on a count came from a
``numpy.random.Generator`` seeded by ``--seed``, anyone holding the seed could replay the draws
and subtract them (the "seed reversal" attack); and float Gaussian noise leaks the true value in
its low bits (Mironov 2012). So DP noise never comes from numpy and never from a seed:

- :class:`SecureNoise` (the default, and the only private one) runs OpenDP's (0.16) exact samplers
  in its Rust core, fed by the operating system's CSPRNG. OpenDP has no seed parameter, so nothing
  a user passes to ddssp reaches the noise. Counts get the *discrete* Gaussian (integers in,
  integers out: no floating-point leak); selection is the Gumbel "report noisy max", which is the
  exponential mechanism, sampled exactly by OpenDP (no float probabilities).
- :class:`InsecureSeededNoise` (``--insecure-seed N``) draws the same distributions from
  ``numpy.random.default_rng(N)``. The noise is reproducible, and so is removable: a release made
  with it is stamped :data:`INSECURE_STAMP` and every command that reads it prints the stamp.
  It exists for tests and debugging only.

Interface (all a mechanism needs; the ledger charges *before* it calls any of these):

``noise.gaussian_int(counts, sigma) -> np.ndarray[int64]``
    ``counts`` (integer-valued array, any shape) plus independent discrete Gaussian noise
    N_Z(0, sigma^2) per cell (P(z) proportional to exp(-z^2 / (2 sigma^2)), z integer).
``noise.noisy_max(scores, scale) -> int``
    argmax_i (scores_i + Gumbel(scale)_i): P(i) proportional to exp(scores_i / scale). With
    scale = 2 * sensitivity / eps_em this is the exponential mechanism at eps_em.
``noise.gaussian_float(values, sigma) -> np.ndarray[float]``
    ``values`` (finite floats, any shape) plus independent N(0, sigma^2) noise per entry: OpenDP's
    float Gaussian mechanism (see "Float mechanisms" in :mod:`ddssp.dp.measurements`).
``noise.laplace_float(values, scale) -> np.ndarray[float]``
    ``values`` plus independent Laplace(scale) noise per entry (OpenDP's float Laplace mechanism).
``noise.l2_laplace(d, eta, size=None) -> np.ndarray[float]``
    Vectors in R^d with density proportional to exp(-eta ||z||_2) (PDP-OP's output noise): a
    Gamma(d, 1/eta) radius times a uniform direction, built from the two float samplers above.
``noise.bernoulli(p) -> np.ndarray[bool]``
    Independent coin flips, True with probability p (each float p in [0, 1], exactly).
``noise.run_opendp(measurement, arg, fallback=None)``
    Run any other OpenDP measurement (e.g. ``make_gaussian_threshold`` for key release,
    ``make_private_quantile``). In insecure mode, ``fallback(rng)`` is called instead when given
    (a numpy re-implementation, for reproducible tests); without one the OpenDP measurement runs
    securely (its noise is then simply not reproducible).
``noise.secure``, ``noise.stamp`` (None or :data:`INSECURE_STAMP`), ``noise.describe()`` (for the file).

What is exact and what is not:

- ``gaussian_float`` / ``laplace_float`` of *data-dependent values*: exact and floating-point safe
  (OpenDP's proofs).
- ``l2_laplace``: every random draw is OpenDP's (CSPRNG, no seed): the radius is the sum of d
  exponentials |Laplace(1)| (a Gamma(d, 1) variable), the direction a normalised vector of d
  standard Gaussians. The sum, the normalisation and the division by eta are float arithmetic, and
  the caller adds the vector to a float estimate: relative errors of order d * 1e-16 in a vector
  whose scale is d / eta. So the *seed* attack is closed, and the distribution is exact up to those
  rounding errors, but the final ``estimate + noise`` is ordinary float addition, NOT a
  floating-point-safe mechanism in OpenDP's sense. OpenDP (0.16) has no multivariate L2-Laplace
  (or Gamma) sampler; we say so rather than claim more.
- ``bernoulli``: exact Bernoulli(p) for the float p (a dyadic rational), from the OS's CSPRNG
  (:func:`os.urandom` via :mod:`secrets`), not from OpenDP (whose boolean randomized response
  needs p >= 1/2 and one call per coin). The float p itself is the rounded value of whatever real
  probability the caller meant (relative error ~1e-16).

The OpenDP measurements themselves (with their privacy maps, which the ledger uses as its charge,
and the float mechanisms' grid) come from :mod:`ddssp.dp.measurements`; the samplers outside OpenDP
(exact secure coin flips, the seeded discrete Gaussian) from :mod:`ddssp.dp.samplers`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ddssp.dp.measurements import (
    gaussian_float_measurement,
    gaussian_measurement,
    laplace_float_measurement,
    noisy_max_measurement,
)
from ddssp.dp.params import check_positive
from ddssp.dp.samplers import as_probs, discrete_gaussian_numpy, secure_bernoulli
from ddssp.errors import PrivacyParameterError

#: Printed by every command that reads a release whose noise is reproducible from a seed.
INSECURE_STAMP = "NOT PRIVATE: noise reproducible from a seed"


def _as_int_counts(counts: Any) -> np.ndarray:
    a = np.asarray(counts)
    if a.dtype.kind in "iu":
        return a.astype(np.int64, copy=False)
    if a.dtype.kind == "f" and np.all(np.isfinite(a)) and np.all(a == np.round(a)) and np.all(np.abs(a) < 2**62):
        return a.astype(np.int64)
    raise PrivacyParameterError("the discrete Gaussian mechanism needs integer counts")


def _as_scores(scores: Any) -> np.ndarray:
    q = np.asarray(list(scores) if not isinstance(scores, np.ndarray) else scores, dtype=float).ravel()
    if q.size == 0:
        raise PrivacyParameterError("selection needs at least one candidate")
    if not np.all(np.isfinite(q)):
        raise PrivacyParameterError("selection scores must be finite")
    return q


def _as_floats(values: Any) -> np.ndarray:
    a = np.asarray(values, dtype=float)
    if not np.all(np.isfinite(a)):
        raise PrivacyParameterError("the float noise mechanisms need finite values")
    return a


def _as_eta(d: Any, eta: Any, size: Any) -> tuple[int, np.ndarray, tuple[int, ...]]:
    if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 1:
        raise PrivacyParameterError(f"the dimension d must be a positive integer, got {d!r}")
    eta = np.asarray(eta, dtype=float)
    if np.any(~(eta > 0)) or np.any(~np.isfinite(eta)):
        raise PrivacyParameterError("the noise rate eta must be positive and finite")
    shape = np.broadcast_shapes(() if size is None else tuple(np.atleast_1d(size)), eta.shape)
    return int(d), eta, shape


def _l2_laplace_from(radius_exp: np.ndarray, gauss: np.ndarray, eta: np.ndarray) -> np.ndarray:
    """radius = (sum of d Exp(1)) / eta, direction = gauss / ||gauss||."""
    radius = radius_exp.sum(axis=-1) / eta
    norms = np.linalg.norm(gauss, axis=-1, keepdims=True)
    return radius[..., None] * gauss / norms


def _float_noise(make_measurement, a: np.ndarray, scale: float) -> np.ndarray:
    """The finite floats ``a`` plus noise from ``make_measurement(scale, size)`` (an OpenDP
    float-vector measurement), shaped like ``a``."""
    if a.size == 0:
        return a.copy()
    out = make_measurement(scale, a.size)(a.ravel().tolist())
    return np.asarray(out, dtype=float).reshape(a.shape)


# --------------------------------------------------------------------------- sources
class NoiseSource:
    """Base class; see the module docstring for the interface.

    Each public method checks its arguments here, the same way for every source, and hands the
    checked values to a private hook (``_gaussian_int``, ``_noisy_max``, ...) that a source
    implements with its own sampler.
    """

    secure: bool = False
    stamp: str | None = None

    def gaussian_int(self, counts: Any, sigma: float) -> np.ndarray:
        """Discrete Gaussian noise N_Z(0, sigma^2) added to integer counts.

        Parameters
        ----------
        counts : array-like of int
            Integer-valued counts, any shape.
        sigma : float
            The noise scale.

        Returns
        -------
        numpy.ndarray
            int64 noisy counts, shaped like ``counts``.
        """
        sigma = check_positive(sigma, "sigma")
        return self._gaussian_int(_as_int_counts(counts), sigma)

    def noisy_max(self, scores: Any, scale: float) -> int:
        """Report noisy max: argmax_i (scores_i + Gumbel(scale)_i).

        P(i) is proportional to exp(scores_i / scale); with scale = 2 * sensitivity / eps_em this is the
        exponential mechanism at eps_em.

        Parameters
        ----------
        scores : array-like of float
            Finite scores, one per candidate.
        scale : float
            The Gumbel scale.

        Returns
        -------
        int
            The index selected.
        """
        scale = check_positive(scale, "selection scale")
        return int(self._noisy_max(_as_scores(scores), scale))

    def gaussian_float(self, values: Any, sigma: float) -> np.ndarray:
        """Independent N(0, sigma^2) noise added to each float.

        Parameters
        ----------
        values : array-like of float
            Finite values, any shape.
        sigma : float
            The noise scale.

        Returns
        -------
        numpy.ndarray
            Noisy floats, shaped like ``values``.
        """
        sigma = check_positive(sigma, "sigma")
        return self._gaussian_float(_as_floats(values), sigma)

    def laplace_float(self, values: Any, scale: float) -> np.ndarray:
        """Independent Laplace(scale) noise added to each float.

        Parameters
        ----------
        values : array-like of float
            Finite values, any shape.
        scale : float
            The noise scale.

        Returns
        -------
        numpy.ndarray
            Noisy floats, shaped like ``values``.
        """
        scale = check_positive(scale, "Laplace scale")
        return self._laplace_float(_as_floats(values), scale)

    def bernoulli(self, p: Any) -> np.ndarray:
        """Independent coin flips, True with probability p.

        Parameters
        ----------
        p : array-like of float
            Probabilities in [0, 1], any shape.

        Returns
        -------
        numpy.ndarray
            Booleans, shaped like ``p``.
        """
        return self._bernoulli(p)

    def l2_laplace(self, d: int, eta: Any, size: Any = None) -> np.ndarray:
        """Draws with density proportional to exp(-eta ||z||_2) on R^d (PDP-OP's output noise).

        A Gamma(d, 1/eta) radius times a uniform direction on the sphere. See the module docstring
        for what is exact.

        Parameters
        ----------
        d : int
            The dimension.
        eta : float or array-like of float
            The rate (positive).
        size : int or tuple of int, optional
            The batch shape, broadcast with that of ``eta``.

        Returns
        -------
        numpy.ndarray
            Shape broadcast(size, eta) + (d,).
        """
        d, eta, shape = _as_eta(d, eta, size)
        return self._l2_laplace(d, eta, shape)

    def run_opendp(self, measurement, arg: Any, fallback: Callable[[np.random.Generator], Any] | None = None):
        """Run an OpenDP measurement (e.g. key release).

        Parameters
        ----------
        measurement : opendp Measurement
            The measurement, already charged to a ledger.
        arg : any
            Its input.
        fallback : callable, optional
            ``fallback(rng)``: a numpy re-implementation, used by the insecure seeded source for
            reproducible tests.

        Returns
        -------
        any
            The measurement's output.
        """
        return measurement(arg)

    def describe(self) -> dict[str, Any]:
        """A description of the noise source, for the release file.

        Returns
        -------
        dict
        """
        return dict(self._description)

    #: what :meth:`describe` returns (each source sets it)
    _description: dict[str, Any]

    # The hooks a source implements; their arguments are already checked.
    def _gaussian_int(self, a: np.ndarray, sigma: float) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def _noisy_max(self, q: np.ndarray, scale: float) -> int:  # pragma: no cover - abstract
        raise NotImplementedError

    def _gaussian_float(self, a: np.ndarray, sigma: float) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def _laplace_float(self, a: np.ndarray, scale: float) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def _bernoulli(self, p: Any) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def _l2_laplace(self, d: int, eta: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
        """Radius: the sum of d exponentials |Laplace(1)|; direction: a normalised vector of d standard
        Gaussians. One ``laplace_float`` and one ``gaussian_float`` call for the whole batch."""
        full = shape + (d,)
        exps = np.abs(self.laplace_float(np.zeros(full), 1.0))
        gauss = self.gaussian_float(np.zeros(full), 1.0)
        zero = np.linalg.norm(gauss, axis=-1) == 0
        while np.any(zero):  # a zero vector has no direction (probability ~ 0): draw those again
            gauss[zero] = self.gaussian_float(np.zeros((int(zero.sum()), d)), 1.0)
            zero = np.linalg.norm(gauss, axis=-1) == 0
        return _l2_laplace_from(exps, gauss, eta)


class SecureNoise(NoiseSource):
    """OpenDP's exact samplers on the OS's CSPRNG. No seed, no state in Python.

    Counts get OpenDP's exact discrete Gaussian, selection its exact report noisy max, floats its
    floating-point-safe Gaussian and Laplace mechanisms; coin flips come from
    :func:`~ddssp.dp.samplers.secure_bernoulli` (exact for the float p).
    """

    secure = True
    stamp = None
    _description = {"source": "opendp", "secure": True}

    def _gaussian_int(self, a: np.ndarray, sigma: float) -> np.ndarray:
        if a.size == 0:
            return a.copy()
        out = gaussian_measurement(sigma)(a.ravel().tolist())
        return np.asarray(out, dtype=np.int64).reshape(a.shape)

    def _noisy_max(self, q: np.ndarray, scale: float) -> int:
        if q.size == 1:
            return 0
        return noisy_max_measurement(scale)(q.tolist())

    def _gaussian_float(self, a: np.ndarray, sigma: float) -> np.ndarray:
        return _float_noise(gaussian_float_measurement, a, sigma)

    def _laplace_float(self, a: np.ndarray, scale: float) -> np.ndarray:
        return _float_noise(laplace_float_measurement, a, scale)

    def _bernoulli(self, p: Any) -> np.ndarray:
        return secure_bernoulli(p)


class InsecureSeededNoise(NoiseSource):
    """The same distributions from ``numpy.random.default_rng(seed)``: reproducible and therefore NOT PRIVATE.

    Anyone with the seed can subtract the noise. For tests and debugging only; outputs carry
    :data:`INSECURE_STAMP`. Counts get :func:`~ddssp.dp.samplers.discrete_gaussian_numpy`, selection
    the argmax of Gumbel-perturbed scores, ``l2_laplace`` a Gamma(d, 1/eta) radius times a normalised
    Gaussian vector, and ``run_opendp`` calls its ``fallback(rng)`` when given (else the measurement
    itself, securely); all from the seeded generator.

    Parameters
    ----------
    seed : int
        A non-negative integer.

    Raises
    ------
    PrivacyParameterError
        For a seed that is not a non-negative integer.
    """

    secure = False
    stamp = INSECURE_STAMP

    def __init__(self, seed: int):
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
            raise PrivacyParameterError(f"the insecure seed must be a non-negative integer, got {seed!r}")
        self.seed = int(seed)
        self.rng = np.random.default_rng(self.seed)
        self._description = {"source": "numpy-seeded", "secure": False, "seed": self.seed, "stamp": INSECURE_STAMP}

    def _gaussian_int(self, a: np.ndarray, sigma: float) -> np.ndarray:
        return a + discrete_gaussian_numpy(self.rng, sigma, a.size).reshape(a.shape)

    def _noisy_max(self, q: np.ndarray, scale: float) -> int:
        return np.argmax(q / scale + self.rng.gumbel(size=q.size))

    def _gaussian_float(self, a: np.ndarray, sigma: float) -> np.ndarray:
        return a + self.rng.normal(0.0, sigma, a.shape)

    def _laplace_float(self, a: np.ndarray, scale: float) -> np.ndarray:
        return a + self.rng.laplace(0.0, scale, a.shape)

    def _bernoulli(self, p: Any) -> np.ndarray:
        a = as_probs(p)
        return self.rng.random(a.shape) < a

    def _l2_laplace(self, d: int, eta: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
        radius = self.rng.gamma(d, 1.0, size=shape) / eta
        g = self.rng.standard_normal(shape + (d,))
        return radius[..., None] * g / np.linalg.norm(g, axis=-1, keepdims=True)

    def run_opendp(self, measurement, arg: Any, fallback: Callable[[np.random.Generator], Any] | None = None):
        """NOT PRIVATE: ``fallback(rng)`` with the seeded generator when given, else the measurement (securely).

        Parameters
        ----------
        measurement : opendp Measurement
            The measurement, already charged to a ledger.
        arg : any
            Its input.
        fallback : callable, optional
            ``fallback(rng)``: a numpy re-implementation of the measurement.

        Returns
        -------
        any
            The measurement's output.
        """
        return fallback(self.rng) if fallback is not None else measurement(arg)


def make_noise(insecure_seed: int | None = None) -> NoiseSource:
    """The noise source for a release: :class:`SecureNoise` unless an insecure seed is given.

    Parameters
    ----------
    insecure_seed : int, optional
        A seed for :class:`InsecureSeededNoise` (NOT PRIVATE).

    Returns
    -------
    NoiseSource
    """
    if insecure_seed is None:
        return SecureNoise()
    return InsecureSeededNoise(insecure_seed)


def resolve_noise(noise: NoiseSource | None = None, insecure_seed: int | None = None) -> NoiseSource:
    """The noise source an estimator uses: ``noise`` if given, else ``make_noise(insecure_seed)``.

    Parameters
    ----------
    noise : NoiseSource, optional
        An explicit source.
    insecure_seed : int, optional
        A seed for :class:`InsecureSeededNoise` (NOT PRIVATE).

    Returns
    -------
    NoiseSource
        Secure unless an insecure seed or an insecure source is given.

    Raises
    ------
    PrivacyParameterError
        When both are given, or ``noise`` is not a :class:`NoiseSource` (e.g. a numpy Generator or
        an int): a seed must never silently become the DP noise.
    """
    if noise is not None:
        if insecure_seed is not None:
            raise PrivacyParameterError("give either noise= or insecure_seed=, not both")
        if not isinstance(noise, NoiseSource):
            raise PrivacyParameterError(
                f"noise must be a NoiseSource (SecureNoise() or InsecureSeededNoise(seed)), got {type(noise).__name__}; "
                "for reproducible (NOT PRIVATE) test noise pass insecure_seed=N"
            )
        return noise
    return make_noise(insecure_seed)
