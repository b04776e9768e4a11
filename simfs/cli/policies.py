"""`simfs policies`: every policy a mount can choose, grouped by kind, one line each.

    simfs policies                      every allocator, inode placement, directory order and
                                        write-back policy, one line each, grouped by kind
    simfs policies show NAME            one policy in full (its module's description)

Bad input: one line on stderr, exit status 2.
"""

from __future__ import annotations

import argparse
import json

from simfs.cli.common import fail

def register(subparsers) -> None:
    fmt = argparse.RawDescriptionHelpFormatter
    p = subparsers.add_parser(
        "policies", help="list allocators, inode placements, directory orders, write-back",
        formatter_class=fmt,
        description="Every policy a mount can choose, with a one-line summary, grouped by kind "
                    "and the mount option that selects it. Defaults are marked '*'.",
        epilog="examples:\n  simfs policies\n  simfs policies --markdown\n"
               "  simfs policies show ext2fs-2010\n"
               "  simfs mount disk.img /mnt/sim -o alloc=ext2fs-2010,dirorder=hash")
    p.add_argument("--markdown", action="store_true", help="print a Markdown table")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_policies)
    sub = p.add_subparsers(dest="policies_command", metavar="{show}")
    s = sub.add_parser("show", help="one policy in full", formatter_class=fmt,
                       description="Print one policy's kind, option, summary and the description "
                                   "of the algorithm it replicates (its module's documentation).",
                       epilog="examples:\n  simfs policies show cg\n  simfs policies show orlov\n"
                              "  simfs policies show softdep")
    s.add_argument("name")
    s.set_defaults(func=cmd_policies_show)


def policy_table() -> list[dict]:
    """[{kind, option, name, summary, default, ...}] for every policy, grouped by kind."""
    from policies import ALLOCATORS, INODE_PLACERS
    from policies.dirorder import DIR_ORDERS
    from policies.writeback import WRITEBACK
    from simfs.fs.volume import VolumeOptions

    d = VolumeOptions()
    rows = []
    for name, cls in ALLOCATORS.items():
        rows.append(dict(kind="allocator", option="alloc", name=name, summary=cls.summary,
                         default=name == d.alloc, decides=cls.decides, placement=cls.placer,
                         module=cls.__module__))
    for name, cls in INODE_PLACERS.items():
        rows.append(dict(kind="inode placement", option="inode_placement", name=name,
                         summary=cls.summary, default=False, module=cls.__module__))
    for name, cls in DIR_ORDERS.items():
        rows.append(dict(kind="directory order", option="dirorder", name=name, summary=cls.summary,
                         default=name == d.dirorder, module=cls.__module__))
    for name, cls in WRITEBACK.items():
        rows.append(dict(kind="write-back", option="writeback", name=name,
                         summary=cls.summary, default=name == d.writeback, module=cls.__module__))
    return rows


def _summary(r: dict) -> str:
    s = r["summary"]
    if r["kind"] == "allocator":
        when = "at write-back (delayed)" if r["decides"] == "flush" else "at write"
        s += f" [decides {when}; inodes: {r['placement']}]"
    return s


def cmd_policies(a) -> int:
    rows = policy_table()
    if a.json:
        print(json.dumps(rows, indent=1))
        return 0
    if a.markdown:                  # the one table renderer's Markdown (simfs/cli/tables.py)
        from simfs.cli.tables import Table, to_markdown
        print(to_markdown(Table("", ["kind", "option", "name", "summary"],
                                [(r["kind"], f"`{r['option']}=`",
                                  f"`{r['name']}`" + (" (default)" if r["default"] else ""),
                                  _summary(r).replace("|", "/")) for r in rows], right=[False] * 4)))
        return 0
    width = max(len(r["name"]) for r in rows) + 2
    kind = None
    for r in rows:
        if r["kind"] != kind:
            if kind is not None:
                print()
            kind = r["kind"]
            note = " (default: the allocator's own, shown in [])" if kind == "inode placement" else ""
            print(f"{kind} (-o {r['option']}=NAME){note}")
        mark = "*" if r["default"] else " "
        print(f"  {mark}{r['name']:<{width}}{_summary(r)}")
    return 0


def cmd_policies_show(a) -> int:
    import importlib

    rows = [r for r in policy_table() if r["name"] == a.name]
    if not rows:
        names = sorted({r["name"] for r in policy_table()})
        from plugin_registry import did_you_mean
        return fail(f"unknown policy {a.name!r}; choose one of: {', '.join(names)}"
                    + did_you_mean(a.name, names), "policies")
    for i, r in enumerate(rows):
        if i:
            print("\n" + "-" * 78 + "\n")
        print(f"{r['name']}: {r['kind']} (-o {r['option']}={r['name']})"
              + ("  [default]" if r["default"] else ""))
        print(f"  {r['summary']}")
        if r["kind"] == "allocator":
            print(f"  decides: {'at write-back (delayed allocation)' if r['decides'] == 'flush' else 'at write (immediate)'}")
            print(f"  inode placement unless -o inode_placement=: {r['placement']}")
        doc = (importlib.import_module(r["module"]).__doc__ or "").strip()
        if doc and r["kind"] != "write-back":
            print(f"\n{r['module']}:\n")
            print("\n".join("  " + ln if ln else "" for ln in doc.splitlines()))
    return 0
