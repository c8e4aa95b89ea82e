"""The import graph of ``benchmarks/`` and its rules (run by ``tests/test_benchmark_layout.py``).

Rules: every script sits in a purpose folder (``papers/``, ``peers/``, ``product/``, ``studies/``);
a script imports nothing of ``benchmarks/`` but ``_lib``; only ``_lib`` imports package internals
(a private ``sklearn_struct`` module or a private name); no import circle. Function-local imports
count as well as top-level ones.

    python benchmarks/_lib/check_imports.py          # print the edges, exit 1 on a broken rule
"""
import ast
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[1]
PURPOSES = ("papers", "peers", "product", "studies")


def modules(root=BENCHMARKS):
    """``{dotted name: path}`` of every Python file under ``root`` (scripts as ``papers.bench_x``)."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        if rel.parts[0] == "results" or any(part.startswith(".") for part in rel.parts):
            continue
        parts = list(rel.with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def is_script(name):
    """A runnable script: a file outside ``_lib`` (flat ones included, so they are reported)."""
    return not name.startswith("_lib")


def _resolve(name, level, package, known):
    """The module of benchmarks/ that an import of ``name`` (``level`` dots) from ``package`` means, or None."""
    if level:
        base = package.split(".")[: len(package.split(".")) - level + 1] if package else []
        name = ".".join(base + ([name] if name else []))
    if name in known:
        return name
    for other in known:  # ``import bench_x`` run from inside its folder: the script of that name anywhere
        if other.split(".")[-1] == name and is_script(other):
            return other
    return None


def _internal(module, names):
    parts = module.split(".")
    return parts[0] == "sklearn_struct" and (any(p.startswith("_") for p in parts)
                                              or any(n.startswith("_") for n in names))


def imports(name, path, known):
    """``(edges, internals)``: the benchmarks modules ``name`` imports, and its imports of package internals."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    edges, internals = set(), []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            for alias in node.names:
                target = _resolve(alias.name, 0, package, known)
                if target:
                    edges.add(target)
                if _internal(alias.name, []):
                    internals.append(alias.name)
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            names = [alias.name for alias in node.names]
            if node.level == 0 and _internal(module, names):
                internals.append(f"{module}: {', '.join(names)}")
            base = _resolve(module, node.level, package, known)
            for alias in node.names:  # ``from _lib import gp_struct``: the submodule
                sub = _resolve(f"{module}.{alias.name}" if module else alias.name, node.level, package, known)
                if sub and sub != name:
                    edges.add(sub)
                elif base and base != name:
                    edges.add(base)
    return edges, internals


def graph(root=BENCHMARKS):
    known = modules(root)
    edges, internals = {}, {}
    for name, path in known.items():
        edges[name], internals[name] = imports(name, path, known)
    return edges, internals


def cycles(edges):
    """Every import circle, as a list of modules (empty when there is none)."""
    found, state = [], {}

    def visit(node, stack):
        state[node] = "open"
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == "open":
                found.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, stack + [nxt])
        state[node] = "done"

    for node in sorted(edges):
        if node not in state:
            visit(node, [node])
    return found


def problems(root=BENCHMARKS):
    """Every broken rule, as readable lines (empty when the layout is clean)."""
    edges, internals = graph(root)
    out = []
    for name in sorted(edges):
        if is_script(name) and name.split(".")[0] not in PURPOSES:
            out.append(f"{name}: a script outside {', '.join(PURPOSES)}")
        for target in sorted(edges[name]):
            if is_script(name) and not target.startswith("_lib"):
                out.append(f"{name} imports {target}: scripts import _lib only")
            if target.startswith("_lib") is False and not is_script(name):
                out.append(f"{name} imports the script {target}")
        if is_script(name):
            out += [f"{name} imports package internals ({what}): only _lib may" for what in internals[name]]
    out += ["import circle: " + " -> ".join(circle) for circle in cycles(edges)]
    return out


def main():
    edges, _ = graph()
    for name in sorted(edges):
        for target in sorted(edges[name]):
            print(f"{name} -> {target}")
    bad = problems()
    print("\n".join(bad) if bad else "no circle, no script-to-script import, internals only in _lib")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
