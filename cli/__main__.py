"""``python -m dcx.cli``: the ``dcx`` command."""

from dcx.cli.main import main

raise SystemExit(main())
