"""The shape of rag_app's imports and its environment use, checked on the source with ``ast``
(so that docstrings and comments don't count):

* no import cycle: every `import rag_app…` anywhere in a module (top level, inside a function,
  under TYPE_CHECKING) counts, so a cycle can't hide behind a local import;
* no folder-level cycle either: each subpackage of rag_app (``rag_app/answer/``, ``rag_app/store/``
  …) and each top-level module (``kb.py``, ``engine.py`` …) is one node, and the graph of their
  imports of each other has no loop, so the layers stack;
* no module imports ``benchmarks`` or ``training`` (the developer's tools beside the package);
* only rag_app/config.py (Settings) and rag_app/faults.py (RAG_FAULT) read ``RAG_`` variables;
* no statement run at import writes the environment.
"""

from __future__ import annotations

import ast
import fnmatch
import functools
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def import_graph(package: Path) -> dict[str, set[str]]:
    modules: dict[str, Path] = {}
    for path in package.rglob("*.py"):
        name = ".".join(path.relative_to(package.parent).with_suffix("").parts)
        modules[name.removesuffix(".__init__")] = path
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            graph[name].update(t for t in targets if t in modules and t != name)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt) :], nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state:
            found = visit(start)
            if found:
                return found
    return None


def test_the_checker_finds_a_cycle(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from pkg.b import f\n")
    (pkg / "b.py").write_text("def f():\n    from pkg.a import g  # local import\n")
    assert find_cycle(import_graph(pkg)) == ["pkg.a", "pkg.b", "pkg.a"]


def test_rag_app_has_no_import_cycle() -> None:
    cycle = find_cycle(import_graph(ROOT / "rag_app"))
    assert cycle is None, " -> ".join(cycle or [])


def folder_of(module: str) -> str:
    """The node a module belongs to in the folder graph: its top-level subpackage
    (``rag_app.answer.locator`` -> ``rag_app.answer``) or, for a module directly in the package,
    itself (``rag_app.kb``); the package's ``__init__`` is ``rag_app``."""
    return ".".join(module.split(".")[:2])


def folder_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The module graph collapsed onto folders: an edge where a module of one folder imports a
    module of another (anywhere in it, a local import too)."""
    folders: dict[str, set[str]] = {folder_of(name): set() for name in graph}
    for name, targets in graph.items():
        folders[folder_of(name)].update(folder_of(t) for t in targets)
    for name, targets in folders.items():
        targets.discard(name)
    return folders


def test_the_checker_finds_a_folder_cycle(tmp_path: Path) -> None:
    """Two subpackages importing each other through different modules: no module cycle, but a
    folder one."""
    pkg = tmp_path / "pkg"
    for sub in ("a", "b"):
        (pkg / sub).mkdir(parents=True)
        (pkg / sub / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "a" / "one.py").write_text("from pkg.b.two import f\n")
    (pkg / "b" / "two.py").write_text("def f():\n    pass\n")
    (pkg / "b" / "three.py").write_text("def g():\n    from pkg.a.four import h  # local\n")
    (pkg / "a" / "four.py").write_text("def h():\n    pass\n")
    (pkg / "c.py").write_text("import pkg.a.one\n")
    graph = import_graph(pkg)
    assert find_cycle(graph) is None
    folders = folder_graph(graph)
    assert folders == {"pkg": set(), "pkg.a": {"pkg.b"}, "pkg.b": {"pkg.a"}, "pkg.c": {"pkg.a"}}
    assert find_cycle(folders) == ["pkg.a", "pkg.b", "pkg.a"]


def test_rag_app_has_no_folder_level_import_cycle() -> None:
    """The subpackages and top-level modules of rag_app import each other without a loop (the
    answer model's training, which closed one through kb, lives outside in training/)."""
    folders = folder_graph(import_graph(ROOT / "rag_app"))
    assert {"rag_app.answer", "rag_app.kb", "rag_app.engine"} <= folders.keys()
    cycle = find_cycle(folders)
    assert cycle is None, " -> ".join(cycle or [])


def test_training_has_no_import_cycle() -> None:
    cycle = find_cycle(import_graph(ROOT / "training"))
    assert cycle is None, " -> ".join(cycle or [])


# ----- settings and state: no benchmarks/training imports, environment read only by config ------
ENV_READERS = {"rag_app/config.py", "rag_app/faults.py"}  # RAG_ variables; faults: RAG_FAULT
ENV_WRITE_METHODS = {"setdefault", "update", "pop", "popitem", "clear", "__setitem__"}


@functools.cache
def rag_modules() -> dict[str, ast.Module]:
    """Each module of rag_app (its path from the repository root) and its syntax tree."""
    return {
        path.relative_to(ROOT).as_posix(): ast.parse(path.read_text(encoding="utf-8"))
        for path in sorted((ROOT / "rag_app").rglob("*.py"))
    }


def _call_name(func: ast.expr) -> str:
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""


def _is_environ(node: ast.expr) -> bool:
    """``os.environ`` or a bare ``environ`` (``from os import environ``)."""
    return _call_name(node) == "environ"


OUTSIDE = ("benchmarks", "training")  # beside the package, never imported by it


def imports_outside(tree: ast.Module) -> bool:
    """Whether the module imports ``benchmarks`` or ``training`` anywhere (also inside
    functions), by an import statement or ``importlib.import_module`` / ``__import__`` with a
    literal name."""
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        elif isinstance(node, ast.Call) and _call_name(node.func) in (
            "import_module",
            "__import__",
        ):
            names = [str(a.value) for a in node.args[:1] if isinstance(a, ast.Constant)]
        if any(n.split(".")[0] in OUTSIDE for n in names):
            return True
    return False


def _string_constants(tree: ast.Module) -> dict[str, str]:
    """Module-level ``NAME = "text"`` assignments (a variable name used as an environment key)."""
    found: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
            for target in node.targets:
                if isinstance(target, ast.Name) and isinstance(node.value.value, str):
                    found[target.id] = node.value.value
    return found


def _key_text(node: ast.expr, constants: dict[str, str]) -> str:
    """The text (or leading text) of an environment key: a literal, a module constant, an
    f-string's or a concatenation's first part; '' when unknown."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name):
        return constants.get(node.id, "")
    if isinstance(node, ast.JoinedStr) and node.values:
        return _key_text(node.values[0], constants)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _key_text(node.left, constants)
    return ""


def env_keys_read(tree: ast.Module) -> set[str]:
    """The keys the module reads from the environment: ``os.environ[k]``, ``os.environ.get(k)``
    (and the other dict methods taking a key), ``os.getenv(k)``, ``k in os.environ``."""
    constants = _string_constants(tree)
    keys: list[ast.expr] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and _is_environ(node.value):
            keys.append(node.slice)
        elif isinstance(node, ast.Call) and node.args:
            func = node.func
            if _call_name(func) == "getenv" or (
                isinstance(func, ast.Attribute) and _is_environ(func.value)
            ):
                keys.append(node.args[0])
        elif isinstance(node, ast.Compare) and any(_is_environ(c) for c in node.comparators):
            keys.append(node.left)
    return {_key_text(key, constants) for key in keys}


def defines_settings(tree: ast.Module) -> bool:
    """Whether the module defines a pydantic-settings class (which reads the environment)."""
    return any(
        isinstance(node, ast.ClassDef) and any(_call_name(b) == "BaseSettings" for b in node.bases)
        for node in ast.walk(tree)
    )


def _import_time_nodes(body: list[ast.stmt]) -> list[ast.AST]:
    """Every node that runs when the module is imported: module and class bodies, including
    their ``if``/``for``/``with``/``try`` blocks, and functions' decorators and defaults, but not
    function bodies or lambdas."""
    found: list[ast.AST] = []
    pending: list[ast.AST] = list(body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            pending.extend([*node.decorator_list, *node.args.defaults])  # run at definition
            continue
        if isinstance(node, ast.Lambda):
            continue
        found.append(node)
        pending.extend(ast.iter_child_nodes(node))
    return found


def _writes_environ(node: ast.AST) -> bool:
    """Assigning or deleting an ``os.environ`` item, calling one of its writing methods, or
    ``os.putenv`` / ``os.unsetenv``."""
    if isinstance(node, ast.Subscript):
        return _is_environ(node.value) and isinstance(node.ctx, ast.Store | ast.Del)
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    if isinstance(func, ast.Attribute) and _is_environ(func.value):
        return func.attr in ENV_WRITE_METHODS
    return _call_name(func) in ("putenv", "unsetenv")


def writes_environ_at_import(tree: ast.Module) -> bool:
    """Whether a statement run at import writes the environment."""
    return any(_writes_environ(node) for node in _import_time_nodes(list(tree.body)))


def test_the_checkers_find_what_they_look_for() -> None:
    sample = ast.parse(
        '"""Set RAG_X or os.environ["RAG_Y"] (a docstring: not code)."""\n'
        "import os\n"
        "from os import environ\n"
        'KEY = "RAG_KB_DIR"\n'
        "# os.getenv('RAG_COMMENT')\n"
        "def f():\n"
        '    os.environ["HF_HUB_OFFLINE"] = "1"  # a write in a function: at call time\n'
        "    import benchmarks.tools\n"
        '    return os.getenv("RAG_A"), environ.get(KEY), os.environ[f"RAG_{1}"], "RAG_B" in environ\n'
    )
    assert env_keys_read(sample) == {"HF_HUB_OFFLINE", "RAG_A", "RAG_KB_DIR", "RAG_", "RAG_B"}
    assert imports_outside(sample)
    assert not writes_environ_at_import(sample)
    for line in (
        'os.environ["A"] = "1"',
        'os.environ.setdefault("A", "1")',
        'for k in ("A",):\n    os.environ.pop(k, None)',
        'class C:\n    os.putenv("A", "1")',
        'if True:\n    del os.environ["A"]',
    ):
        assert writes_environ_at_import(ast.parse("import os\n" + line)), line
    assert not imports_outside(ast.parse("from rag_app import benchmarks_shared\n"))
    assert not imports_outside(ast.parse("from rag_app.answer import training_data\n"))
    for line in ("import training", "from training.answer_fit import fit",
                 "def f():\n    from training import dev_data",
                 "importlib.import_module('training.reader')"):  # fmt: skip
        assert imports_outside(ast.parse(line)), line
    assert defines_settings(ast.parse("class S(pydantic_settings.BaseSettings):\n    x: int\n"))


def test_rag_app_imports_neither_benchmarks_nor_training() -> None:
    offenders = [name for name, tree in rag_modules().items() if imports_outside(tree)]
    assert offenders == [], offenders


def test_rag_app_holds_no_training_code() -> None:
    """Training is a developer's tool outside the runtime package (training/), and the wheel
    ships rag_app and pipelines only."""
    assert (ROOT / "training" / "__main__.py").is_file()
    assert not list((ROOT / "rag_app").rglob("training"))
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    shipped = pyproject["tool"]["setuptools"]["packages"]["find"]["include"]
    assert not any(fnmatch.fnmatch(name, p) for p in shipped for name in OUTSIDE), shipped


def test_only_config_reads_rag_environment_variables() -> None:
    """Settings (rag_app/config.py) reads the RAG_ variables; faults.py reads RAG_FAULT."""
    reads = {name: env_keys_read(tree) for name, tree in rag_modules().items()}
    offenders = {
        name: sorted(key for key in keys if key.startswith("RAG_"))
        for name, keys in reads.items()
        if name not in ENV_READERS and any(key.startswith("RAG_") for key in keys)
    }
    assert offenders == {}
    settings = [name for name, tree in rag_modules().items() if defines_settings(tree)]
    assert settings == ["rag_app/config.py"]


def test_no_module_writes_the_environment_at_import() -> None:
    offenders = [name for name, tree in rag_modules().items() if writes_environ_at_import(tree)]
    assert offenders == [], offenders


def reaches_into_the_ledger(tree: ast.Module) -> bool:
    """Whether code takes ``.ledger`` of a knowledge base (``kb.ledger``, ``self.kb.ledger``,
    ``state.kb.ledger``, ``base.ledger``) instead of asking the facade."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == "ledger":
            owner = node.value
            name = owner.attr if isinstance(owner, ast.Attribute) else getattr(owner, "id", "")
            if name in ("kb", "base"):
                return True
    return False


def test_the_service_and_the_cli_ask_the_facade_not_its_ledger() -> None:
    """The ledger is the KnowledgeBase's own: find by hash, mark failed, keys, the job queue
    and prewarming are its methods (issue: one path from the facade to the engine)."""
    assert reaches_into_the_ledger(ast.parse("def f(state):\n    return state.kb.ledger.x\n"))
    assert not reaches_into_the_ledger(
        ast.parse("def f(kb):\n    return kb.documents.with_hash(1)\n")
    )
    offenders = [
        name
        for name, tree in rag_modules().items()
        if name.startswith(("rag_app/service/", "rag_app/cli/")) and reaches_into_the_ledger(tree)
    ]
    assert offenders == [], offenders


def test_the_text_package_is_a_leaf() -> None:
    """rag_app/text (tokenizer, numerals) imports nothing of rag_app outside itself, so every
    layer can use it without one package sitting above another."""
    graph = import_graph(ROOT / "rag_app")
    outside = {
        name: sorted(t for t in targets if not t.startswith("rag_app.text"))
        for name, targets in graph.items()
        if name.startswith("rag_app.text")
    }
    assert graph.get("rag_app.text.tokenizer") is not None
    assert all(not targets for targets in outside.values()), outside
