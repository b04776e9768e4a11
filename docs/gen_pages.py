"""Pages of the manual made from the code, at every `mkdocs build` (mkdocs-gen-files runs this).

Why: `--help`, the option parser and the registries are the truth; a page copied from them by
hand goes stale. So one page per `simfs` command is rendered from its argparse parser (the
same parser `simfs COMMAND --help` prints), and the tables of mount options, policies and disk
presets are rendered from `VolumeOptions` (each option declared on its field: simfs.fs.optionspec),
`simfs.fuse.mountopts` and the registries,
into the hand-written pages at their `<!-- generated: NAME -->` markers. A renamed field or a
vanished marker makes the build fail (`make docs` runs `mkdocs build --strict`).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
from pathlib import Path

import mkdocs_gen_files

os.environ["COLUMNS"] = "100"            # argparse wraps usage lines to the terminal: fix it

DOCS = Path(__file__).resolve().parent

# the hand-written pages that explain each command in depth (command -> "page#anchor", ...)
TOPIC = {
    "mkfs": ("mounting.md#making-an-image", "ext2-differences.md"),
    "mount": ("mounting.md", "mount-options.md"), "umount": ("mounting.md",),
    "ctl": ("statistics.md#phases-and-the-control-directory",), "fsck": ("durability.md",),
    "stats": ("statistics.md",), "compare": ("experiments.md#simfs-compare",),
    "replay": ("replay-and-verbs.md#record-and-replay",), "verb": ("replay-and-verbs.md#in-process-verbs",),
    "disks": ("disk-models.md",), "policies": ("policies.md",), "frag": ("layout.md",), "layout": ("layout.md",),
    "install-helper": ("mounting.md#mount-t-fusesimfs-and-fstab",), "experiment": ("experiments.md#experiments",),
    "lesson": ("experiments.md#lessons", "lessons/README.md"),
    "report": ("experiments.md#one-page-to-show-simfs-report",),
    "run": ("experiments.md#job-files",), "plot": ("statistics.md#traces-and-plots",),
}


def page_title(target: str) -> str:
    """The first heading of a hand-written page (a link to it is named after it)."""
    text = (DOCS / target.split("#")[0]).read_text()
    return next(line[2:].strip() for line in text.splitlines() if line.startswith("# "))


_CODE = re.compile(r"(`[^`\n]*`)")


def esc(text: str) -> str:
    """Plain help text as Markdown: characters Markdown would take as markup are escaped,
    outside `code spans`, which the help texts already use for commands."""
    parts = _CODE.split(text)
    for i in range(0, len(parts), 2):
        p = parts[i].replace("\\", "\\\\")
        for ch in "*_[]<>#|":
            p = p.replace(ch, "\\" + ch)
        parts[i] = p
    return "".join(parts)


def prose(text: str) -> str:
    """A description as Markdown: blank-line separated paragraphs; a block with indented lines
    (a list, a table) stays as printed."""
    out = []
    for block in re.split(r"\n\s*\n", text.strip("\n")):
        lines = block.splitlines()
        if any(line.startswith((" ", "\t")) for line in lines[1:]) or lines[0].startswith(" "):
            out.append("```text\n" + block + "\n```")
        else:
            out.append(esc(" ".join(line.strip() for line in lines)))
    return "\n\n".join(out)


def subparsers(parser: argparse.ArgumentParser):
    """(name, aliases, help, parser) of a parser's subcommands, each once."""
    for a in parser._actions:
        if isinstance(a, argparse._SubParsersAction):
            helps = {ca.dest: ca.help for ca in a._choices_actions}
            seen: dict[int, list] = {}
            for name, sp in a.choices.items():
                seen.setdefault(id(sp), [name, [], helps.get(name), sp])
                if seen[id(sp)][0] != name:
                    seen[id(sp)][1].append(name)
            yield from (tuple(v) for v in seen.values())


def arguments(parser: argparse.ArgumentParser) -> list[str]:
    """One list item per argument, as --help lists them: invocation, help, default."""
    fmt = parser._get_formatter()
    items = []
    for a in parser._actions:
        if isinstance(a, argparse._SubParsersAction) or a.help == argparse.SUPPRESS:
            continue
        inv = fmt._format_action_invocation(a)
        text = esc(fmt._expand_help(a)) if a.help else ""
        if a.choices and not a.option_strings and "{" not in inv:
            text += f" (one of: {', '.join(f'`{c}`' for c in a.choices)})"
        items.append(f"- `{inv}`" + (f" — {text}" if text else ""))
    return items


def render(parser: argparse.ArgumentParser, title: str, level: int) -> list[str]:
    h = "#" * level
    out = [f"{h} {title}", ""]
    if parser.description:
        out += [prose(parser.description), ""]
    out += ["```text", parser.format_usage().strip(), "```", ""]
    args = arguments(parser)
    if args:
        out += [f"{h}# Arguments" if level == 1 else "**Arguments**", ""] + args + [""]
    if parser.epilog:
        out += ["```text", parser.epilog.strip("\n"), "```", ""]
    for name, aliases, help_, sp in subparsers(parser):
        out += render(sp, f"{title} {name}", level + 1)
        if aliases:
            out += [f"Also spelt `{title} {' '.join(aliases)}`.", ""]
    return out


def command_pages() -> None:
    from simfs.cli.main import build_parser
    top = build_parser()
    index = ["# Commands", "",
             "Every page below is made from the command's own parser at each build of this manual, "
             "so it says what `simfs COMMAND --help` says. "
             "`simfs --help` lists them:", "",
             "```text", top.format_help().strip(), "```", "",
             "| command | what it does |", "|---|---|"]
    for name, aliases, help_, sp in subparsers(top):
        also = f" (also `{' '.join(aliases)}`)" if aliases else ""
        index.append(f"| [`simfs {name}`]({name}.md){also} | {esc(help_ or '')} |")
        page = render(sp, f"simfs {name}", 1)
        if aliases:
            page.insert(2, f"Also spelt `simfs {' '.join(aliases)}`.\n")
        if name in TOPIC:
            links = ", ".join(f"[{page_title(t)}](../{t})" for t in TOPIC[name])
            page += ["", f"More in the manual: {links}.", ""]
        with mkdocs_gen_files.open(f"commands/{name}.md", "w") as f:
            f.write("\n".join(page).rstrip() + "\n")
    with mkdocs_gen_files.open("commands/index.md", "w") as f:
        f.write("\n".join(index) + "\n")


# --- mount options -------------------------------------------------------------------------------

def _size_or_number(v) -> str:
    from simfs import units
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int) and v >= 1024 and v % 1024 == 0:
        return units.option_size(v)
    if isinstance(v, float):
        return f"{v:.15g}"
    return str(v)


def _valid_values(f, typ) -> list[str]:
    """What the option takes, as its field declares it (simfs.fs.optionspec)."""
    from simfs.fs import optionspec as spec
    valid = []
    ch = spec.choices(f, typ)
    if ch:
        valid.append(", ".join(f"`{c}`" for c in ch))
    reg = f.metadata.get("registry")
    if reg is not None:
        builtin = [n for n in sorted(reg()) if reg().origin(n) == "built-in"]
        valid.append(", ".join(f"`{n}`" for n in builtin) + ", a plug-in's name or `package.module:Class`")
    rng = f.metadata.get("range")
    if rng:
        ends = ["the machine's memory" if b is spec.machine_memory else
                "computed when mounting" if callable(b) else _size_or_number(b) for b in rng]
        valid.append(f"{ends[0]} to {ends[1]}")
    if f.metadata.get("multiple"):
        valid.append(f"a multiple of {_size_or_number(f.metadata['multiple'])}")
    if typ is bool:
        valid.append(f"`{f.name}`, `no{f.name}`, `{f.name}=yes\\|no`")
    return valid


def volume_options() -> str:
    from simfs.fs import optionspec as spec
    from simfs.fs.volume import VolumeOptions
    from simfs.fuse import mountopts as mo
    hints = spec.hints(VolumeOptions)
    rows = ["| option | type | default | valid values | what it does |", "|---|---|---|---|---|"]
    for f in dataclasses.fields(VolumeOptions):
        typ, nullable = spec.unoptional(hints.get(f.name, str))
        kind = {bool: "yes/no", int: "size or number (K/M/G)", float: "number"}.get(typ, "text")
        if f.metadata.get("unit"):
            kind += f", {f.metadata['unit']}"
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()
        default = "(empty)" if default == "" else f"`{_size_or_number(default)}`"
        valid = _valid_values(f, typ)
        rows.append(f"| `{f.name}` | {kind} | {default} | {'; '.join(valid)} | {esc(f.metadata.get('help', ''))} |")
    aliases = ", ".join(f"`{k}` = " + " + ".join(f"`{fld}={'yes' if v else 'no'}`" for fld, v in sets)
                        for k, sets in mo.ALIASES.items())
    return "\n".join(rows) + f"\n\nAliases: {aliases}.\n"


def frontend_options() -> str:
    from simfs.fuse import mountopts as mo
    rows = ["| option | value | default | what it does |", "|---|---|---|---|"]
    for k, spec in mo.FRONTEND.items():
        kind = "yes/no" if spec.kind is bool else (" \\| ".join(f"`{c}`" for c in spec.kind)
                                                   if isinstance(spec.kind, tuple) else "text")
        default = "—" if spec.default is None else f"`{_size_or_number(spec.default)}`"
        rows.append(f"| `{k}` | {kind} | {default} | {esc(spec.help)} |")
    return "\n".join(rows) + "\n"


def kernel_flags() -> str:
    from simfs.fuse import mountopts as mo
    return ", ".join(f"`{k}`" for k in mo.KERNEL_FLAGS)


# --- registries ---------------------------------------------------------------------------------

def policies_table() -> str:
    from simfs.cli.policies import policy_table, _summary
    rows = ["| kind | option | name | summary |", "|---|---|---|---|"]
    for r in policy_table():
        name = f"`{r['name']}`" + (" (default)" if r.get("default") else "")
        rows.append(f"| {r['kind']} | `{r['option']}=` | {name} | {esc(_summary(r))} |")
    return "\n".join(rows) + "\n"


def disk_presets() -> str:
    from disk_models import PRESETS
    rows = ["| preset | model | what it stands for |", "|---|---|---|"]
    for name, p in PRESETS.items():
        rows.append(f"| [`{name}`](#preset-{name}) | `{p.kind}` | {esc(p.summary)} |")
    return "\n".join(rows) + "\n"


def disk_preset_details() -> str:
    """Every preset's parameters, values and provenance: what `simfs disks show NAME` prints."""
    from disk_models import PRESETS
    from simfs.cli.disks import show_doc
    out = []
    for name in PRESETS:
        doc = show_doc(name)
        out += [f"### `{name}` {{ #preset-{name} }}", "", esc(doc.get("drive") or PRESETS[name].summary), "",
                "| parameter | value | provenance |", "|---|---|---|"]
        for key, prm in doc["parameters"].items():
            out.append(f"| `{key}` | {esc(str(prm['shown']))} | {esc(str(prm['provenance']))} |")
        out.append("")
    return "\n".join(out)


MARKERS = {
    "volume-options": volume_options, "frontend-options": frontend_options,
    "kernel-flags": kernel_flags, "policies": policies_table, "disk-presets": disk_presets,
    "disk-preset-details": disk_preset_details,
}


def fill_markers() -> None:
    """Replace each `<!-- generated: NAME -->` line of a hand-written page by NAME's table."""
    used = set()
    for src in sorted(DOCS.rglob("*.md")):
        text = src.read_text()
        if "<!-- generated:" not in text:
            continue

        def sub(m):
            used.add(m.group(1))
            return MARKERS[m.group(1)]()
        text = re.sub(r"<!-- generated: ([\w-]+) -->", sub, text)
        with mkdocs_gen_files.open(src.relative_to(DOCS).as_posix(), "w") as f:
            f.write(text)
    missing = set(MARKERS) - used
    if missing:
        raise LookupError(f"no page has the markers {sorted(missing)}")


command_pages()
fill_markers()
