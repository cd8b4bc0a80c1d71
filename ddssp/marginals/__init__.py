"""Marginals: workloads (:mod:`.workload`), the junction-tree graphical model (:mod:`.model`) and the
AIM select-measure-reconstruct loop (:mod:`.aim`). Imports only :mod:`ddssp.dp` and
:mod:`ddssp.data` below it."""
