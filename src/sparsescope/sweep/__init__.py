"""Sweeps: every backend on every matrix of a collection, on Dask or in process (issue 15).

``sources`` turns folders, globs, files, SuiteSparse archives and generated suites into small
:class:`~sparsescope.sweep.sources.MatrixSource` records; ``tasks`` plans one
:class:`~sparsescope.sweep.tasks.SweepTask` per (matrix, backend, parameters); ``worker`` holds
what runs on a worker; ``engine`` runs the tasks in process or on a Dask cluster. The entry
point is :func:`sparsescope.api.sweep`. Nothing here imports Dask at import time.
"""
