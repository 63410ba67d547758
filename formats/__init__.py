"""Layer 3: one module (or package) per format, each exporting one ``FORMAT`` declaration
(``dcx.core.declaration``). A format reads bytes into the model (``dcx.core.model``) and
writes the model back; it never prints, exits or touches files, and imports only
``dcx.core`` and ``dcx.parsing`` (plus its own helper modules).
"""
