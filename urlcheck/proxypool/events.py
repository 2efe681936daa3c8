"""What a store call reports back besides its result: the pool logs each event once."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .health import State

__all__ = [
    "ControlUrlChanged",
    "Event",
    "FallbackLease",
    "LeasesReclaimed",
    "OurSideFault",
    "PairBenched",
    "SiteFault",
    "Transition",
]


@dataclass(frozen=True, slots=True)
class Transition:
    proxy_id: str
    old: State
    new: State
    reason: str


@dataclass(frozen=True, slots=True)
class PairBenched:
    """A proxy taken off one site only: its row is red there and green elsewhere."""

    proxy_id: str
    site: str
    seconds: float
    reason: str


@dataclass(frozen=True, slots=True)
class SiteFault:
    site: str
    at_fault: bool
    reason: str


@dataclass(frozen=True, slots=True)
class OurSideFault:
    active: bool
    reason: str


@dataclass(frozen=True, slots=True)
class FallbackLease:
    """Nothing was eligible for the site: a proxy out of service or benched was lent."""

    proxy_id: str
    site: str
    state: State


@dataclass(frozen=True, slots=True)
class LeasesReclaimed:
    count: int


@dataclass(frozen=True, slots=True)
class ControlUrlChanged:
    url: str
    broken: bool
    reason: str


Event = (
    Transition
    | PairBenched
    | SiteFault
    | OurSideFault
    | LeasesReclaimed
    | ControlUrlChanged
    | FallbackLease
)
