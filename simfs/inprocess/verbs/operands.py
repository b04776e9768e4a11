"""An operand as the tools name it in their refusals: the path text and GNU's quoting."""


def text(names: list[bytes]) -> str:
    """A path given as names from the mount's root, as text."""
    return "/".join(n.decode(errors="surrogateescape") for n in names)


def quote(path: str) -> str:
    """GNU coreutils' shell-escape quoting of an operand in a message: 'a b', 'it'\\''s'."""
    return "'" + path.replace("'", "'\\''") + "'"
