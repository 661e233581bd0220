"""Each example of the gallery in Chinese (``playground/examples/zh-hans/``) is its English twin
with only its docstrings and comments translated: the same tokens otherwise, the same syntax
tree once docstrings are stripped, and, run in the real sandbox, the same output."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

from playground.gallery import EXAMPLES_DIR, examples

ENGLISH = sorted(EXAMPLES_DIR.glob("*.py"))
CHINESE_DIR = EXAMPLES_DIR / "zh-hans"
CJK = re.compile(r"[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]")
# A notebook line (%timeit ...) is Python once the runner has rewritten it: as a statement it
# stands for one here, so that the file parses with its lines where they were.
MAGIC = re.compile(r"^(\s*)%.*$", re.M)


def twin(path: Path) -> Path:
    return CHINESE_DIR / path.name


def parse(code: str) -> ast.Module:
    return ast.parse(MAGIC.sub(lambda m: f"{m.group(1)}pass", code))


def docstrings(tree: ast.Module) -> list[ast.Constant]:
    out = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            value = first.value if isinstance(first, ast.Expr) else None
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                out.append(value)
    return out


def without_docstrings(code: str) -> str:
    tree = parse(code)
    for node in docstrings(tree):
        node.value = ""
    return ast.dump(tree, include_attributes=False)


def split(code: str) -> tuple[list[tuple[int, str]], list[str], list[str]]:
    """The code's tokens (comments, blank lines and docstrings left out), its comments and its
    docstrings."""
    starts = {(node.lineno, node.col_offset) for node in docstrings(parse(code))}
    tokens, comments, docs = [], [], []
    for token in tokenize.generate_tokens(io.StringIO(code).readline):
        if token.type == tokenize.COMMENT:
            comments.append(token.string)
        elif token.type == tokenize.STRING and token.start in starts:
            docs.append(token.string)
        elif token.type != tokenize.NL:
            tokens.append((token.type, token.string))
    return tokens, comments, docs


def test_every_example_has_a_chinese_twin_and_no_other():
    assert [p.name for p in sorted(CHINESE_DIR.glob("*.py"))] == [p.name for p in ENGLISH]


@pytest.mark.parametrize("path", ENGLISH, ids=lambda p: p.stem)
def test_the_twins_differ_only_in_their_comments_and_docstrings(path: Path):
    english, chinese = path.read_text(encoding="utf-8"), twin(path).read_text(encoding="utf-8")
    assert without_docstrings(chinese) == without_docstrings(english)
    tokens_en, comments_en, docs_en = split(english)
    tokens_zh, comments_zh, docs_zh = split(chinese)
    assert tokens_zh == tokens_en
    # What is left is all translated: every comment and docstring of the twin is in Chinese (a
    # comment may take fewer lines in Chinese), and the same functions have docstrings.
    assert len(docs_zh) == len(docs_en) >= 1
    assert bool(comments_zh) == bool(comments_en)
    for text in comments_zh + docs_zh:
        assert CJK.search(text), f"{twin(path).name}: not translated: {text!r}"
    for text in comments_en + docs_en:
        assert not CJK.search(text), f"{path.name}: Chinese in the English: {text!r}"


def test_the_page_gets_each_example_in_its_language():
    english, chinese = examples("en"), examples("zh-hans")
    assert [e["slug"] for e in chinese] == [e["slug"] for e in english]
    for en, zh in zip(english, chinese):
        assert CJK.search(zh["title"]) and CJK.search(zh["description"]) and CJK.search(zh["code"]), zh["slug"]
        assert not CJK.search(en["code"].replace("×", "x")), en["slug"]
        assert zh["code"].startswith(f'"""{zh["title"]}\n')
        # A description wrapped over lines reads as one sentence: no space inside Chinese words.
        assert not re.search(r"[\u4e00-\u9fff] [\u4e00-\u9fff]", zh["description"]), zh["description"]
    # A language the gallery has no folder for, or a name that is no language, gets the English.
    assert examples("fr") == english and examples("../examples") == english


# What differs from run to run: a time ("3.67 ms", "436 ms ± 2 ms per loop"), a count of loops,
# and a comparison's row (its speed-up, "84.18×", and its rates); the losses, shapes and names
# printed are the same every run.
TIMES = re.compile(r"\d+(?:\.\d+)?\s*(?:ns|µs|us|ms|s|min)\b|\d+ loops?|\d+ runs?")
NUMBER = re.compile(r"\d+(?:\.\d+)?")


def measured(stdout: str) -> list[str]:
    lines = []
    for line in TIMES.sub("T", stdout).splitlines():
        if line.startswith(("The slowest run took", "Note: stopped after")):
            # %timeit's word on a run much slower than the rest, and on the repeats its time
            # budget cut short: both said when the machine is busy.
            continue
        if "×" in line:
            line = NUMBER.sub("N", line)
        lines.append(" ".join(line.split()))
    return lines


@pytest.mark.parametrize("path", ENGLISH, ids=lambda p: p.stem)
def test_both_twins_run_alike(run, path: Path):
    english = run(path.read_text(encoding="utf-8"))
    chinese = run(twin(path).read_text(encoding="utf-8"))
    assert english.status == chinese.status == "succeeded", (english, chinese)
    assert measured(chinese.stdout) == measured(english.stdout)
    assert chinese.stdout.strip(), path.name
    # "compiling" is said only of a compilation that takes long enough to be waited on: the machine's.
    kinds = lambda result: {e["type"] for e in result.events} - {"compiling"}
    assert kinds(chinese) == kinds(english)
