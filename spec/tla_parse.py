"""Read TLC's printed values and states into canonical Python values, and print them back.

TLC prints values as TLA+ expressions: integers, strings, ``TRUE``/``FALSE``, model values (bare
names), sequences ``<<..>>``, sets ``{..}``, intervals ``1..3``, records ``[a |-> 1]`` and
functions ``(k :> v @@ k2 :> v2)``. :func:`parse_value` turns one into the canonical form of
:mod:`kraftspec.spec.tla_values`; :func:`parse_state` reads a state printed as the conjunction
``/\\ var = value`` (error traces, ``-simulate`` files, dot labels); :func:`to_tla` prints a value
back, so that ``parse_value(to_tla(v)) == v``.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, Iterator

from lark import Lark, Token, Transformer, v_args
from lark.exceptions import LarkError
from lark.lexer import Lexer

from kraftspec.spec.tla_values import Fn, ModelValue, TlaValue, fn

__all__ = ["TlaParseError", "parse_value", "parse_state", "state_conjuncts", "to_tla"]

_GRAMMAR = r"""
start: value

?value: INT                       -> int_
      | STRING                    -> string
      | NAME                      -> name
      | "<<" [value ("," value)*] ">>"      -> seq
      | "{" [value ("," value)*] "}"        -> set_
      | INT ".." INT                        -> interval
      | "[" field ("," field)* "]"          -> rec
      | "(" pair ("@@" pair)* ")"           -> func

field: NAME "|->" value
pair: value ":>" value

NAME: /[A-Za-z_][A-Za-z0-9_]*/
INT: /-?[0-9]+/
STRING: /"(?:[^"\\]|\\.)*"/s

%ignore /\s+/
"""

_TOKEN = re.compile(
    r'\s*(?:(?P<INT>-?[0-9]+)|(?P<STRING>"[^"\\]*(?:\\.[^"\\]*)*")|(?P<NAME>[A-Za-z_][A-Za-z0-9_]*)'
    r"|(?P<PUNCT><<|>>|\|->|:>|@@|\.\.|[{}\[\](),])|(?P<BAD>\S))",
    re.S,
)

_UNESCAPE = re.compile(r"\\(.)", re.S)
_UNESCAPES = {"n": "\n", "t": "\t", "r": "\r", "f": "\f"}
_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r", "\f": "\\f"}
_ESCAPE = re.compile(r'[\\"\n\t\r\f]')
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


class TlaParseError(ValueError):
    """The text is not a TLC value (or state) this module understands."""


class _Lexer(Lexer):
    """The grammar's tokens found by one compiled regex: several times faster than lark's lexers."""

    def __init__(self, lexer_conf: Any) -> None:
        self._punctuation = {t.pattern.value: t.name for t in lexer_conf.terminals if t.pattern.type == "str"}

    def lex(self, text: str) -> Iterator[Token]:  # type: ignore[override]
        punctuation = self._punctuation
        for m in _TOKEN.finditer(text):
            kind = m.lastgroup
            if kind == "PUNCT":
                yield Token(punctuation[m.group(kind)], m.group(kind))
            elif kind == "BAD":
                raise TlaParseError(f"unexpected character {m.group(kind)!r} at offset {m.start(kind)}")
            elif kind is not None:
                yield Token(kind, m.group(kind))


@v_args(inline=True)
class _ToPython(Transformer):  # type: ignore[type-arg]
    """Builds canonical values while the LALR parser reduces (no parse tree is kept)."""

    def int_(self, tok: Token) -> int:
        return int(tok)

    def string(self, tok: Token) -> str:
        body = tok[1:-1]
        if "\\" not in body:
            return body
        return _UNESCAPE.sub(lambda m: _UNESCAPES.get(m.group(1), m.group(1)), body)

    def name(self, tok: Token) -> bool | ModelValue:
        if tok == "TRUE":
            return True
        if tok == "FALSE":
            return False
        return ModelValue(str(tok))

    def seq(self, *items: Any) -> tuple[Any, ...]:
        return () if items == (None,) else items

    def set_(self, *items: Any) -> frozenset[Any]:
        return frozenset() if items == (None,) else frozenset(items)

    def interval(self, lo: Token, hi: Token) -> frozenset[int]:
        return frozenset(range(int(lo), int(hi) + 1))

    def field(self, key: Token, value: Any) -> tuple[str, Any]:
        return (str(key), value)

    def pair(self, key: Any, value: Any) -> tuple[Any, Any]:
        return (key, value)

    def rec(self, *fields: tuple[Any, Any]) -> Fn | tuple[Any, ...]:
        return fn(fields)

    func = rec

    def start(self, value: Any) -> Any:
        return value


_PARSER = Lark(_GRAMMAR, parser="lalr", lexer=_Lexer, transformer=_ToPython())
_CONJUNCT = re.compile(r"(?:\A|\n)[ \t]*/\\[ \t]+")


@lru_cache(maxsize=65536)
def parse_value(text: str) -> TlaValue:
    """The canonical Python value of one TLC-printed value, e.g. ``parse_value("<<1, a>>")``."""
    try:
        return _PARSER.parse(text)  # type: ignore[no-any-return]
    except TlaParseError as exc:
        raise TlaParseError(f"not a TLC value: {text[:200]!r}: {exc}") from None
    except LarkError as exc:
        raise TlaParseError(f"not a TLC value: {text[:200]!r}: {str(exc).splitlines()[0]}") from None


def parse_state(text: str) -> dict[str, TlaValue]:
    """The variables of a TLC-printed state ``/\\ x = 1 <newline> /\\ y = {}`` (or ``x = 1``) as a dict.

    Each conjunct starts a line; values are parsed one by one through :func:`parse_value`'s cache,
    so states that share variable values cost little to read.
    """
    return {var: parse_value(value) for var, value in state_conjuncts(text)}


def state_conjuncts(text: str) -> list[tuple[str, str]]:
    """The ``(variable, value text)`` pairs of a TLC-printed state, values unparsed (see :func:`parse_state`)."""
    conjuncts = _CONJUNCT.split(text.strip())
    if not conjuncts[0]:
        del conjuncts[0]
    pairs: list[tuple[str, str]] = []
    for conjunct in conjuncts:
        var, equals, value = conjunct.partition("=")
        var = var.strip()
        if not equals or value.startswith("=") or not _IDENT.match(var):
            raise TlaParseError(f"not a TLC state conjunct 'var = value': {conjunct[:200]!r}")
        pairs.append((var, value.strip()))
    return pairs


def _sort_key(value: Any) -> tuple[int, Any]:
    """Orders set elements deterministically: booleans, integers numerically, then by printed text."""
    if isinstance(value, bool):
        return (0, int(value))
    if isinstance(value, int):
        return (1, value)
    return (2, to_tla(value))


def to_tla(value: Any) -> str:
    """``value`` printed as a TLA+ expression TLC would accept and print the same way."""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return '"' + _ESCAPE.sub(lambda m: _ESCAPES[m.group(0)], value) + '"'
    if isinstance(value, ModelValue):
        return value.name
    if isinstance(value, tuple):
        return "<<" + ", ".join(map(to_tla, value)) + ">>"
    if isinstance(value, frozenset):
        return "{" + ", ".join(to_tla(v) for v in sorted(value, key=_sort_key)) + "}"
    if isinstance(value, Fn):
        if not value:
            return "<< >>"
        items = sorted(value.items(), key=lambda kv: _sort_key(kv[0]))
        if all(type(k) is str and _IDENT.match(k) and k not in ("TRUE", "FALSE") for k in value):
            return "[" + ", ".join(f"{k} |-> {to_tla(v)}" for k, v in items) + "]"
        return "(" + " @@ ".join(f"{to_tla(k)} :> {to_tla(v)}" for k, v in items) + ")"
    raise TypeError(f"not a TLA+ value: {value!r} ({type(value).__name__})")
