"""frontend/src/fullwidth.ts, in Node: the full-width punctuation a Chinese input method leaves in
Python code is found (line, column, the ASCII it stands for) and replaced, and nothing inside a
string or a comment is ever touched. The module has no imports, so esbuild's transform of it alone
is the module the page runs."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path


FRONTEND = Path(__file__).resolve().parents[2] / "frontend"
ESBUILD = FRONTEND / "node_modules" / "esbuild" / "lib" / "main.js"

RUN = """
import { readFileSync } from "node:fs";
const { transform } = await import(process.argv[1]);
const { code } = await transform(readFileSync(process.argv[2], "utf8"), { loader: "ts", format: "esm" });
const module = await import("data:text/javascript;base64," + Buffer.from(code).toString("base64"));
const cases = JSON.parse(readFileSync(0, "utf8"));
const results = cases.map((c) => ({ found: module.findFullWidth(c), replaced: module.replaceFullWidth(c) }));
console.log(JSON.stringify(results));
"""


def scan(*codes: str) -> list[dict]:
    node = shutil.which("node")
    # scripts/test installs both (build_frontend): a machine without them is set up wrong, and
    # the scanner the editor ships must not go untested there.
    assert node is not None and ESBUILD.exists(), "needs Node and the front end's node_modules (npm ci in frontend/)"
    done = subprocess.run(
        [node, "--input-type=module", "-e", RUN, ESBUILD.as_uri(), str(FRONTEND / "src" / "fullwidth.ts")],
        input=json.dumps(codes), capture_output=True, text=True, timeout=60, check=True,
    )
    return json.loads(done.stdout)


def marks(code: str) -> list[tuple[int, int, str, str]]:
    return [(f["line"], f["column"], f["char"], f["ascii"]) for f in scan(code)[0]["found"]]


def fixed(code: str) -> str:
    return scan(code)[0]["replaced"]


def test_each_character_is_found_with_its_place_code_point_and_ascii():
    [result] = scan("print（1）")
    assert result["found"] == [
        {"index": 5, "line": 1, "column": 6, "char": "（", "codePoint": 0xFF08, "ascii": "("},
        {"index": 7, "line": 1, "column": 8, "char": "）", "codePoint": 0xFF09, "ascii": ")"},
    ]
    assert result["replaced"] == "print(1)"


def test_what_a_chinese_keyboard_types_becomes_ascii():
    code = "def f（a：int，b）：\n\treturn a【0】！＝b；x＝｛1：2｝。keys（）？\u3000"
    assert fixed(code) == "def f(a:int,b):\n\treturn a[0]!=b;x={1:2}.keys()? "
    assert [(line, column) for line, column, *_ in marks("x = 1\r\ny = f（2）\nz（）")] == [
        (2, 6), (2, 8), (3, 2), (3, 3)]


def test_strings_and_comments_are_never_touched():
    for code in ('s = "你好，世界"', "s = '（）'", '"""多行：\n（说明）\n"""', "'''a，\nb；'''",
                 'r"\\"，"', 'b"（"', 'f"结果：{x}，共 {n} 个"', 'f"{{你好，}}"', "# 注释：说明",
                 "x = 1  # 注释：（说明）", 'rb"（"', 'u"（"', 'F"（"', 's = "a\\"（"'):
        assert marks(code) == [], code
        assert fixed(code) == code


def test_code_around_strings_and_comments_still_counts():
    assert fixed('x = f（"（）"，\'，\'）  # （注）\ny = [1，2]') == 'x = f("（）",\'，\')  # （注）\ny = [1,2]'
    # A string left open ends with its line (as Python gives up there); the next line is code.
    assert fixed("s = '未闭合，\nx（1）") == "s = '未闭合，\nx(1)"
    # A triple-quoted string spans lines.
    assert fixed('"""a\n（\n"""（') == '"""a\n（\n"""('


def test_an_f_strings_replacement_fields_are_code():
    assert fixed('f"{f（x）}，好"') == 'f"{f(x)}，好"'
    assert fixed("f'{d[\"键，\"]：>4}（'") == "f'{d[\"键，\"]:>4}（'"
    assert fixed('f"{x!r}（" + f"{x:>{w（1）}}，"') == 'f"{x!r}（" + f"{x:>{w(1)}}，"'
    assert fixed('f"{a != b}（"') == 'f"{a != b}（"'


def test_a_string_typed_with_full_width_quotes_is_a_string():
    # Its quotes are marked and become ASCII; its text is the person's and stays.
    assert marks("print(“你好，世界”)") == [(1, 7, "“", '"'), (1, 13, "”", '"')]
    assert fixed("print(“你好，世界”)") == 'print("你好，世界")'
    assert fixed("print(‘a，b’)") == "print('a，b')"
    # Closed by an ASCII quote, or by the same full-width quote the input method repeated.
    assert fixed('print(“你好，")') == 'print("你好，")'
    assert fixed("print(“你好，“)") == 'print("你好，")'
    # Left open: the string runs to the end of its line, and the next line is code again.
    assert fixed("print(“你好，\nx（1）") == 'print("你好，\nx(1)'
    # Inside an ASCII string they are text.
    assert fixed('s = "他说“你好”"') == 's = "他说“你好”"'


def test_a_full_width_hash_starts_a_comment():
    assert marks("x = 1 ＃ 注释：说明") == [(1, 7, "＃", "#")]
    assert fixed("x = 1 ＃ 注释：说明\ny（）") == "x = 1 # 注释：说明\ny()"


def test_names_and_other_text_are_left_alone():
    # Full-width letters, digits and "＿" are NFKC-normalised in names; Chinese names are names.
    for code in ("ｐｒｉｎｔ＿x = 1", "变量 = 1", "x = 1 - 2", "", "a、b"):
        assert marks(code) == [], code
