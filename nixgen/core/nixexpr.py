"""A small, closed subset of the Nix language, read and evaluated in Python: what a
kernel-builder flake writes in the arguments of `genKernelFlakeOutputs` (functions over
the build-configuration table, lists of Python packages) and in its `inputs`.

Nothing here runs Nix, reads a file or reaches the network: the text is tokenised, parsed
into expressions and evaluated by this module's own rules, with a step budget and a depth
bound. The subset is what such flakes use: functions (`x: …`, `{ a, b ? 1, ... }: …`),
`let … in`, `with`, `if … then … else`, the operators (`//`, `?`, `||`, `&&`, `!`, `==`,
`!=`, `<`, `<=`, `>`, `>=`, `++`, `+`, `-`), selection with `or`, lists, attribute sets
(with `inherit`), strings without interpolation, integers, `true`, `false`, `null`, and a
few `builtins` (`map`, `filter`, `compareVersions`, `elem`, `any`, `all`, `length`,
`attrNames`, `hasAttr`, `removeAttrs`, `concatLists`, `isFunction`, …). Anything else (an
interpolation, an indented string, `rec`, `import`, a path used as a value) raises
`Unsupported`, naming the construct and its line: the caller then says it cannot read
the flake, instead of guessing.

Evaluation is lazy where Nix's is (bindings, list items, attribute values, `&&`, `||`,
`if`, `or`), so an unused part that the subset cannot evaluate does no harm.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

#: At most this many evaluation steps, this nesting depth of the text, and this depth
#: of evaluation (each well inside Python's own recursion limit).
MAX_STEPS = 500_000
MAX_DEPTH = 30
MAX_EVAL_DEPTH = 150

_TOKEN = re.compile(
    r"""(?P<space>\s+)
      |(?P<comment>\#[^\n]*|/\*.*?\*/)
      |(?P<string>"(?:[^"\\$]|\\.|\$(?!\{))*")
      |(?P<quote>")
      |(?P<indented>'')
      |(?P<path>(?:\.{1,2}|~)?(?:/[A-Za-z0-9._+-]+)+/?|\.{1,2}/)
      |(?P<number>[0-9]+(?![A-Za-z_]))
      |(?P<name>[A-Za-z_][A-Za-z0-9_'-]*)
      |(?P<punct>\.\.\.|//|\|\||&&|==|!=|<=|>=|->|\+\+|[{}\[\]();:,.=?!<>+\-*/@])
      |(?P<other>\S)""",
    re.VERBOSE | re.DOTALL,
)

KEYWORDS = frozenset(("if", "then", "else", "let", "in", "with", "assert", "rec", "inherit", "or"))


class Unsupported(Exception):
    """The text uses something outside the subset, or evaluating it failed; the message
    says what and where (``line N``)."""


@attrs.frozen
class Token:
    kind: str
    text: str
    line: int


def tokens(text: str) -> list[Token]:
    """The tokens of `text` (comments and whitespace dropped); a character no token
    starts with is a token of kind ``other``, which no rule accepts. A string with an
    interpolation (``"a${b}"``) and an indented string (two single quotes around it) are
    one token each (kinds ``interpolated`` and ``indented``), which no rule accepts
    either, so that what follows them is read as it is."""
    out: list[Token] = []
    at, line = 0, 1
    while at < len(text):
        match = _TOKEN.match(text, at)
        assert match is not None  # `other` matches any character left
        kind = match.lastgroup or "other"
        end = match.end()
        if kind == "quote":
            kind, end = "interpolated", _string_end(text, at + 1, _QUOTE)
        elif kind == "indented":
            end = _string_end(text, at + 2, _TWO_QUOTES)
        if kind not in ("space", "comment"):
            out.append(Token(kind, text[at:end], line))
        line += text.count("\n", at, end)
        at = end
    return out


_QUOTE = '"'
_TWO_QUOTES = "'" * 2
#: What an indented string escapes with its closing quotes: the quotes, `$` and `\`.
_INDENTED_ESCAPES = ("'" * 3, _TWO_QUOTES + "$", _TWO_QUOTES + "\\")


def _string_end(text: str, at: int, close: str) -> int:
    """The index after the string that ends with `close` from `at` on, across
    interpolations (``${ … }``, with braces and strings nested in them); the end of
    `text` when it does not end."""
    depth = 0
    while at < len(text):
        if depth == 0:
            if close == _QUOTE and text[at] == "\\":
                at += 2
            elif close == _TWO_QUOTES and text.startswith(_INDENTED_ESCAPES, at):
                at += 3
            elif text.startswith(close, at):
                return at + len(close)
            elif text.startswith("${", at):
                depth, at = 1, at + 2
            else:
                at += 1
            continue
        if text[at] == "{":
            depth += 1
        elif text[at] == "}":
            depth -= 1
        elif text[at] == _QUOTE:
            at = _string_end(text, at + 1, _QUOTE)
            continue
        elif text.startswith(_TWO_QUOTES, at):
            at = _string_end(text, at + 2, _TWO_QUOTES)
            continue
        at += 1
    return len(text)


# ---------------------------------------------------------------------- expressions


@attrs.frozen
class Expr:
    """One node: `op` names it, `args` are its parts, `line` where it starts."""

    op: str
    args: tuple[Any, ...]
    line: int


def parse(text: str) -> Expr:
    """The expression `text` holds (all of it); `Unsupported` otherwise."""
    parser = Parser(tokens(text))
    expr = parser.expr()
    if parser.peek() is not None:
        raise parser.unexpected("the end")
    return expr


class Parser:
    """Recursive descent over `tokens`, by Nix's operator precedence; `at` is the index of
    the next token (callers may parse one expression from the middle of a token list)."""

    def __init__(self, items: Sequence[Token], at: int = 0):
        self.items, self.at, self.depth = items, at, 0

    def peek(self, ahead: int = 0) -> Token | None:
        at = self.at + ahead
        return self.items[at] if at < len(self.items) else None

    def text(self, ahead: int = 0) -> str | None:
        token = self.peek(ahead)
        return token.text if token is not None else None

    def line(self) -> int:
        token = self.peek() or (self.items[-1] if self.items else None)
        return token.line if token is not None else 1

    def unexpected(self, wanted: str) -> Unsupported:
        token = self.peek()
        if token is None:
            return Unsupported(f"line {self.line()}: expected {wanted}, found the end")
        if token.kind == "indented":
            return Unsupported(f"line {token.line}: an indented string ('' … '')")
        if token.kind == "interpolated":
            return Unsupported(f"line {token.line}: a string with an interpolation (${{…}})")
        return Unsupported(f"line {token.line}: expected {wanted}, found `{token.text}`")

    def punct(self, *texts: str) -> bool:
        """Whether the next token is the operator or bracket `texts` names."""
        token = self.peek()
        return token is not None and token.kind == "punct" and token.text in texts

    def keyword(self, word: str) -> bool:
        token = self.peek()
        return token is not None and token.kind == "name" and token.text == word

    def take(self, *expected: str) -> Token:
        token = self.peek()
        if token is None or token.text not in expected or token.kind in ("string", "path"):
            raise self.unexpected(" or ".join(f"`{e}`" for e in expected))
        self.at += 1
        return token

    def name(self) -> Token:
        token = self.peek()
        if token is None or token.kind != "name" or token.text in KEYWORDS:
            raise self.unexpected("a name")
        self.at += 1
        return token

    # -- precedence levels, lowest first

    def expr(self) -> Expr:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise Unsupported(f"line {self.line()}: nested deeper than {MAX_DEPTH}")
        try:
            return self._expr()
        finally:
            self.depth -= 1

    def _expr(self) -> Expr:
        token = self.peek()
        if token is None:
            raise self.unexpected("an expression")
        line = token.line
        if token.kind == "name" and token.text not in KEYWORDS and self.text(1) == ":":
            self.at += 2
            return Expr("lambda", (token.text, None, self.expr()), line)
        if token.kind == "name" and token.text not in KEYWORDS and self.text(1) == "@":
            self.at += 2
            formals = self._formals()
            return Expr("lambda", (token.text, formals, self.expr()), line)
        if token.text == "{" and self._is_formals():
            formals = self._formals()
            alias = None
            if self.text() == "@":
                self.at += 1
                alias = self.name().text
            return Expr("lambda", (alias, formals, self.expr()), line)
        if token.kind == "name" and token.text == "let":
            self.at += 1
            if self.text() == "{":
                raise Unsupported(f"line {line}: `let {{ … }}`")
            binds = self._binds("in")
            self.take("in")
            return Expr("let", (binds, self.expr()), line)
        if token.kind == "name" and token.text == "with":
            self.at += 1
            scope = self.expr()
            self.take(";")
            return Expr("with", (scope, self.expr()), line)
        if token.kind == "name" and token.text == "if":
            self.at += 1
            cond = self.expr()
            self.take("then")
            yes = self.expr()
            self.take("else")
            return Expr("if", (cond, yes, self.expr()), line)
        if token.kind == "name" and token.text in ("assert", "rec"):
            raise Unsupported(f"line {line}: `{token.text}`")
        return self._implication()

    def _is_formals(self) -> bool:
        """Whether the `{` here opens a function's formals (`{ a, b ? 1, ... }:`)."""
        at, depth = self.at, 0
        while at < len(self.items):
            text = self.items[at].text if self.items[at].kind == "punct" else None
            if text in ("{", "[", "("):
                depth += 1
            elif text in ("}", "]", ")"):
                depth -= 1
                if depth == 0:
                    following = self.items[at + 1].text if at + 1 < len(self.items) else None
                    return following in (":", "@")
            elif depth == 1 and text in ("=", ";"):
                return False
            at += 1
        return False

    def _formals(self) -> tuple[tuple[tuple[str, Expr | None], ...], bool]:
        self.take("{")
        names: list[tuple[str, Expr | None]] = []
        ellipsis = False
        while self.text() != "}":
            if self.text() == "...":
                self.at += 1
                ellipsis = True
            else:
                name = self.name().text
                default = None
                if self.text() == "?":
                    self.at += 1
                    default = self.expr()
                names.append((name, default))
            if self.text() == ",":
                self.at += 1
            elif self.text() != "}":
                raise self.unexpected("`,` or `}`")
        self.take("}")
        if self.text() == ":":
            self.at += 1
        return tuple(names), ellipsis

    def _binary(
        self, ops: Sequence[str], below: Callable[[], Expr], *, right: bool = False
    ) -> Expr:
        """Operands of `below` joined by the operators `ops`, left-associative (or right,
        folded after reading them all: no recursion per operator)."""
        operands = [below()]
        joins: list[Token] = []
        while self.punct(*ops):
            joins.append(self.take(*ops))
            operands.append(below())
        if right:
            expr = operands[-1]
            for op, left in zip(reversed(joins), reversed(operands[:-1]), strict=True):
                expr = Expr(op.text, (left, expr), op.line)
            return expr
        expr = operands[0]
        for op, operand in zip(joins, operands[1:], strict=True):
            expr = Expr(op.text, (expr, operand), op.line)
        return expr

    def _implication(self) -> Expr:
        return self._binary(("->",), self._or, right=True)

    def _or(self) -> Expr:
        return self._binary(("||",), self._and)

    def _and(self) -> Expr:
        return self._binary(("&&",), self._equality)

    def _equality(self) -> Expr:
        return self._binary(("==", "!="), self._comparison)

    def _comparison(self) -> Expr:
        return self._binary(("<", "<=", ">", ">="), self._update)

    def _update(self) -> Expr:
        return self._binary(("//",), self._not, right=True)

    def _not(self) -> Expr:
        lines = []
        while self.punct("!"):
            lines.append(self.take("!").line)
        expr = self._sum()
        for line in reversed(lines):
            expr = Expr("!", (expr,), line)
        return expr

    def _sum(self) -> Expr:
        return self._binary(("+", "-"), self._product)

    def _product(self) -> Expr:
        return self._binary(("*", "/"), self._concat)

    def _concat(self) -> Expr:
        return self._binary(("++",), self._has, right=True)

    def _has(self) -> Expr:
        left = self._negate()
        while self.punct("?"):
            token = self.take("?")
            left = Expr("?", (left, self._attrpath()), token.line)
        return left

    def _negate(self) -> Expr:
        lines = []
        while self.punct("-"):
            lines.append(self.take("-").line)
        expr = self._application()
        for line in reversed(lines):
            expr = Expr("neg", (expr,), line)
        return expr

    def _starts_operand(self) -> bool:
        token = self.peek()
        if token is None:
            return False
        if token.kind == "name":
            return token.text not in KEYWORDS or token.text in ("let", "rec")
        if token.kind in ("string", "number", "path", "indented", "interpolated"):
            return True
        return token.kind == "punct" and token.text in ("(", "[", "{")

    def _application(self) -> Expr:
        function = self._select()
        while self._starts_operand():
            if self.text() in ("let", "rec"):
                raise Unsupported(f"line {self.line()}: `{self.text()}` as an argument")
            function = Expr("apply", (function, self._select()), function.line)
        return function

    def _select(self) -> Expr:
        value = self._primary()
        if self.punct("."):
            self.at += 1
            path = self._attrpath()
            default = None
            if self.keyword("or"):
                self.at += 1
                default = self._select()
            return Expr("select", (value, path, default), value.line)
        return value

    def _attrpath(self) -> tuple[str, ...]:
        parts = [self._attrname()]
        while self.punct("."):
            self.at += 1
            parts.append(self._attrname())
        return tuple(parts)

    def _attrname(self) -> str:
        token = self.peek()
        if token is not None and token.kind == "string":
            self.at += 1
            return string_value(token)
        if token is not None and token.kind == "name":
            self.at += 1
            return token.text
        raise self.unexpected("an attribute name")

    def _primary(self) -> Expr:
        self.depth += 1
        if self.depth > 2 * MAX_DEPTH:
            raise Unsupported(f"line {self.line()}: nested deeper than {MAX_DEPTH}")
        try:
            return self._primary_here()
        finally:
            self.depth -= 1

    def _primary_here(self) -> Expr:
        token = self.peek()
        if token is None:
            raise self.unexpected("an expression")
        line = token.line
        if token.kind == "number":
            self.at += 1
            return Expr("const", (int(token.text),), line)
        if token.kind == "string":
            self.at += 1
            return Expr("const", (string_value(token),), line)
        if token.kind == "path":
            self.at += 1
            return Expr("path", (token.text,), line)
        if token.kind == "name":
            if token.text in KEYWORDS:
                raise Unsupported(f"line {line}: `{token.text}` here")
            self.at += 1
            return Expr("var", (token.text,), line)
        if token.kind == "punct" and token.text == "(":
            self.at += 1
            inner = self.expr()
            self.take(")")
            return inner
        if token.kind == "punct" and token.text == "[":
            self.at += 1
            items = []
            while self.text() != "]":
                if self.peek() is None:
                    raise self.unexpected("`]`")
                items.append(self._select())
            self.take("]")
            return Expr("list", tuple(items), line)
        if token.kind == "punct" and token.text == "{":
            self.at += 1
            binds = self._binds("}")
            self.take("}")
            return Expr("set", (binds,), line)
        raise self.unexpected("an expression")

    def _binds(self, end: str) -> tuple[tuple[Any, ...], ...]:
        """`a.b = e;` and `inherit [(e)] a b;` up to `end`: ``("bind", path, expr)`` and
        ``("inherit", source-or-None, names)``."""
        out: list[tuple[Any, ...]] = []
        while self.text() != end:
            if self.peek() is None:
                raise self.unexpected(f"`{end}`")
            if self.keyword("inherit"):
                self.at += 1
                source = None
                if self.text() == "(":
                    self.at += 1
                    source = self.expr()
                    self.take(")")
                names = []
                while self.text() != ";":
                    names.append(self._attrname())
                self.take(";")
                out.append(("inherit", source, tuple(names)))
                continue
            path = self._attrpath()
            self.take("=")
            value = self.expr()
            self.take(";")
            out.append(("bind", path, value))
        return tuple(out)


def string_value(token: Token) -> str:
    """The value of a string token (its escapes: `\\n`, `\\t`, `\\r`, and any other
    character taken as it is)."""
    body, out, at = token.text[1:-1], [], 0
    while at < len(body):
        char = body[at]
        if char == "\\" and at + 1 < len(body):
            out.append({"n": "\n", "t": "\t", "r": "\r"}.get(body[at + 1], body[at + 1]))
            at += 2
        else:
            out.append(char)
            at += 1
    return "".join(out)


# ---------------------------------------------------------------------- values


@attrs.frozen(eq=False)
class Lambda:
    param: str | None
    formals: tuple[tuple[tuple[str, Expr | None], ...], bool] | None
    body: Expr
    env: Env


@attrs.frozen
class Builtin:
    name: str
    arity: int
    fn: Callable[..., Any]
    args: tuple[Any, ...] = ()


@attrs.frozen
class Opaque:
    """A value this module does not know but can name: a package of a package set."""

    name: str


@attrs.frozen(eq=False)
class PackageSet:
    """A package set (`ps` of `pythonCheckInputs`): every attribute is `Opaque(name)`."""

    name: str = "ps"


class Thunk:
    __slots__ = ("env", "expr", "value")

    def __init__(self, expr: Expr | None, env: Env | None, value: Any = None):
        self.expr, self.env, self.value = expr, env, value


def ready(value: Any) -> Thunk:
    return Thunk(None, None, value)


class Env:
    """A lexical scope (`names`), its parent, and the `with` scopes around it."""

    __slots__ = ("names", "parent", "withs")

    def __init__(self, names: dict[str, Thunk], parent: Env | None, withs: tuple[Thunk, ...]):
        self.names, self.parent, self.withs = names, parent, withs


def _type(value: Any) -> str:
    if isinstance(value, bool):
        return "a Boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, str):
        return "a string"
    if value is None:
        return "null"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a set"
    if isinstance(value, (Lambda, Builtin)):
        return "a function"
    if isinstance(value, PackageSet):
        return "a package set"
    return "a package"


class Evaluator:
    """Evaluates expressions of the subset; one instance per evaluation (its step budget)."""

    def __init__(self, globals_: Mapping[str, Any] | None = None):
        self.steps, self.depth = 0, 0
        names = {name: ready(value) for name, value in _globals(self).items()}
        names.update({name: ready(value) for name, value in (globals_ or {}).items()})
        self.base = Env(names, None, ())

    def error(self, line: int, message: str) -> Unsupported:
        return Unsupported(f"line {line}: {message}")

    def force(self, thunk: Thunk) -> Any:
        if thunk.expr is not None:
            expr, env = thunk.expr, thunk.env
            thunk.expr = None  # a cycle (infinite recursion) then reads None: refused below
            thunk.value = _BLACKHOLE
            assert env is not None
            thunk.value = self.eval(expr, env)
            thunk.env = None
        if thunk.value is _BLACKHOLE:
            raise Unsupported("infinite recursion")
        return thunk.value

    def deep(self, value: Any) -> Any:
        """`value` with every list item and attribute value forced."""
        if isinstance(value, list):
            return [self.deep(self.force(t)) for t in value]
        if isinstance(value, dict):
            return {k: self.deep(self.force(t)) for k, t in value.items()}
        return value

    def eval(self, expr: Expr, env: Env) -> Any:
        self.steps += 1
        if self.steps > MAX_STEPS:
            raise self.error(expr.line, f"more than {MAX_STEPS} evaluation steps")
        self.depth += 1
        if self.depth > MAX_EVAL_DEPTH:
            self.depth = 0
            raise self.error(expr.line, "evaluation nested too deep")
        try:
            return getattr(self, "_" + _OPS.get(expr.op, expr.op))(expr, env)
        finally:
            self.depth -= 1

    def thunk(self, expr: Expr, env: Env) -> Thunk:
        if expr.op == "const":
            return ready(expr.args[0])
        return Thunk(expr, env)

    # -- forms

    def _const(self, expr: Expr, env: Env) -> Any:
        return expr.args[0]

    def _path(self, expr: Expr, env: Env) -> Any:
        raise self.error(expr.line, f"a path ({expr.args[0]}) as a value")

    def _var(self, expr: Expr, env: Env) -> Any:
        name = expr.args[0]
        scope: Env | None = env
        while scope is not None:
            if name in scope.names:
                return self.force(scope.names[name])
            scope = scope.parent
        for with_ in env.withs:
            found = self.force(with_)
            if isinstance(found, PackageSet):
                return Opaque(name)
            if isinstance(found, dict) and name in found:
                return self.force(found[name])
        raise self.error(expr.line, f"undefined variable `{name}`")

    def _lambda(self, expr: Expr, env: Env) -> Any:
        param, formals, body = expr.args
        return Lambda(param, formals, body, env)

    def _list(self, expr: Expr, env: Env) -> Any:
        return [self.thunk(item, env) for item in expr.args]

    def _set(self, expr: Expr, env: Env) -> Any:
        return self._bindings(expr.args[0], env, env, expr.line)

    def _bindings(
        self, binds: Any, value_env: Env, inherit_env: Env, line: int
    ) -> dict[str, Thunk]:
        out: dict[str, Thunk] = {}
        for bind in binds:
            if bind[0] == "inherit":
                _, source, names = bind
                for name in names:
                    if name in out:
                        raise self.error(line, f"attribute `{name}` defined twice")
                    if source is None:
                        out[name] = self.thunk(Expr("var", (name,), line), inherit_env)
                    else:
                        picked = Expr("select", (source, (name,), None), line)
                        out[name] = self.thunk(picked, inherit_env)
                continue
            _, path, value = bind
            target = out
            for part in path[:-1]:
                existing = target.get(part)
                if existing is None:
                    nested: dict[str, Thunk] = {}
                    target[part] = ready(nested)
                    target = nested
                elif existing.expr is None and isinstance(existing.value, dict):
                    target = existing.value
                else:
                    raise self.error(value.line, f"attribute `{part}` defined twice")
            if path[-1] in target:
                raise self.error(value.line, f"attribute `{path[-1]}` defined twice")
            target[path[-1]] = self.thunk(value, value_env)
        return out

    def _let(self, expr: Expr, env: Env) -> Any:
        binds, body = expr.args
        names: dict[str, Thunk] = {}
        inner = Env(names, env, env.withs)
        found = self._bindings(binds, inner, inner, expr.line)
        names.update(found)
        return self.eval(body, inner)

    def _with(self, expr: Expr, env: Env) -> Any:
        scope, body = expr.args
        return self.eval(body, Env({}, env, (self.thunk(scope, env), *env.withs)))

    def _if(self, expr: Expr, env: Env) -> Any:
        cond = self.eval(expr.args[0], env)
        if not isinstance(cond, bool):
            raise self.error(expr.line, f"`if` on {_type(cond)}, not a Boolean")
        return self.eval(expr.args[1] if cond else expr.args[2], env)

    def _select(self, expr: Expr, env: Env) -> Any:
        value, path, default = expr.args
        current = self.eval(value, env)
        for part in path:
            if isinstance(current, PackageSet):
                current = Opaque(part)
                continue
            if isinstance(current, dict) and part in current:
                current = self.force(current[part])
                continue
            if default is not None:
                return self.eval(default, env)
            if isinstance(current, dict):
                raise self.error(expr.line, f"attribute `{part}` missing")
            raise self.error(expr.line, f"`.{part}` of {_type(current)}")
        return current

    def _has(self, expr: Expr, env: Env) -> Any:
        value, path = expr.args
        current = self.eval(value, env)
        for part in path:
            if isinstance(current, PackageSet):
                return True
            if not isinstance(current, dict) or part not in current:
                return False
            current = self.force(current[part])
        return True

    def _apply(self, expr: Expr, env: Env) -> Any:
        function = self.eval(expr.args[0], env)
        return self.call(function, self.thunk(expr.args[1], env), expr.line)

    def call(self, function: Any, argument: Thunk, line: int = 0) -> Any:
        if isinstance(function, Builtin):
            args = (*function.args, argument)
            if len(args) < function.arity:
                return attrs.evolve(function, args=args)
            return function.fn(*args, line=line)
        if isinstance(function, dict) and "__functor" in function:
            functor = self.call(self.force(function["__functor"]), ready(function), line)
            return self.call(functor, argument, line)
        if not isinstance(function, Lambda):
            raise self.error(line, f"calling {_type(self.deep(function))}, not a function")
        names: dict[str, Thunk] = {}
        inner = Env(names, function.env, function.env.withs)
        if function.param is not None:
            names[function.param] = argument
        if function.formals is not None:
            formals, ellipsis = function.formals
            given = self.force(argument)
            if not isinstance(given, dict):
                raise self.error(line, f"a function taking a set called with {_type(given)}")
            known = {name for name, _ in formals}
            extra = sorted(set(given) - known)
            if extra and not ellipsis:
                raise self.error(line, f"unexpected argument `{extra[0]}`")
            for name, default in formals:
                if name in given:
                    names[name] = given[name]
                elif default is not None:
                    names[name] = self.thunk(default, inner)
                else:
                    raise self.error(line, f"missing argument `{name}`")
        return self.eval(function.body, inner)

    # -- operators

    def _bool(self, expr: Expr, env: Env, at: int) -> bool:
        value = self.eval(expr.args[at], env)
        if not isinstance(value, bool):
            raise self.error(expr.line, f"`{expr.op}` on {_type(value)}, not a Boolean")
        return value

    def _or_(self, expr: Expr, env: Env) -> Any:
        return self._bool(expr, env, 0) or self._bool(expr, env, 1)

    def _and_(self, expr: Expr, env: Env) -> Any:
        return self._bool(expr, env, 0) and self._bool(expr, env, 1)

    def _implies(self, expr: Expr, env: Env) -> Any:
        return (not self._bool(expr, env, 0)) or self._bool(expr, env, 1)

    def _not(self, expr: Expr, env: Env) -> Any:
        return not self._bool(expr, env, 0)

    def _eq(self, expr: Expr, env: Env) -> Any:
        return self.equal(self.eval(expr.args[0], env), self.eval(expr.args[1], env))

    def _ne(self, expr: Expr, env: Env) -> Any:
        return not self.equal(self.eval(expr.args[0], env), self.eval(expr.args[1], env))

    def equal(self, left: Any, right: Any) -> bool:
        if isinstance(left, Thunk):
            left = self.force(left)
        if isinstance(right, Thunk):
            right = self.force(right)
        if isinstance(left, bool) or isinstance(right, bool):
            return type(left) is type(right) and left == right
        if isinstance(left, list) and isinstance(right, list):
            return len(left) == len(right) and all(map(self.equal, left, right))
        if isinstance(left, dict) and isinstance(right, dict):
            return left.keys() == right.keys() and all(self.equal(left[k], right[k]) for k in left)
        if isinstance(left, (Lambda, Builtin, PackageSet)) or isinstance(right, (Lambda, Builtin)):
            return False
        return bool(type(left) is type(right) and left == right)

    def _compare(self, expr: Expr, env: Env) -> Any:
        left, right = self.eval(expr.args[0], env), self.eval(expr.args[1], env)
        numbers = all(isinstance(v, int) and not isinstance(v, bool) for v in (left, right))
        if not numbers and not (isinstance(left, str) and isinstance(right, str)):
            raise self.error(expr.line, f"comparing {_type(left)} with {_type(right)}")
        if expr.op == "<":
            return bool(left < right)
        if expr.op == "<=":
            return bool(left <= right)
        if expr.op == ">":
            return bool(left > right)
        return bool(left >= right)

    def _update(self, expr: Expr, env: Env) -> Any:
        left, right = self.eval(expr.args[0], env), self.eval(expr.args[1], env)
        if not isinstance(left, dict) or not isinstance(right, dict):
            raise self.error(expr.line, f"`//` of {_type(left)} and {_type(right)}")
        return {**left, **right}

    def _concat(self, expr: Expr, env: Env) -> Any:
        left, right = self.eval(expr.args[0], env), self.eval(expr.args[1], env)
        if not isinstance(left, list) or not isinstance(right, list):
            raise self.error(expr.line, f"`++` of {_type(left)} and {_type(right)}")
        return left + right

    def _arith(self, expr: Expr, env: Env) -> Any:
        left, right = self.eval(expr.args[0], env), self.eval(expr.args[1], env)
        if expr.op == "+" and isinstance(left, str) and isinstance(right, str):
            return left + right
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in (left, right)):
            raise self.error(expr.line, f"`{expr.op}` of {_type(left)} and {_type(right)}")
        if expr.op == "/":
            if right == 0:
                raise self.error(expr.line, "division by zero")
            return int(left / right)
        return {"+": left + right, "-": left - right, "*": left * right}[expr.op]

    def _call(self, expr: Expr, env: Env) -> Any:
        """A call a builtin made lazily (`map`'s items): the function and its argument."""
        function, argument = expr.args
        return self.call(function, argument, expr.line)

    def _neg(self, expr: Expr, env: Env) -> Any:
        value = self.eval(expr.args[0], env)
        if not isinstance(value, int) or isinstance(value, bool):
            raise self.error(expr.line, f"negating {_type(value)}")
        return -value


_OPS = {
    "||": "or_",
    "&&": "and_",
    "->": "implies",
    "!": "not",
    "==": "eq",
    "!=": "ne",
    "<": "compare",
    "<=": "compare",
    ">": "compare",
    ">=": "compare",
    "//": "update",
    "++": "concat",
    "+": "arith",
    "-": "arith",
    "*": "arith",
    "/": "arith",
    "?": "has",
}

_BLACKHOLE = object()


# ---------------------------------------------------------------------- builtins


def compare_versions(left: str, right: str) -> int:
    """Nix's `builtins.compareVersions`: -1, 0 or 1 (components split at `.` and `-`,
    numbers compared as numbers, `pre` before anything, a number after a word)."""

    def components(version: str) -> list[str]:
        return re.findall(r"[0-9]+|[^0-9.\-]+", version)

    def less(a: str, b: str) -> bool:
        if a.isdigit() and b.isdigit():
            return int(a) < int(b)
        if a == "" and b.isdigit():
            return True
        if a == "pre" and b != "pre":
            return True
        if b == "pre":
            return False
        if b.isdigit():
            return True
        if a.isdigit():
            return False
        return a < b

    ones, twos = components(left), components(right)
    for index in range(max(len(ones), len(twos))):
        a = ones[index] if index < len(ones) else ""
        b = twos[index] if index < len(twos) else ""
        if less(a, b):
            return -1
        if less(b, a):
            return 1
    return 0


def _globals(ev: Evaluator) -> dict[str, Any]:
    def value(thunk: Thunk, what: type | tuple[type, ...], name: str, line: int) -> Any:
        found = ev.force(thunk)
        if not isinstance(found, what) or (isinstance(found, bool) and what is int):
            raise ev.error(line, f"`{name}` given {_type(found)}")
        return found

    def map_(f: Thunk, xs: Thunk, line: int) -> Any:
        function = ev.force(f)
        items = value(xs, list, "map", line)
        return [Thunk(Expr("call", (function, t), line), ev.base) for t in items]

    def filter_(f: Thunk, xs: Thunk, line: int) -> Any:
        function = ev.force(f)
        out = []
        for t in value(xs, list, "filter", line):
            keep = ev.call(function, t, line)
            if not isinstance(keep, bool):
                raise ev.error(line, f"`filter`'s function returned {_type(keep)}")
            if keep:
                out.append(t)
        return out

    def predicate(name: str, combine: Callable[[Any], bool]) -> Builtin:
        def run(f: Thunk, xs: Thunk, line: int) -> Any:
            function = ev.force(f)
            results = [ev.call(function, t, line) for t in value(xs, list, name, line)]
            if not all(isinstance(r, bool) for r in results):
                raise ev.error(line, f"`{name}`'s function returned a non-Boolean")
            return combine(results)

        return Builtin(name, 2, run)

    def compare(a: Thunk, b: Thunk, line: int) -> Any:
        return compare_versions(
            value(a, str, "compareVersions", line), value(b, str, "compareVersions", line)
        )

    def elem(x: Thunk, xs: Thunk, line: int) -> Any:
        return any(ev.equal(ev.force(x), t) for t in value(xs, list, "elem", line))

    def remove(s: Thunk, names: Thunk, line: int) -> Any:
        found = value(s, dict, "removeAttrs", line)
        drop = {ev.force(n) for n in value(names, list, "removeAttrs", line)}
        return {k: v for k, v in found.items() if k not in drop}

    def concat_lists(xss: Thunk, line: int) -> Any:
        outer = value(xss, list, "concatLists", line)
        return [t for xs in outer for t in value(xs, list, "concatLists", line)]

    def fail(name: str) -> Builtin:
        def run(message: Thunk, line: int) -> Any:
            raise ev.error(line, f"`{name}` called ({ev.deep(ev.force(message))!r})")

        return Builtin(name, 1, run)

    table: dict[str, Any] = {
        "map": Builtin("map", 2, map_),
        "filter": Builtin("filter", 2, filter_),
        "any": predicate("any", any),
        "all": predicate("all", all),
        "compareVersions": Builtin("compareVersions", 2, compare),
        "elem": Builtin("elem", 2, elem),
        "length": Builtin("length", 1, lambda xs, line: len(value(xs, list, "length", line))),
        "head": Builtin("head", 1, lambda xs, line: _head(ev, value(xs, list, "head", line), line)),
        "attrNames": Builtin(
            "attrNames",
            1,
            lambda s, line: [ready(k) for k in sorted(value(s, dict, "attrNames", line))],
        ),
        "hasAttr": Builtin(
            "hasAttr",
            2,
            lambda n, s, line: value(n, str, "hasAttr", line) in value(s, dict, "hasAttr", line),
        ),
        "removeAttrs": Builtin("removeAttrs", 2, remove),
        "concatLists": Builtin("concatLists", 1, concat_lists),
        "isFunction": Builtin(
            "isFunction", 1, lambda x, line: isinstance(ev.force(x), (Lambda, Builtin))
        ),
        "isString": Builtin("isString", 1, lambda x, line: isinstance(ev.force(x), str)),
        "isList": Builtin("isList", 1, lambda x, line: isinstance(ev.force(x), list)),
        "isAttrs": Builtin("isAttrs", 1, lambda x, line: isinstance(ev.force(x), dict)),
        "throw": fail("throw"),
        "abort": fail("abort"),
    }
    out: dict[str, Any] = {
        "true": True,
        "false": False,
        "null": None,
        "builtins": {name: ready(v) for name, v in table.items()},
    }
    for name in ("map", "removeAttrs", "throw", "abort"):
        out[name] = table[name]
    return out


def _head(ev: Evaluator, xs: list[Thunk], line: int) -> Any:
    if not xs:
        raise ev.error(line, "`head` of an empty list")
    return ev.force(xs[0])


def evaluate(expr: Expr, evaluator: Evaluator | None = None) -> Any:
    """The value of `expr` (not forced deeper than its top); `Unsupported` for anything
    outside the subset, or an evaluation error."""
    ev = evaluator or Evaluator()
    return ev.eval(expr, ev.base)


def apply(function: Any, argument: Any, evaluator: Evaluator) -> Any:
    """`function` (a value) called with `argument` (plain data: lists, dicts, strings,
    numbers, Booleans, None, `PackageSet`), forced deeply into plain data."""
    return evaluator.deep(evaluator.call(function, ready(to_value(argument))))


def to_value(data: Any) -> Any:
    """Plain data as this module's values (lists and sets hold thunks)."""
    if isinstance(data, list | tuple):
        return [ready(to_value(item)) for item in data]
    if isinstance(data, Mapping):
        return {str(k): ready(to_value(v)) for k, v in data.items()}
    return data
