"""Sessions: convert (the main job), tests, peers, schedule, bench, docs, lint, fuzz.

Bootstrap on a machine with only Python and pip: ``python -m pip install nox``.
"""

from __future__ import annotations

import glob
import os

import nox

nox.options.sessions = ["convert", "tests"]
nox.options.reuse_existing_virtualenvs = True
nox.options.error_on_missing_interpreters = False

TEST_EXTRAS = ".[test,docs,browser]"
# src/dcx's subpackages are links to these folders: ruff reads each once, from here.
PACKAGES = ("core", "parsing", "formats", "converters", "scheduler", "experiments", "cli",
            "src/dcx/__init__.py")


@nox.session
def convert(session: nox.Session) -> None:
    """Convert examples/ (plus any paths after --) to every format; validate every output.

    Results: build/converted/<input>/<format>.<ext>, build/converted/report.{md,json}.
    """
    session.install(".")
    session.run("python", "-m", "dcx.converters.pipeline", "--out", "build/converted",
                "examples", *session.posargs)


@nox.session
def tests(session: nox.Session) -> None:
    """The test suite (hypothesis round trips, corpus verdicts, CLI, hook, hostile input), on
    every core, each property test on the lean example budget (``DCX_HYPOTHESIS=full`` or
    ``thorough`` for more); the ten slowest tests are printed at the end."""
    session.install(TEST_EXTRAS)
    # --dist loadfile: a file's tests share its module- and session-scoped fixtures (a Dask
    # cluster, a built site, the hostile runs), made once on its worker
    session.run("python", "-m", "pytest", "-n", "auto", "--dist", "loadfile",
                *session.posargs)


@nox.session
def peers(session: nox.Session) -> None:
    """dcx's outputs fed to the software their users feed them to (SimGrid, slurmctld,
    WfCommons, AccaSim, flux-core): converts examples/ unless build/converted is fresh,
    installs each peer (apt or pip; one that cannot be installed is skipped with its reason)
    and fails when an installed peer rejects a file or reads it otherwise than dcx.
    ``nox -s peers -- --only accasim`` runs one. Report: build/peers/report.{md,json}."""
    session.install(".")
    session.run("python", "tests/peers/run.py", *session.posargs)


@nox.session
def schedule(session: nox.Session) -> None:
    """Tables XI and XII as an experiment (examples/experiments/sc18-tables.yaml: the nine
    SC18 schedulers on the Askalon and Chronos traces, RANDOM x 32, on a Dask LocalCluster),
    then the nine over every workload `convert` wrote (build/converted/report.json says which
    outputs hold workloads; `convert` runs first when it has not), as the experiment
    `python -m dcx.experiments.workloads` writes, which records each run's schedule: its
    plots include a Gantt chart per run and the task response times per workload. Tables and
    plots in build/schedule/, which the docs site shows. Prints one line per workload run or
    skipped (and why); fails when none could be scheduled."""
    session.install(".[experiments]")
    corpus = os.environ.get("DCX_CORPUS", os.path.join("..", "shared", "corpus"))
    if os.path.isfile(os.path.join(corpus, "gwf", "askalon_workload_ee.gwf")):
        session.run("dcx", "experiment", "examples/experiments/sc18-tables.yaml",
                    "--out", os.path.join("build", "schedule", "sc18"), *session.posargs)
    else:
        session.log(f"SC18 traces not found in {corpus}/gwf (set DCX_CORPUS): Tables XI and "
                    "XII are not reproduced")
    converted = os.path.join("build", "converted")
    if not os.path.isfile(os.path.join(converted, "report.json")):
        session.run("python", "-m", "dcx.converters.pipeline", "--out", converted, "examples")
    # the nine over the converted workloads: an experiment file written from the list of
    # workloads (one line each: what it runs on, or why it is left out), then run as any
    workloads = os.path.join("build", "schedule", "workloads")
    session.run("python", "-m", "dcx.experiments.workloads", "--out", workloads,
                "--converted", converted)
    session.run("dcx", "experiment", os.path.join(workloads, "experiment.json"),
                "--out", workloads, *session.posargs)


@nox.session
def bench(session: nox.Session) -> None:
    """Benchmarks: absolute figures and ratios against a baseline measured in the same run."""
    session.install(".")
    scripts = sorted(glob.glob("benchmarks/bench_*.py"))
    if session.posargs:
        scripts = [s for s in scripts if any(p in s for p in session.posargs)]
    for script in scripts:
        session.log(f"== {script}")
        session.run("python", script)


@nox.session
def docs(session: nox.Session) -> None:
    """Build the MkDocs site in strict mode into build/site (broken links fail the build)."""
    session.install(".[docs]")
    session.env["NO_MKDOCS_2_WARNING"] = "1"
    session.run("mkdocs", "build", "--strict", "-f", os.path.join("site", "mkdocs.yml"))


@nox.session
def lint(session: nox.Session) -> None:
    """ruff over everything (complexity included: C901); the layers, the import cycles and
    what imports the command line and the formats (tests/test_layers.py); mypy over the
    package as ``dcx``, the tests and the docs hooks."""
    session.install(".[lint,test,docs]")
    session.run("ruff", "check", *PACKAGES, "tests", "benchmarks", "site/hooks", "noxfile.py")
    session.run("python", "-m", "pytest", "-q", "-p", "no:randomly", "tests/test_layers.py")
    # mypy reads the package from src/dcx (its subpackages are links to the top-level folders).
    config = os.path.abspath("pyproject.toml")
    _mypy(session, "--config-file", config, "-p", "dcx")
    # Test functions need no annotations; their bodies are checked all the same. The tests
    # import each other as tests.<module>.
    _mypy(session, "--config-file", config, "--allow-untyped-defs",
          "--explicit-package-bases", *sorted(glob.glob("tests/**/*.py", recursive=True)))
    # The docs hooks import their helpers from their own folder, as MkDocs loads them.
    with session.chdir(os.path.join("site", "hooks")):
        _mypy(session, "--config-file", config, *sorted(glob.glob("*.py")),
              *sorted(glob.glob("*/")))


def _mypy(session: nox.Session, *args: str) -> None:
    output = session.run("mypy", *args, silent=True, success_codes=[0, 1])
    print(output, end="")
    if "Success:" not in str(output):
        session.error("mypy found problems")


@nox.session
def fuzz(session: nox.Session) -> None:
    """Run every reader on mutated corpus files for a bounded time (any traceback fails), then
    every property test on the thorough example budget."""
    session.install(TEST_EXTRAS)
    seconds = session.posargs[0] if session.posargs else "60"
    session.run("python", "tests/hostile/fuzz.py", "--seconds", seconds)
    # Every property test on four times the examples it asks for (the default run takes a
    # quarter: tests/conftest.py).
    session.run("python", "-m", "pytest", "-n", "auto", "--dist", "loadfile", "-m",
                "hypothesis", env={"DCX_HYPOTHESIS": "thorough"})
