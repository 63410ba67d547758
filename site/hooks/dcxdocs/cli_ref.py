"""The CLI reference, walked from the real argument parser."""

from __future__ import annotations

import argparse

from dcxdocs.markdown import cell, code, fenced, table


def _subparsers(parser: argparse.ArgumentParser) -> list[tuple[str, str, argparse.ArgumentParser]]:
    commands = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
            for name, subparser in action.choices.items():
                commands.append((name, helps.get(name, ""), subparser))
    return commands


def _argument_rows(parser: argparse.ArgumentParser) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = []
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction | argparse._SubParsersAction):
            continue
        if action.option_strings:
            name = ", ".join(action.option_strings)
            if action.nargs != 0:
                name += f" {action.metavar or action.dest.upper()}"
        else:
            name = str(action.metavar or action.dest)
            if action.nargs in ("+", "*"):
                name += " …"
        choices = ", ".join(str(c) for c in action.choices) if action.choices else ""
        default = ("" if action.default in (None, False, argparse.SUPPRESS)
                   or not action.option_strings else str(action.default))
        repeat = "repeatable" if isinstance(action, argparse._AppendAction) else ""
        required = "yes" if action.required or not action.option_strings else "no"
        rows.append((code(name), required, cell(choices), cell(default),
                     cell("; ".join(p for p in (action.help or "", repeat) if p))))
    return rows


def command_names(parser: argparse.ArgumentParser) -> list[str]:
    return [name for name, _, _ in _subparsers(parser)]


def render(parser: argparse.ArgumentParser) -> str:
    parts = [f"`{parser.prog}`: {parser.description}\n", fenced(parser.format_usage(), "text")]
    if parser.epilog:
        parts.append(f"{parser.epilog}\n")
    parts.append(table(("Argument", "Required", "Choices", "Default", "Meaning"),
                       _argument_rows(parser)))
    for name, summary, subparser in _subparsers(parser):
        parts.append(f"## `{parser.prog} {name}`\n")
        parts.append(f"{summary[:1].upper()}{summary[1:]}.\n" if summary else "")
        if subparser.description:
            parts.append(f"{subparser.description}\n")
        parts.append(fenced(subparser.format_usage(), "text"))
        parts.append(table(("Argument", "Required", "Choices", "Default", "Meaning"),
                           _argument_rows(subparser)))
        for nested_name, nested_summary, nested in _subparsers(subparser):
            parts.append(f"### `{parser.prog} {name} {nested_name}`\n")
            parts.append(f"{nested_summary}\n" if nested_summary else "")
            parts.append(fenced(nested.format_usage(), "text"))
            parts.append(table(("Argument", "Required", "Choices", "Default", "Meaning"),
                               _argument_rows(nested)))
    return "\n".join(part for part in parts if part)
