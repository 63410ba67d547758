"""Experiments: Cartesian sweeps of workloads × environments × schedulers × seeds, run on
Dask, with results in one Parquet table (``dcx experiment``)."""
