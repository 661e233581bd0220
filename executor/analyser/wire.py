"""How the web side and the analysers on the nodes talk, through Redis (standard library only,
imported by both). A request is pushed on its runtime's list; whichever node's analyser pops it
answers on the request's own reply key, which the web side waits on. A request whose client has
sent a newer one (``latest``) or whose deadline passed is answered without being analysed."""

from __future__ import annotations

import re

from executor import runtimes

OPS = ("complete", "resolve", "signatures", "hover")
# A runtime's id (runtimes/runtimes.toml): each runtime's analysers answer on its own list.
DEFAULT_RUNTIME = runtimes.FIRST
REPLY_TTL_S = 30


def requests_key(runtime: str = DEFAULT_RUNTIME) -> str:
    return f"analyse:requests:{runtime}"


def reply_key(request_id: str) -> str:
    return f"analyse:reply:{request_id}"


ALIVE_TTL_S = 5


def alive_key(runtime: str = DEFAULT_RUNTIME) -> str:
    """Set by every analyser waiting for requests (every second, expiring after ALIVE_TTL_S):
    with none, the web side answers at once instead of waiting for nobody."""
    return f"analyse:alive:{runtime}"


def latest_key(client: str, editor: str, op: str) -> str:
    """The highest request seq this client's editor (one page's, ``editor`` naming it) has sent
    for this op: a request with a lower one is superseded."""
    return f"analyse:latest:{op}:{client}:{editor}"


# SET the key to ARGV[1] only when that is higher than what it holds (requests may arrive out of
# order), expiring after ARGV[2] seconds.
RAISE_LATEST = """
local held = tonumber(redis.call('GET', KEYS[1]) or '-1')
if tonumber(ARGV[1]) > held then redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2]) end
return held
"""


# A line magic (%timeit f(x)) or a shell line (!pip ...): not Python. A magic's statement is kept
# (so completion works inside %timeit, and the names it uses count as used); a shell line is
# ``pass`` at its indentation.
MAGIC = re.compile(r"^([ \t]*)(%{1,2}\w+(?:[ \t]+-\w+(?:[ \t]+\d+)?)*[ \t]*)(.*)$")
SHELL = re.compile(r"^([ \t]*)!")


def as_python(code: str) -> tuple[str, dict[int, int]]:
    """The code with its notebook lines made Python, and for each line of a magic how many
    characters were taken from it after its indentation (to move a column by)."""
    lines, shifts = [], {}
    for number, line in enumerate(code.split("\n"), 1):
        shell = SHELL.match(line)
        if shell:
            lines.append(shell.group(1) + "pass")
            continue
        magic = MAGIC.match(line)
        if magic:
            indent, taken, rest = magic.groups()
            lines.append(indent + rest)
            shifts[number] = len(taken)
            continue
        lines.append(line)
    return "\n".join(lines), shifts
