"""Experiments: Cartesian sweeps of workloads × environments × parameters (workload
transforms, scheduler options) × schedulers × seeds, run on Dask, with results in one
Parquet table and failures in another (``dcx experiment``)."""
