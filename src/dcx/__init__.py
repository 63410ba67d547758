"""dcx: move datacenter descriptions and workloads between formats, validate them, schedule them.

The code lives in three subpackages mapped from top-level folders of the repository:
``dcx.formats`` (the model and one module per format), ``dcx.converters`` (secure parsing,
validation, conversion, CLI) and ``dcx.scheduler`` (the SC18 reference scheduler).
"""

__version__ = "0.1.0"
