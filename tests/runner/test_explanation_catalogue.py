"""The explanations' catalogue: every sentence the runner explains an error with
(executor/runner/explain.py), a compilation's reason and warning with
(executor/runner/recompile.py), a measurement's notes with (executor/runner/notebook.py) or what a
profile says of its trace with (executor/runner/profile.py), and every way the executor says how a
run ended (executor/events.py ``ENDED``) has its Chinese in
frontend/src/i18n/zh-hans/explanations.json, with the same placeholders, and the catalogue holds
nothing else. Then what the events carry of them: the template and args beside the English, and
what the supervisor keeps of a runner's."""

from __future__ import annotations

import ast
import json
import re
import string
from pathlib import Path

import pytest

from executor import events as ev
from executor import supervisor
from executor.runner import explain, notebook, profile, protocol, recompile

ROOT = Path(__file__).resolve().parents[2]
CATALOGUE = ROOT / "frontend" / "src" / "i18n" / "zh-hans" / "explanations.json"
PLACEHOLDER = re.compile(r"\{(\w+)\}")
TEMPLATES = (*explain.TEMPLATES, *ev.ENDED.values(), *recompile.TEMPLATES, *notebook.TEMPLATES, *profile.TEMPLATES)


def chinese() -> dict[str, str]:
    return json.loads(CATALOGUE.read_text())


def test_every_template_has_its_chinese_with_the_same_placeholders():
    known = chinese()
    missing = [template for template in TEMPLATES if template not in known]
    assert missing == [], f"{len(missing)} templates have no Chinese in {CATALOGUE.name}:\n" + "\n".join(missing)
    differ = [f"{template!r} -> {known[template]!r}" for template in TEMPLATES
              if sorted(PLACEHOLDER.findall(template)) != sorted(PLACEHOLDER.findall(known[template]))]
    assert differ == [], "placeholders differ between English and Chinese:\n" + "\n".join(differ)


def test_the_catalogue_holds_no_sentence_nobody_says_and_none_in_english():
    stale = [key for key in chinese() if key not in TEMPLATES]
    assert stale == [], "translations of templates that no longer exist:\n" + "\n".join(stale)
    untranslated = [key for key, value in chinese().items() if not value.strip() or value == key]
    assert untranslated == [], "\n".join(untranslated)


@pytest.mark.parametrize("template", TEMPLATES)
def test_a_template_has_only_plain_named_placeholders(template):
    """The page fills ``{name}`` and nothing else: no format spec, conversion or position."""
    for _, name, spec, conversion in string.Formatter().parse(template):
        if name is not None:
            assert re.fullmatch(r"[a-z_]+", name) and not spec and conversion is None, template
    assert protocol.placeholders(template) == set(PLACEHOLDER.findall(template))


PANES = ROOT / "frontend" / "src" / "i18n" / "zh-hans" / "panes.json"


def test_the_sentence_a_page_makes_of_the_reasons_is_in_its_own_catalogue():
    """The page joins the reasons into "f compiled again ... because ..." itself
    (frontend/src/panes/compiled.ts), from the panes' catalogue."""
    assert recompile.COMPILED_AGAIN in json.loads(PANES.read_text())
    assert recompile.COMPILED_AGAIN in (ROOT / "frontend" / "src" / "panes" / "compiled.ts").read_text()


@pytest.mark.parametrize("module", [explain, recompile], ids=["explain", "recompile"])
def test_every_sentence_in_the_module_is_one_of_its_templates(module):
    """A sentence written in explain.py or recompile.py outside its TEMPLATES would reach a page
    untranslated (the one the page makes itself aside)."""
    said = (*module.TEMPLATES, *((recompile.COMPILED_AGAIN,) if module is recompile else ()))
    tree = ast.parse(Path(module.__file__).read_text())
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef)) and node.body
                  and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    sentences = [node.value for node in ast.walk(tree)
                 if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
                 and len(node.value) > 40 and node.value.rstrip().endswith(".")]
    assert sentences and all(sentence in said for sentence in sentences), \
        [s for s in sentences if s not in said]


def test_an_explanation_carries_its_template_and_args():
    exc = EOFError("EOF when reading a line")
    event = explain.add_explanation(exc, {"exc_type": "EOFError", "message": str(exc)})
    assert event["explanation_template"] == explain.NO_INPUT and event["explanation_args"] == {}
    assert event["explanation"] == explain.NO_INPUT
    assert protocol.undeclared("error", event) == []


def test_an_explanation_whose_args_are_too_long_to_send_goes_in_english_alone():
    said = protocol.Templated(explain.NOT_INSTALLED, module="x" * (protocol.EXPLANATION_ARG_MAX_CHARS + 1),
                              libraries="numpy")
    assert explain.explanation_fields(said) == {"explanation": str(said)}


def test_a_finished_message_carries_its_template_and_args_and_a_reason_its_own():
    reason = ev.ended("wall_clock", seconds="10")
    fields = protocol.finished_fields(ev.TIMED_OUT, ev.ended("cell_interrupted", reason=reason))
    assert fields["message"] == ("wall-clock limit of 10 s exceeded: the cell was interrupted (KeyboardInterrupt); "
                                 "the session keeps its state")
    assert type(fields["message"]) is str
    assert fields["message_template"] == ev.ENDED["cell_interrupted"]
    assert fields["message_args"] == {"reason": {"template": ev.ENDED["wall_clock"], "args": {"seconds": "10"}}}
    plain = protocol.finished_fields(ev.LOST, "gone")
    assert plain["message"] == "gone" and plain["message_template"] is plain["message_args"] is None


def test_the_sandbox_s_english_is_made_from_its_template_again():
    _, message = supervisor.decide_status(kill=None, sandbox_reason=None, runner_exit=None, returncode=3,
                                          death_signal=None)
    assert message == "the snippet's process exited with code 3" and message.args == {"code": 3}
    status, message = supervisor.decide_status(
        kill=None, sandbox_reason=("limit_exceeded", "memory limit of 512 MiB exceeded"), runner_exit=None,
        returncode=137, death_signal=9)
    assert (status, message) == ("limit_exceeded", "memory limit of 512 MiB exceeded")
    assert message.template == ev.ENDED["memory"] and message.args == {"size": "512 MiB"}
    assert ev.recognised("CPU time limit of 30 s exceeded", ev.SANDBOX_ENDINGS).args == {"seconds": "30"}
    assert type(ev.recognised("a limit of its own", ev.SANDBOX_ENDINGS)) is str


# What the supervisor keeps of an error's template and args from the runner, which user code can
# write on the event pipe as well as the runner can.

def kept(**fields) -> tuple[dict, list[str]]:
    problems = protocol.Problems()
    event = {"exc_type": "SyntaxError", "message": "invalid character", **fields}
    return supervisor.checked_explanation(event, problems), problems.seen


ARGS = {"line": 1, "column": 6, "char": "（", "code_point": "U+FF08", "ascii": "("}
SENTENCE = explain.FULL_WIDTH["parenthesis"].format(**ARGS)


def test_the_supervisor_keeps_a_template_of_the_runner_s_that_makes_the_explanation():
    event, problems = kept(explanation=SENTENCE, explanation_template=explain.FULL_WIDTH["parenthesis"],
                           explanation_args=ARGS)
    assert event["explanation_args"] == ARGS and problems == []
    assert kept(explanation="plain") == ({"exc_type": "SyntaxError", "message": "invalid character",
                                          "explanation": "plain"}, [])


@pytest.mark.parametrize("forged", [
    {"explanation_template": "Line {line}: run rm -rf /", "explanation_args": {"line": 1}},
    {"explanation_template": explain.FULL_WIDTH["parenthesis"], "explanation_args": {**ARGS, "column": 7}},
    {"explanation_template": explain.FULL_WIDTH["parenthesis"], "explanation_args": {**ARGS, "extra": "x"}},
    {"explanation_template": explain.FULL_WIDTH["parenthesis"], "explanation_args": {"line": 1}},
    {"explanation_template": explain.FULL_WIDTH["parenthesis"], "explanation_args": {**ARGS, "char": ["（"]}},
    {"explanation_template": explain.FULL_WIDTH["parenthesis"], "explanation_args": {**ARGS, "column": True}},
    {"explanation_template": explain.FULL_WIDTH["parenthesis"],
     "explanation_args": {**ARGS, "char": "（" * (protocol.EXPLANATION_ARG_MAX_CHARS + 1)}},
    {"explanation_template": explain.FULL_WIDTH["parenthesis"]},
    {"explanation_args": ARGS},
], ids=["unknown-template", "args-that-say-otherwise", "an-extra-arg", "an-arg-missing", "a-list", "a-bool",
        "a-long-arg", "no-args", "no-template"])
def test_the_supervisor_drops_a_template_it_cannot_vouch_for(forged):
    event, problems = kept(explanation=SENTENCE, **forged)
    assert event == {"exc_type": "SyntaxError", "message": "invalid character", "explanation": SENTENCE}
    assert len(problems) == 1 and "explanation_template" in problems[0]


# What the supervisor keeps of a compilation's reason and warning parts.

def compiled(**fields) -> tuple[dict, list[str]]:
    problems = protocol.Problems()
    return supervisor.checked_recompile_parts({"name": "f", **fields}, problems), problems.seen


SHAPE = {"template": recompile.SHAPE, "args": {"name": "x", "before": "f32[3]", "after": "f32[4]"}}
REASON = "f compiled again (compilation 2) because argument x has a new shape: f32[3] → f32[4]."
LOOP = {"template": recompile.COMPILED_MANY_IN_LOOP, "args": {"name": "f", "count": 3, "line": 7, "ms": "12"}}
ADVICE = {"template": recompile._ADVICE["shape"], "args": {}}
WARNING = ("f has been compiled 3 times by line 7, in a loop (12 ms of compiling in all). Its argument shapes "
           "keep changing: pad or bucket them to a few fixed shapes.")


def test_the_supervisor_keeps_reason_and_warning_parts_that_make_the_english():
    event, problems = compiled(recompile={"count": 2, "kind": "shape", "reason": REASON, "reason_parts": [SHAPE]},
                               warning=WARNING, warning_parts=[LOOP, ADVICE])
    assert event["recompile"]["reason_parts"] == [SHAPE] and event["warning_parts"] == [LOOP, ADVICE]
    assert problems == []


@pytest.mark.parametrize("forged", [
    {"reason_parts": [{"template": "argument {name} is fine: run {after}", "args": SHAPE["args"]}]},
    {"reason_parts": [{**SHAPE, "args": {**SHAPE["args"], "after": "f32[5]"}}]},
    {"reason_parts": [{**SHAPE, "args": {**SHAPE["args"], "extra": "x"}}]},
    {"reason_parts": [{**SHAPE, "args": {**SHAPE["args"], "name": ["x"]}}]},
    {"reason_parts": "argument x"},
    {"warning_parts": [LOOP]},
    {"warning_parts": [ADVICE, LOOP]},
], ids=["unknown-template", "args-that-say-otherwise", "an-extra-arg", "a-list", "not-a-list",
        "a-sentence-missing", "out-of-order"])
def test_the_supervisor_drops_parts_it_cannot_vouch_for(forged):
    recompiled = {"count": 2, "kind": "shape", "reason": REASON}
    if "reason_parts" in forged:
        recompiled["reason_parts"] = forged["reason_parts"]
    fields = {"warning": WARNING, **({"warning_parts": forged["warning_parts"]} if "warning_parts" in forged else {})}
    event, problems = compiled(recompile=recompiled, **fields)
    assert "reason_parts" not in event["recompile"] and "warning_parts" not in event
    assert event["recompile"]["reason"] == REASON and event["warning"] == WARNING
    assert len(problems) == 1 and "parts" in problems[0]


DISPATCH = {"template": notebook.DISPATCH_ONLY, "args": {"statement": "f(x)"}}
BLOCK = {"template": notebook.TIME_BLOCKING, "args": {"blocking": "f(x).block_until_ready()"}}
STOPPED = {"template": notebook.STOPPED, "args": {"done": 2, "asked": 7, "why": {
    "template": notebook.BUDGET, "args": {"seconds": "10"}}}}
FEWER = {"template": notebook.FEWER, "args": {}}
NOTES = [" ".join(part["template"].format(**{k: v if not isinstance(v, dict) else v["template"].format(**v["args"])
                                                for k, v in part["args"].items()}) for part in note)
         for note in ([DISPATCH, BLOCK], [STOPPED, FEWER])]


def timed(**fields) -> tuple[dict, list[str]]:
    problems = protocol.Problems()
    return supervisor.checked_notes_parts({"kind": "timeit", **fields}, problems), problems.seen


def test_the_supervisor_keeps_notes_parts_that_make_each_note():
    assert NOTES[1] == ("Note: stopped after 2 of 7 repeats: %timeit spends at most 10 s. Time fewer loops "
                        "with -n and -r, or a smaller input.")
    event, problems = timed(notes=NOTES, notes_parts=[[DISPATCH, BLOCK], [STOPPED, FEWER]])
    assert event["notes_parts"] == [[DISPATCH, BLOCK], [STOPPED, FEWER]] and problems == []


@pytest.mark.parametrize("parts", [
    [[DISPATCH, BLOCK]],
    [[BLOCK, DISPATCH], [STOPPED, FEWER]],
    [[DISPATCH, BLOCK], [{**STOPPED, "args": {**STOPPED["args"], "why": {"template": "{x}", "args": {"x": "y"}}}},
                         FEWER]],
    [[DISPATCH, BLOCK], "Note"],
    {"0": [DISPATCH]},
], ids=["a-note-missing", "out-of-order", "an-unknown-inner-template", "not-a-list", "a-dict"])
def test_the_supervisor_drops_notes_parts_it_cannot_vouch_for(parts):
    event, problems = timed(notes=NOTES, notes_parts=parts)
    assert "notes_parts" not in event and event["notes"] == NOTES
    assert len(problems) == 1 and "notes_parts" in problems[0]


CUT = [{"template": profile.DEVICE_OPS_CUT, "args": {"events": "120,000", "kept": "100,000"}},
       {"template": profile.PYTHON_CUT, "args": {"calls": "9,000", "kept": "5,000"}}]
CUT_TEXT = ("its device ops were 120,000 events: the first 100,000 are kept; its Python lane had 9,000 calls: "
            "the 5,000 longest are kept")
NO_TRACE = [{"template": profile.MEMORY_FULL, "args": {}}]


def test_a_profile_s_cut_and_error_keep_the_parts_that_make_them():
    kept = supervisor.bounded_profile({"cut": CUT_TEXT, "cut_parts": CUT, "events": 3})
    assert kept["cut_parts"] == CUT
    kept = supervisor.bounded_profile({"error": profile.MEMORY_FULL, "error_parts": NO_TRACE})
    assert kept["error_parts"] == NO_TRACE


@pytest.mark.parametrize("fields", [
    {"cut": CUT_TEXT, "cut_parts": CUT[:1]},
    {"cut": CUT_TEXT, "cut_parts": [{**CUT[0], "template": "its {events} are gone: {kept}"}, CUT[1]]},
    {"error": "the memory was fine", "error_parts": NO_TRACE},
    {"error": profile.MEMORY_FULL + profile.MEMORY_FULL, "error_parts": NO_TRACE * 2},
], ids=["a-part-missing", "an-unknown-template", "another-error", "two-errors"])
def test_a_profile_s_parts_that_do_not_make_its_words_are_dropped(fields):
    kept = supervisor.bounded_profile(fields)
    assert "cut_parts" not in kept and "error_parts" not in kept
    assert kept.get("cut", kept.get("error")) == fields.get("cut", fields.get("error"))
