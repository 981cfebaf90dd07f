"""`why`: the provenance of one memory, assembled from the note, the ledger and the review log. Pure."""

from __future__ import annotations

from vaultmem.core.model import Note
from vaultmem.timefmt import format_datetime


def explain(note: Note, ledger: list[dict], reviews: list[dict], by_link: dict[str, Note]) -> dict:
    """Everything on record about `note`, oldest event first.

    `by_link` maps "[[file name]]" links to notes, to follow the supersede
    chain in both directions.
    """
    comments = {(r.get("time"), r.get("rating")): r.get("comment") for r in reviews if r.get("comment")}
    events = []
    for record in ledger:
        detail = dict(record.get("detail") or {})
        event = {"time": record.get("time"), "op": record.get("op"), "path": record.get("path")}
        if record.get("op") == "grade":
            comment = comments.get((record.get("time"), detail.get("rating")))
            if comment:
                detail["comment"] = comment
        if detail:
            event["detail"] = detail
        events.append(event)
    if not ledger:  # a vault from before the ledger: the review log still tells the grades
        events = [{"time": r.get("time"), "op": "grade", "detail": {"rating": r.get("rating"),
                                                                    "comment": r.get("comment")}} for r in reviews]
    return {
        "id": note.id,
        "path": note.path,
        "text": note.summary,
        "status": note.status,
        "tier": note.tier,
        "source": note.source,
        "created": format_datetime(note.created),  # as the ledger's times: YYYY-MM-DDTHH:MM:SS, UTC
        "explicit": note.explicit,
        "evidence": {"sessions": list(note.sessions), "days": list(note.days), "projects": list(note.projects)},
        "promoted": format_datetime(note.promoted),
        "redacted": note.redacted,
        "contested_with": list(note.contested_with) if note.contested else [],
        "older": _chain(note, by_link, "supersedes"),
        "newer": _chain(note, by_link, "superseded_by"),
        "history": events,
    }


def _chain(note: Note, by_link: dict[str, Note], key: str) -> list[dict]:
    """Follow `supersedes` (older) or `superseded_by` (newer) links to the end."""
    chain, seen, current = [], {note.id}, note
    while getattr(current, key):
        link = getattr(current, key)
        following = by_link.get(link)
        if following is None:
            chain.append({"link": link, "missing": True})
            break
        if following.id in seen:
            break
        seen.add(following.id)
        chain.append({"id": following.id, "link": link, "status": following.status, "text": following.summary})
        current = following
    return chain


def render_why(info: dict) -> str:
    """`why` for a person: a few labelled lines, then the history."""
    lines = [f"{info['id']}  {info['path']}  ({info['status']}, {info['tier']})", f"  {info['text']}"]
    if info["source"]:
        lines.append(f"source:    {info['source']}")
    lines.append(f"created:   {_when(info['created'])}")
    evidence = info["evidence"]
    lines.append(f"evidence:  {len(evidence['sessions'])} sessions, {len(evidence['days'])} days "
                 f"({', '.join(evidence['days'][-5:]) or '-'}), projects: {', '.join(evidence['projects']) or '-'}"
                 + ("; stated explicitly" if info["explicit"] else ""))
    if info["promoted"]:
        lines.append(f"promoted:  {_when(info['promoted'])}")
    if info["redacted"]:
        lines.append("redacted:  secrets were masked before writing (it does not promote on evidence)")
    if info["contested_with"]:
        lines.append(f"contested: with {', '.join(info['contested_with'])}")
    for label, key in (("older", "older"), ("newer", "newer")):
        for item in info[key]:
            lines.append(f"{label}:     {item.get('id', '?')} {item['link']}"
                         + ("" if item.get("missing") else f" ({item['status']}) {item['text']}"))
    lines.append("history:")
    for event in info["history"] or [{"time": "-", "op": "nothing recorded"}]:
        detail = event.get("detail") or {}
        extra = ", ".join(f"{k}={v}" for k, v in detail.items() if v not in (None, "", False))
        lines.append(f"  {event['time']}  {event['op']}" + (f"  {extra}" if extra else ""))
    return "\n".join(lines)


def _when(value) -> str:
    from vaultmem.timefmt import format_datetime

    return format_datetime(value) if hasattr(value, "tzinfo") else str(value)

