"""Refuse torch.library registrations whose op name is not namespaced per build.

Each build of a kernel registers its ops in its own namespace (`_ops.OPS_NAME`), so that
two builds (or two kernels) can be loaded side by side. A Python op registered under a
literal name (`@torch.library.custom_op("myns::op", ...)`) clashes with any other build
that does the same, and breaks when called. Such an op must get its name from
`add_op_namespace_prefix("op")` (exported by the kernel's `_ops` module).

Usage: python ops_check.py DIRECTORY — checks every `*.py` under DIRECTORY; exits 1 and
prints one located line per registration otherwise. The same rule as the anchor's
(huggingface/kernels) torch-ops-check; this implementation is nixgen's own.
"""

import ast
import sys
from pathlib import Path

#: torch.library functions whose first argument names the op they register.
REGISTERING = {
    "custom_op",
    "triton_op",
    "register_kernel",
    "register_fake",
    "register_vmap",
    "register_torch_dispatch",
}


def _called_name(node: ast.AST) -> str | None:
    """`f` for `f(...)` and `a.b.f(...)`; None for anything else."""
    if not isinstance(node, ast.Call):
        return None
    func = node.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def problems(path: Path, text: str) -> list[tuple[int, str]]:
    """`(line, description)` of each decorator that registers an op by a literal name."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(text, filename=str(path))):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for decorator in node.decorator_list:
            if not isinstance(decorator, ast.Call):
                continue
            name = _called_name(decorator)
            if name not in REGISTERING or not decorator.args:
                continue
            first = decorator.args[0]
            if _called_name(first) == "add_op_namespace_prefix":
                continue
            what = ast.get_source_segment(text, first) or "its first argument"
            found.append((decorator.lineno, f"@{name}({what}, ...) on `{node.name}`"))
    return found


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: ops_check.py DIRECTORY", file=sys.stderr)
        return 2
    root = Path(argv[1])
    bad: list[str] = []
    for path in sorted(root.rglob("*.py")):
        try:
            text = path.read_text(encoding="utf-8")
            found = problems(path, text)
        except (SyntaxError, UnicodeDecodeError) as exc:
            print(f"nixgen: {path}: cannot check op registrations: {exc}", file=sys.stderr)
            return 1
        bad += [f"  {path}:{line}: {what}" for line, what in found]
    if bad:
        print(
            "nixgen: torch ops registered without `add_op_namespace_prefix` (each build needs "
            "its own op namespace, so a literal name clashes with other builds and breaks "
            "when called):",
            file=sys.stderr,
        )
        print("\n".join(bad), file=sys.stderr)
        print(
            "  fix: `from ._ops import add_op_namespace_prefix` and register as "
            '`@torch.library.custom_op(add_op_namespace_prefix("name"), ...)`',
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
