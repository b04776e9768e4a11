"""What the lessons share: a fresh image (the experiments' fixed UUID, hash seed and time, so
every run places the same blocks), one in-process verb on it (simfs.inprocess.verbs: the real tool's
system calls through the kernel model, no FUSE), and the lesson's page (README.md beside its
pictures, figures.json with every number the text quotes)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path


def quiet(label: str | None = None) -> None:
    """The progress callback when nobody watches: a lesson's run(out, quick, work, progress)
    calls progress(LABEL) as a step starts and progress(None) as it ends, STEPS times in all
    (simfs.cli.progress.Bar draws them)."""


def options(spec: str):
    """VolumeOptions from a `-o` string, exactly as `simfs mount -o` parses it."""
    from simfs.fuse import mountopts
    return mountopts.parse([spec]).volume


def make_image(path: Path, size: int, block_size: int = 4096, inode_size: int = 256) -> Path:
    from simfs.ondisk.mkfs import mkfs
    from experiments import runner
    path.unlink(missing_ok=True)
    mkfs(path, size, block_size=block_size, inode_size=inode_size, uuid=runner.MKFS_UUID,
         hash_seed=runner.MKFS_HASH_SEED, now=runner.MKFS_NOW, uid=0, gid=0)
    return path


def verb(image: Path, spec: str, name: str, where: str, **params) -> dict:
    """One cold in-process run of a verb (the volume opened and closed as a mount would be)."""
    from simfs.inprocess import verbs
    return verbs.run(str(image), options(spec), name, where, **params)


def tree(seed: int, files: int, svn: bool = False, **kw):
    """A generated source-like tree, streamed (nothing written to the local disk)."""
    from experiments.workload.describe import describe
    return describe(seed=seed, files=files, svn=svn, **kw)


@dataclass
class Page:
    """A lesson's output: the story with its numbers, pictures and questions, as Markdown."""
    title: str
    out: Path
    parts: list = field(default_factory=list)
    figures: dict = field(default_factory=dict)
    pictures: list = field(default_factory=list)

    def say(self, text: str) -> None:
        self.parts.append(text.strip() + "\n")

    def table(self, header: list, rows: list) -> None:
        from experiments.report import markdown
        self.parts.append(markdown(header, [[str(c) for c in r] for r in rows]) + "\n")

    def picture(self, name: str, caption: str) -> None:
        self.pictures.append(name)
        self.parts.append(f"![{caption}]({name})\n\n*{caption}*\n")

    def questions(self, qs: list[str]) -> None:
        self.parts.append("## Questions\n\n" + "\n".join(f"{i}. {q}" for i, q in enumerate(qs, 1)) + "\n")

    def write(self) -> str:
        text = f"# {self.title}\n\n" + "\n".join(self.parts)
        (self.out / "README.md").write_text(text)
        (self.out / "figures.json").write_text(json.dumps(self.figures, indent=1) + "\n")
        return text
