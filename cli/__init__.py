"""The ``dcx`` command line, the top layer: argument parsing, reading the inputs a user
names, summaries, progress and exit codes (``main.py``: validate, convert, formats, info;
``schedule.py``; ``experiment.py``). Nothing in the package imports it; the console script
and ``python -m dcx.cli`` enter it."""
