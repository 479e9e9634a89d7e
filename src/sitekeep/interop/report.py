"""What a conversion changed or dropped, and why (SPEC §15). Never a value.

Every cookie a conversion alters gets a :class:`Note` naming where it was in the source
(``cookies[3]``, ``line 12``), the cookie's name and domain, the rule that applied and a
sentence with its source. A conversion never drops a cookie without one: the counts of a
:class:`Report` add up (``carried + dropped == read``).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["KINDS", "Action", "Note", "Report"]

Action = Literal["changed", "dropped"]
KINDS = ("cookies", "origins", "local_items", "session_items")
"""What a report counts: cookies, origins with localStorage, their items, and the
sessionStorage items."""


def _counts() -> Counter[str]:
    return Counter(dict.fromkeys(KINDS, 0))


@dataclass(frozen=True, slots=True)
class Note:
    """One item a conversion changed or dropped.

    Attributes:
        where: its place in the source: ``cookies[3]``, ``line 12``, ``origins[0]``.
        name: the cookie's name (an origin's serialisation for Web Storage); empty when
            the source item could not be read far enough to name it.
        domain: the cookie's domain as the source wrote it (empty for Web Storage).
        action: ``changed`` (carried, altered) or ``dropped`` (not carried).
        rule: a stable id of the rule (``same-site-spelling``, ``expiry-past``…).
        reason: a sentence a person can act on, citing the standard.
    """

    where: str
    name: str
    domain: str
    action: Action
    rule: str
    reason: str

    def as_json(self) -> dict[str, str]:
        return {
            "where": self.where,
            "name": self.name,
            "domain": self.domain,
            "action": self.action,
            "rule": self.rule,
            "reason": self.reason,
        }


@dataclass(slots=True)
class Report:
    """What one conversion read, carried, changed and dropped.

    Attributes:
        read: items read from the source, by kind (``cookies``, ``origins``,
            ``local_items``, ``session_items``).
        carried: items written to the result, by the same kinds.
        notes: every change and drop, in source order.
        remarks: sentences about the whole file (a format's limits, an extension field).
    """

    read: Counter[str] = field(default_factory=_counts)
    carried: Counter[str] = field(default_factory=_counts)
    notes: list[Note] = field(default_factory=list)
    remarks: list[str] = field(default_factory=list)

    def note(
        self, where: str, name: str, domain: str, action: Action, rule: str, reason: str
    ) -> None:
        self.notes.append(Note(where, name, domain, action, rule, reason))

    @property
    def dropped(self) -> list[Note]:
        return [n for n in self.notes if n.action == "dropped"]

    @property
    def changed(self) -> list[Note]:
        return [n for n in self.notes if n.action == "changed"]

    def by_rule(self, action: Action) -> dict[str, int]:
        """How many notes of ``action`` each rule made, rules sorted."""
        counts = Counter(n.rule for n in self.notes if n.action == action)
        return dict(sorted(counts.items()))

    def as_json(self) -> dict[str, Any]:
        """The report as the receipt and the API give it: counts, notes, remarks."""
        return {
            "read": dict(sorted(self.read.items())),
            "carried": dict(sorted(self.carried.items())),
            "changed": self.by_rule("changed"),
            "dropped": self.by_rule("dropped"),
            "notes": [n.as_json() for n in self.notes],
            "remarks": list(self.remarks),
        }
