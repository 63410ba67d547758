"""Generators for the dcx documentation site.

Every page they produce is computed from the installed package at build time (the format
registry, the field vocabulary, the schemas, the argument parser, the converters), so the site
cannot drift from the code. The MkDocs hook module ``site/hooks/dcx_docs.py`` wires them in.
"""
