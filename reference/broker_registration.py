"""The controller's hard state for one broker (``BrokerRegistration``) and how broker records replay into it.

rules §1.2 (hard state) and §1.4 (replay of apiKeys 0, 1, 7, 8, 17). Replay is what every
controller and broker does with the log; it is also how the audit rebuilds an image.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from kraftspec.reference.frozen import evolve
from kraftspec.reference.records import (
    FENCE,
    NO_FENCING_CHANGE,
    UNFENCE,
    BrokerRegistrationChangeRecord,
    Endpoint,
    FeatureRange,
    FenceBrokerRecord,
    RegisterBrokerRecord,
    UnfenceBrokerRecord,
)


class ReplayError(ValueError):
    """A record that Kafka's replay would reject (fatal on a controller): the message says which rule."""


@dataclass(frozen=True, slots=True, kw_only=True)
class BrokerRegistration:
    """``BrokerRegistration``: one broker's registration as the log defines it (§1.2)."""

    broker_id: int
    epoch: int
    incarnation_id: str
    fenced: bool = True
    in_controlled_shutdown: bool = False
    rack: Optional[str] = None
    listeners: tuple[Endpoint, ...] = ()
    features: tuple[FeatureRange, ...] = ()
    log_dirs: tuple[str, ...] = ()
    cordoned_log_dirs: Optional[tuple[str, ...]] = None

    @property
    def has_uncordoned_dirs(self) -> bool:
        """``BrokerRegistration.hasUncordonedDirs`` (4.3+): no directories, none known cordoned, or one not cordoned."""
        if not self.log_dirs or self.cordoned_log_dirs is None:
            return True
        return bool(set(self.log_dirs) - set(self.cordoned_log_dirs))

    @property
    def is_active(self) -> bool:
        """``ClusterControlManager.isActive``: unfenced and not in controlled shutdown."""
        return not self.fenced and not self.in_controlled_shutdown


def registration_from_record(record: RegisterBrokerRecord) -> BrokerRegistration:
    """Replay of RegisterBrokerRecord: the registration is replaced entirely; fenced/ICS come from the record (§1.3)."""
    return BrokerRegistration(
        broker_id=record.broker_id,
        epoch=record.broker_epoch,
        incarnation_id=record.incarnation_id,
        fenced=record.fenced,
        in_controlled_shutdown=record.in_controlled_shutdown,
        rack=record.rack,
        listeners=record.end_points,
        features=record.features,
        log_dirs=tuple(sorted(record.log_dirs)),
        cordoned_log_dirs=record.cordoned_log_dirs,
    )


def apply_change(
    registration: Optional[BrokerRegistration],
    record: BrokerRegistrationChangeRecord | FenceBrokerRecord | UnfenceBrokerRecord,
) -> BrokerRegistration:
    """Replay of apiKeys 7, 8 and 17: the broker must be registered with the record's epoch (§1.4).

    ``fenced`` must be one of 1 / 0 / -1 and ``in_controlled_shutdown`` one of 0 / 1; there is no
    "leave controlled shutdown" value, only a new RegisterBrokerRecord clears the flag.
    """
    if isinstance(record, FenceBrokerRecord):
        broker_id, epoch, fencing, ics = record.id, record.epoch, FENCE, 0
        log_dirs: tuple[str, ...] = ()
        cordoned: Optional[tuple[str, ...]] = None
    elif isinstance(record, UnfenceBrokerRecord):
        broker_id, epoch, fencing, ics = record.id, record.epoch, UNFENCE, 0
        log_dirs, cordoned = (), None
    else:
        broker_id, epoch, fencing, ics = record.broker_id, record.broker_epoch, record.fenced, record.in_controlled_shutdown
        log_dirs, cordoned = record.log_dirs, record.cordoned_log_dirs
    if registration is None:
        raise ReplayError(f"broker {broker_id} is not registered")
    if registration.epoch != epoch:
        raise ReplayError(f"broker {broker_id} has epoch {registration.epoch}, the record says {epoch}")
    if fencing not in (FENCE, NO_FENCING_CHANGE, UNFENCE):
        raise ReplayError(f"invalid fencing change {fencing} for broker {broker_id}")
    if ics not in (0, 1):
        raise ReplayError(f"invalid in-controlled-shutdown change {ics} for broker {broker_id}")
    changes: dict[str, object] = {}
    if fencing == FENCE:
        changes["fenced"] = True
    elif fencing == UNFENCE:
        changes["fenced"] = False
    if ics == 1:
        changes["in_controlled_shutdown"] = True
    if log_dirs:
        changes["log_dirs"] = tuple(sorted(log_dirs))
    if cordoned is not None:
        changes["cordoned_log_dirs"] = cordoned
    return evolve(registration, **changes) if changes else registration
