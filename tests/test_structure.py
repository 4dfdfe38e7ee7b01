"""The shape of the code above the models: one path, read from the source.

- No import circle between the package's modules (every ``import`` counts,
  at module level or inside a function).
- No orchestration function over 80 lines.
- The command line defines each option once, and every option a command
  takes is a keyword its API function accepts.
"""

import ast
import importlib.resources
import inspect
from pathlib import Path

import pytest

import keras_posattn
from keras_posattn import cli
from keras_posattn import reproduce
from keras_posattn import tuning
from keras_posattn.export import export_saved_model
from keras_posattn.training.attention_png import write_attention_pngs
from keras_posattn.training.settings import RUN_OPTIONS

PACKAGE = Path(keras_posattn.__file__).parent

#: The modules that orchestrate runs (the trainer's stages, the tuner, the
#: reproduction, the command line).
ORCHESTRATION = ("training/trainer.py", "training/data.py", "training/settings.py",
                 "training/run_folder.py", "training/callbacks.py", "tuning.py",
                 "hypermodel.py", "reproduce.py", "cli.py")


def _module_name(path):
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path, modules):
    """The package's modules ``path`` imports (``from a import b`` is ``a.b``
    when that is a module, else ``a``)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [f"{node.module}.{alias.name}" if f"{node.module}.{alias.name}" in modules
                     else node.module for alias in node.names]
        else:
            continue
        found.update(name for name in names if name in modules)
    return found


def _modules():
    """Module name -> source file, the shipped search spaces included."""
    paths = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    spaces = importlib.resources.files("keras_posattn._tuning")
    for entry in spaces.iterdir():
        if entry.name.endswith(".py"):
            stem = entry.name[:-3]
            name = "keras_posattn._tuning" + ("" if stem == "__init__" else f".{stem}")
            paths[name] = Path(str(entry))
    return paths


def _cycle(graph):
    """An import circle of ``graph`` (module -> the modules it imports) as a
    list ending where it starts, or None."""
    state, stack = {}, []

    def visit(name):
        state[name] = "open"
        stack.append(name)
        for other in sorted(graph[name]):
            if state.get(other) == "open":
                return stack[stack.index(other):] + [other]
            if other not in state:
                found = visit(other)
                if found:
                    return found
        stack.pop()
        state[name] = "done"
        return None

    for name in sorted(graph):
        if name not in state:
            found = visit(name)
            if found:
                return found
    return None


def test_no_import_circle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]  # it finds one
    paths = _modules()
    graph = {name: _imports(path, paths) - {name} for name, path in paths.items()}
    cycle = _cycle(graph)
    assert cycle is None, " -> ".join(cycle)


def test_no_orchestration_function_over_80_lines():
    long = []
    for relative in ORCHESTRATION:
        tree = ast.parse((PACKAGE / relative).read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > 80:
                    long.append(f"{relative}:{node.lineno} {node.name} ({lines} lines)")
    assert not long


def test_each_option_is_defined_once():
    flags = [flag for option in cli.OPTIONS.values() for flag in option.flags]
    assert len(flags) == len(set(flags))
    for command in cli.COMMANDS:
        assert len(command.options) == len(set(command.options)), command.name
        assert set(command.options) <= set(cli.OPTIONS), command.name


def _keywords(function):
    return set(inspect.signature(function).parameters)


#: What each command's options become: keywords of these functions.
API = {
    "train": set(RUN_OPTIONS),
    "tune": _keywords(tuning.tune) | set(RUN_OPTIONS),
    "reproduce": _keywords(reproduce.reproduce) | set(RUN_OPTIONS),
    "export": _keywords(export_saved_model) | {"export_dir"},  # --base: base_dir
    "attention": _keywords(write_attention_pngs),
    "models": set(),
    "datasets": {"data_dir"},
}


@pytest.mark.parametrize("command", cli.COMMANDS, ids=[c.name for c in cli.COMMANDS])
def test_every_option_is_an_api_keyword(command):
    assert set(command.options) <= API[command.name]


def test_the_cli_passes_only_what_was_given():
    args = cli.build_parser().parse_args(
        ["train", "mpsan", "--epochs", "3", "--set", "dropout=0.2", "--set", "l2=1e-6",
         "--no-export", "--base", "repo"])
    assert cli.given_options(args) == {"epochs": 3, "overrides": {"dropout": 0.2, "l2": 1e-6},
                                       "export": False, "export_dir": "repo"}
    args = cli.build_parser().parse_args(["reproduce", "mpsan", "--dataset", "trec", "--quiet"])
    assert cli.given_options(args) == {"dataset": "trec", "progress": False}
