"""``kraftspec generate sim|tla``: write generated traces to a ``.jsonl``, ``.jsonl.gz`` or ``.parquet`` file.

Writing streams: traces are produced one at a time and written as they come (Parquet in row
groups of ``--row-group``), so memory stays bounded whatever ``--traces`` is. ``--mutant-share S``
records ``round(N * S)`` of the simulated traces, evenly spread, under the component's mutants in turn
(a set for ``kraftspec validate``). The seed is printed with the result. A raft trace recorded under a mutant is
redrawn until the mutant changed what the recorded node did (the reference flags the recording); how many draws
that took per mutant is printed, and a mutant no draw exercised is named, its trace kept and marked. A raft mutant
whose wrong rule the simulation can never reach (``raft_simulate.UNREACHABLE_MUTANTS``: with static voters every
leader is a voter, so ``raft_check_quorum_non_voter_leader`` decides as the reference) is never drawn: a share
cycles the others and the report names it with the reason; ``--mutant`` with it is refused.
"""

from __future__ import annotations

import functools

import math
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Iterable, Iterator, Optional, TextIO

from kraftspec import mutants

from kraftspec.spec.tlc import TlcError
from kraftspec.traces.format.envelope import Trace
from kraftspec.traces.format.jsonl import write_jsonl
from kraftspec.traces.format.parquet import write_parquet
from kraftspec.traces.replay.verdict import replay

EXIT_OK, EXIT_ERROR = 0, 2
ROW_GROUP = 250
"""Traces per Parquet row group: the unit of work of ``kraftspec validate`` (small enough to keep every core busy)."""


def write_traces(out: str, traces: Iterable[Trace], row_group: int = ROW_GROUP) -> int:
    """Stream ``traces`` to ``out`` (codec chosen by its suffix; Parquet in row groups of ``row_group``)."""
    if out.endswith(".parquet"):
        return write_parquet(out, traces, row_group)
    if out.endswith((".jsonl", ".jsonl.gz")):
        return write_jsonl(out, traces)
    raise ValueError(f"{out}: the output must end in .jsonl, .jsonl.gz or .parquet")


def mutant_plan(traces: int, share: float, names: list[str]) -> Iterator[Optional[str]]:
    """The mutant (or None) of each trace: ``round(traces * share)`` of them, evenly spread, cycling ``names``."""
    made = 0
    for index in range(traces):
        if math.floor((index + 1) * share + 0.5) > made:  # the running count of mutants rounds (i + 1) * share
            yield names[made % len(names)]
            made += 1
        else:
            yield None


MAX_DRAWS = 2000
"""How many simulations a raft mutant's trace may take before it is kept unexercised (and reported as such). The
rarest reachable mutant (``raft_vote_shorter_log_same_epoch``) shows in one draw of 80 to 180 (seed 18, 10,000
traces: mean 80, max 194; 200 traces: mean 179, max 235), so a trace runs out of draws with odds near e**-11."""


@dataclass
class MutantDraws:
    """Per raft mutant, how many simulations each of its traces took until the recorded node showed the mutant (the
    reference, replaying the recording, diverges: the mutant changed what was recorded), and how many traces no
    draw of ``MAX_DRAWS`` made show it (those are kept, marked ``"exercised": false`` in their meta, never dropped)."""

    draws: dict[str, list[int]] = field(default_factory=dict)
    unexercised: dict[str, int] = field(default_factory=dict)
    not_drawn: dict[str, str] = field(default_factory=dict)

    def lines(self) -> list[str]:
        """One line per mutant: its traces, the draws they took (mean, max), and any never exercised; then each
        mutant left out because the simulation cannot reach it, with the reason."""
        out = []
        for name in sorted(set(self.draws) | set(self.unexercised)):
            taken, missed = self.draws.get(name, []), self.unexercised.get(name, 0)
            shown = (f"{len(taken)} exercised, draws per trace mean {sum(taken) / len(taken):.1f} max {max(taken)}"
                     if taken else "0 exercised")
            never = f"; {missed} never exercised in {MAX_DRAWS} draws" if missed else ""
            out.append(f"  mutant {name}: {len(taken) + missed} traces, {shown}{never}")
        out.extend(f"  mutant {name}: not drawn: {why}" for name, why in sorted(self.not_drawn.items()))
        return out


def generate_mixed(seed: int, traces: int, steps: int, share: float, component: str = "broker",
                   draws: Optional[MutantDraws] = None, faults: bool = False,
                   snapshots: bool = False, dynamic: bool = False) -> Iterator[Trace]:
    """Simulated traces of ``component`` (``broker`` or ``raft``) of which a ``share`` is recorded under its
    mutants (in turn).

    Trace ``i`` is ``simulate_one(seed, i, steps)``, under its mutant when it has one (named in its
    ``meta``), so any trace of a set can be regenerated alone. A raft mutant's trace is redrawn until the mutant
    shows (:func:`_exercised`), counted in ``draws``. ``faults``: the raft simulation's failed requests and graceful
    shutdowns; ``snapshots``: its snapshots (KIP-630); ``dynamic``: its kraft.version 1 quorum with voter changes.
    """
    simulate_one, names = _simulator(component, faults, snapshots, dynamic)
    if component == "raft" and draws is not None:
        draws.not_drawn.update(_unreachable(faults, dynamic))
    return _recorded(simulate_one, seed, steps, mutant_plan(traces, share, names),
                     draws if component == "raft" else None)


def _unreachable(faults: bool = False, dynamic: bool = False) -> dict[str, str]:
    """The raft mutants the simulation (with or without ``faults``, ``dynamic``) cannot exercise, with the reason
    (``raft_simulate.unreachable_mutants``)."""
    from kraftspec.traces.recording.raft_simulate import unreachable_mutants

    return unreachable_mutants(faults, dynamic)


def _simulator(component: str, faults: bool = False, snapshots: bool = False,
               dynamic: bool = False) -> tuple[Callable[..., Trace], list[str]]:
    """``component``'s ``simulate_one`` (raft: with ``faults``, ``snapshots`` and ``dynamic`` if asked) and the names of
    the mutants it can exercise."""
    if component == "raft":
        from kraftspec.models.raft_mutants import MUTANTS
        from kraftspec.traces.recording.raft_simulate import simulate_one
    else:
        from kraftspec.models.broker_mutants import MUTANTS  # type: ignore[no-redef]
        from kraftspec.traces.recording.broker_simulate import simulate_one  # type: ignore[no-redef]
    unreachable = _unreachable(faults, dynamic) if component == "raft" else {}
    simulated = functools.partial(simulate_one, faults=True) if faults else simulate_one
    if snapshots:
        simulated = functools.partial(simulated, snapshots=True)
    if dynamic:
        simulated = functools.partial(simulated, dynamic=True)
    return simulated, [m.name for m in MUTANTS if m.name not in unreachable]


def _recorded(simulate_one: Callable[..., Trace], seed: int, steps: int,
              plan: Iterable[Optional[str]], draws: Optional[MutantDraws] = None) -> Iterator[Trace]:
    """Trace ``i`` of ``seed``, recorded under the ``i``-th mutant of ``plan`` (None: the reference), named in its meta.

    With ``draws`` (raft), a mutant's trace is the first draw that exercises the mutant (:func:`_exercised`)."""
    for index, name in enumerate(plan):
        if name is None:
            yield simulate_one(seed, index, steps)
        elif draws is None:
            trace = simulate_one(seed, index, steps, mutants.get(name).applied())
            yield replace(trace, meta={**trace.meta, "mutant": name})
        else:
            yield _exercised(simulate_one, seed, index, steps, name, draws)


def _exercised(simulate_one: Callable[..., Trace], seed: int, index: int, steps: int, name: str,
               draws: MutantDraws) -> Trace:
    """Trace ``index`` under mutant ``name``: draws 0, 1, ... of the simulation until the reference, replaying the
    recording, diverges from it (the mutant changed what the recorded node did; a run where the mutant's rule is
    never reached, or changes only the other nodes, records what the reference does). After ``MAX_DRAWS`` draws
    the last one is kept, marked unexercised."""
    mutant = mutants.get(name)
    for draw in range(MAX_DRAWS):
        trace = simulate_one(seed, index, steps, mutant.applied(), draw=draw)
        if not replay(trace).conformant:
            draws.draws.setdefault(name, []).append(draw + 1)
            return replace(trace, meta={**trace.meta, "mutant": name})
    draws.unexercised[name] = draws.unexercised.get(name, 0) + 1
    return replace(trace, meta={**trace.meta, "mutant": name, "exercised": False})


def generate_raft_sim(seed: int, traces: int, steps: int, mutant: Optional[str],
                      draws: Optional[MutantDraws] = None, faults: bool = False,
                      snapshots: bool = False, dynamic: bool = False) -> Iterator[Trace]:
    """``traces`` simulated raft traces (one node's view, ``traces/recording/raft_simulate.py``), all under ``mutant`` if
    given (each redrawn until it shows the mutant, counted in ``draws``); an unknown mutant or one of another
    component is refused before anything is generated."""
    owner = mutants.get(mutant).component if mutant is not None else "raft"
    if owner != "raft":
        raise ValueError(f"mutant {mutant!r} belongs to component {owner!r}, not raft")
    unreachable = _unreachable(faults, dynamic)
    if mutant in unreachable:
        raise ValueError(f"mutant {mutant!r} cannot be exercised by the raft simulation: {unreachable[mutant]}")
    simulate_one, _ = _simulator("raft", faults, snapshots, dynamic)
    return _recorded(simulate_one, seed, steps, [mutant] * traces, draws)


def default_steps(dynamic: bool) -> int:
    """Steps per simulated trace when none are given: 40, or ``raft_simulate.DYNAMIC_STEPS`` with ``dynamic``."""
    from kraftspec.traces.recording.raft_simulate import DYNAMIC_STEPS

    return DYNAMIC_STEPS if dynamic else 40


def generate_command(kind: str, out: str, traces: int, seed: int, steps: Optional[int] = None,
                     mutant: Optional[str] = None,
                     stream: TextIO = sys.stdout, cover: str = "kinds", mutant_share: float = 0.0,
                     row_group: int = ROW_GROUP, component: str = "broker", faults: bool = False,
                     snapshots: bool = False, dynamic: bool = False) -> int:
    """Generate ``traces`` traces of ``kind`` into ``out``.

    ``sim``: simulations of ``steps`` steps (default :func:`default_steps`) of ``component`` (``broker``, or
    ``raft``: one node's view of a quorum), ``mutant`` recorded for all, or a ``mutant_share`` of them under the
    component's mutants in turn; ``tla``: ``traces`` random walks of TLC's state graph, then the
    covering set (``cover``: ``kinds`` or ``edges``) of ``component``'s spec (``broker``, ``partition``, ``controller``,
    ``features``: broker traces of ``FeatureLevels.tla``, ``raft``: one node's view of ``KRaftQuorum.tla``, ``listener``,
    ``shutdown``, ``voters``, ``requests`` or ``autojoin``: raft traces of the node ``KRaftListener.tla``,
    ``KRaftShutdown.tla``, ``KRaftVoters.tla``, ``KRaftRequests.tla`` or ``KRaftAutoJoin.tla`` follows).
    Parquet is written in row groups of ``row_group``. ``faults`` (raft sim only): failed requests and graceful
    shutdowns in the simulation; ``snapshots`` (raft only): snapshots created, cleaned and fetched (``tla``: walks
    ``KRaftQuorum.snapshots.cfg``'s graph); ``dynamic`` (raft sim only): a kraft.version 1 quorum whose voters an
    admin adds and removes.
    """
    draws = MutantDraws()
    steps = default_steps(dynamic) if steps is None else steps
    try:
        if not 0.0 <= mutant_share <= 1.0 or row_group < 1:
            raise ValueError("--mutant-share must be between 0 and 1 and --row-group at least 1")
        if kind == "sim" and component not in ("broker", "raft"):
            raise ValueError(f"no simulator for component {component!r}: use `generate tla --component {component}`")
        if faults and (kind != "sim" or component != "raft"):
            raise ValueError("--faults is a raft simulation's: give it with `generate sim --component raft`")
        if snapshots and component != "raft":
            raise ValueError("--snapshots is raft's: give it with `generate sim|tla --component raft`")
        if dynamic and (kind != "sim" or component != "raft"):
            raise ValueError("--dynamic is a raft simulation's: give it with `generate sim --component raft`")
        if kind == "sim" and mutant_share and mutant is not None:
            raise ValueError("give --mutant (every trace) or --mutant-share (a share of them), not both")
        if kind == "sim" and mutant_share:
            generated = generate_mixed(seed, traces, steps, mutant_share, component, draws, faults, snapshots, dynamic)
        elif kind == "sim" and component == "raft":
            generated = generate_raft_sim(seed, traces, steps, mutant, draws, faults, snapshots, dynamic)
        elif kind == "sim":
            from kraftspec.traces.recording.broker_simulate import generate_sim

            generated = generate_sim(seed, traces, steps, mutant)
        elif kind == "tla" and mutant is None and not mutant_share and component == "partition":
            from kraftspec.traces.recording import partition_tla

            generated = partition_tla.generate_tla(seed, traces, cover)
        elif kind == "tla" and mutant is None and not mutant_share and component == "raft":
            from kraftspec.traces.recording import raft_tla

            generated = raft_tla.generate_tla(seed, traces, cover, config="snapshots" if snapshots else "")
        elif kind == "tla" and mutant is None and not mutant_share and component == "features":
            from kraftspec.traces.recording import features_tla

            generated = features_tla.generate_tla(seed, traces, cover)
        elif kind == "tla" and mutant is None and not mutant_share and component in ("listener", "shutdown", "voters",
                                                                                        "requests", "autojoin"):
            from kraftspec.traces.recording import autojoin_tla, listener_tla, requests_tla, shutdown_tla, voters_tla

            recorder = {"listener": listener_tla, "shutdown": shutdown_tla, "voters": voters_tla,
                        "requests": requests_tla, "autojoin": autojoin_tla}[component]
            generated = recorder.generate_tla(seed, traces, cover)
        elif kind == "tla" and mutant is None and not mutant_share and component == "controller":
            from kraftspec.traces.recording import controller_tla

            generated = controller_tla.generate_tla(seed, traces, cover)
        elif kind == "tla" and mutant is None and not mutant_share:
            from kraftspec.traces.recording.broker_tla import generate_tla

            generated = generate_tla(seed, traces, cover)
        else:
            raise ValueError(f"unknown trace generator {kind!r}" if kind != "tla" else
                             "--mutant and --mutant-share apply to simulated traces only (TLA+ traces follow the spec)")
        count = write_traces(out, generated, row_group)
    except (KeyError, ValueError, TlcError) as exc:
        Path(out).unlink(missing_ok=True)  # no partial output
        print(f"generate {kind}: error: {exc.args[0] if exc.args else exc}", file=stream)
        return EXIT_ERROR
    mutated = f", mutant {mutant}" if mutant else f", mutant share {mutant_share}" if mutant_share else ""
    options = f" --mutant {mutant}" if mutant else f" --mutant-share {mutant_share}" if mutant_share else ""
    options += f" --row-group {row_group}" if row_group != ROW_GROUP and out.endswith(".parquet") else ""
    options += f" --component {component}" if component != "broker" else ""
    options += " --faults" if faults else ""
    options += " --snapshots" if snapshots else ""
    options += " --dynamic" if dynamic else ""
    print(f"generate {kind}: wrote {count} traces to {out} (seed {seed}{mutated}); reproduce with: kraftspec generate "
          f"{kind} --traces {traces} --seed {seed}{f' --steps {steps}' if kind == 'sim' else f' --cover {cover}'}"
          f"{options} --out {out}", file=stream)
    for line in draws.lines():
        print(line, file=stream)
    return EXIT_OK
