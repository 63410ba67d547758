"""The model (``dcx.formats.model``) and one module per format.

A format module reads bytes into the model and writes the model back. It never prints,
never exits, and reports problems as diagnostics; see ``dcx.converters.registry`` for the
table that names every format.
"""
