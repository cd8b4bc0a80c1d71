"""Marginals: workloads (:mod:`.workload`), tables over named axes (:mod:`.named_tables`), junction
trees (:mod:`.junction_tree`) and belief propagation (:mod:`.belief_propagation`), the fitted
graphical model (:mod:`.model`), mirror descent on the Private-PGM loss (:mod:`.mirror_descent`),
AIM's estimation engines (:mod:`.estimation`; the JAX settings its mbi engine needs,
:mod:`.jaxconf`) and the AIM select-measure-reconstruct loop (:mod:`.aim`; its settings
:mod:`.aim_settings`, budget per round :mod:`.aim_rounds` and exact answers :mod:`.aim_answers`).
Imports only :mod:`ddssp.dp` and :mod:`ddssp.data` below it."""
