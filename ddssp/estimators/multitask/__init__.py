"""Multi-task learning under user-level DP with adaptive budget allocation (Krichene et al.).

n users, m tasks, a private bipartite graph Omega: user j contributes one example (x_ij, y_ij) to every
task i in Omega^j. Neighbouring data sets differ by ALL entries of one user (user-level DP).

Building blocks (all functions; the estimators in :mod:`.estimators` wire them up):

- :class:`~.model.MultiTaskData`: the graph as a scipy.sparse CSR matrix (tasks x users), one feature
  row and one label per entry, in the CSR (task-major) order;
- :func:`~.budget.plan_budget`: (eps, delta) -> rho (CKS) -> the share for the task counts and beta per
  round;
- :func:`~.counts.private_task_counts`: Gaussian noisy task sizes n_i (and the noisy number of users),
  clamped >= 1;
- :func:`~.weights.adaptive_weights` (omega_i ~ n_i^-mu, sum_i n_i omega_i^2 = n beta_bar) and
  :func:`~.weights.per_user_weights` (w_ij = omega_i min(1, sqrt(beta / sum_{i' in Omega^j} omega_i'^2)),
  with a final safety rescale so that max_j sum_i w_ij^2 <= beta holds exactly in floating point);
- in :mod:`.regression`: :func:`~.regression.weighted_ssp` (Algorithm 1) and
  :func:`~.regression.weighted_noisy_gd` (Algorithm 2); in :mod:`.als`: :func:`~.als.dp_als` (Appendix D);
- in :mod:`.options`: the estimators' option groups :class:`~.options.TaskWeighting`,
  :class:`~.options.GradientSteps` and :class:`~.options.ALSOptions`;
- in :mod:`.synthetic`: :func:`~.synthetic.synthetic_multitask` and :func:`~.synthetic.synthetic_ratings`,
  the generators used by the experiments.

Privacy accounting is in zCDP: a release of L2 sensitivity D with N(0, s^2) noise costs D^2 / (2 s^2).
Algorithm 1 with weights of per-user budget beta costs beta (beta/2 for the A_i, beta/2 for the b_i);
Algorithm 2 costs beta over its T steps; DP-ALS costs rho_counts + T * beta. Every release is charged to a
:class:`ddssp.dp.Ledger` before the noise is drawn.

Noise (see :mod:`ddssp.dp.noise`). Every DP draw comes from a :class:`~ddssp.dp.noise.NoiseSource`
(``noise``; default :class:`~ddssp.dp.noise.SecureNoise`, OpenDP on the OS's CSPRNG, which no seed
reaches): the fractional task counts, the A_i upper triangles, the b_i and each GD step's summed gradients
get OpenDP's float Gaussian mechanism *on the data-dependent values* (floating-point safe), the user count
(an integer) the discrete Gaussian. Each ledger charge is OpenDP's own privacy map at the declared
sensitivity (:func:`~.counts.opendp_sigma` nudges sigma up by a relative ~1e-13 so that the map, which
includes the float grid's rounding, fits the planned share). A numpy ``rng`` is still taken where the
randomness is not privacy noise: DP-ALS's initial item factors and the uniform / tail sampling keys.
"""

from ddssp.estimators.multitask.estimators import DPALS, MultiTaskNoisyGD, MultiTaskSSP
from ddssp.estimators.multitask.model import MultiTaskData
from ddssp.estimators.multitask.options import ALSOptions, GradientSteps, TaskWeighting

__all__ = ["DPALS", "MultiTaskNoisyGD", "MultiTaskSSP", "MultiTaskData", "TaskWeighting", "GradientSteps", "ALSOptions"]
