"""Text that reads as an instruction to an agent rather than something to remember. Pure.

Memories are shown to an agent at every session start, so a note that says
"ignore previous instructions", carries a role tag (`<system>`), pipes a
download into a shell, or tells the assistant to run or fetch something is a
standing order planted in its context. Two callers ask:

- capture.py, before it stores a statement from a transcript: from an
  assistant turn nothing that tells the agent to run a command or fetch a URL
  ("Next time, run curl ... | sh", "always execute ...", "download and run
  ..."); from any turn nothing with an override phrase, a role tag or a
  pipe-to-shell (a user's own preferences, "always use pnpm", stay);
- health.py, which lists the notes that look like this, as warnings.

`reason` says which signal fired, in a few words, or None.
"""

from __future__ import annotations

import re

_OVERRIDE = re.compile(
    r"(?i)\b(?:ignore|disregard|forget|override|bypass)\s+(?:all\s+|any\s+|the\s+|your\s+)*"
    r"(?:previous|prior|above|earlier|preceding|system|original|existing)?\s*"
    r"(?:instructions?|prompts?|messages?|rules|guidelines|directions|context)\b"
    r"|\bnew\s+(?:system\s+)?instructions\s*:|\byou\s+are\s+now\s+(?:in\s+)?(?:an?\s+|the\s+)?"
    r"(?:unrestricted|jailbroken|dan\b|developer\s+mode|admin)|\bjailbreak\b"
)
_ROLE_TAG = re.compile(
    r"(?i)</?\s*(?:system(?:-reminder)?|assistant|user|human|instructions?|developer|tool|im_start|im_end)\s*/?>"
    r"|<\|im_(?:start|end)\|>|\[/?INST\]|^#{1,3}\s*(?:system|instructions?)\s*:?\s*$",
    re.MULTILINE,
)
_SHELLS = r"(?:sudo\s+)?(?:ba|z|da|k|fi)?sh|python3?|perl|ruby|node|iex|powershell|pwsh"
_PIPE_TO_SHELL = re.compile(
    rf"(?i)\b(?:curl|wget|fetch|iwr|irm|invoke-webrequest|invoke-restmethod)\b[^|\n]{{0,300}}\|\s*(?:{_SHELLS})\b"
    rf"|\b(?:{_SHELLS})\s+(?:-c\s+)?[\"']?(?:<\(|\$\()\s*(?:curl|wget)\b"
)
# An order to act: an action verb where an imperative stands (the start of a clause, or after
# "always", "then", "please", "should", "to"...), not the noun in "the test run takes 5 minutes".
_ACTIONS = (r"run|re-?run|execute|exec|eval|source|download|fetch|curl|wget|install|pip\s+install|npm\s+install"
            r"|sudo|chmod|invoke|launch|visit|open|browse|navigate\s+to|go\s+to|paste|pipe|upload|send|post|rm")
_COMMAND_ORDER = re.compile(
    rf"(?i)(?:^|[,;:.!]\s+|\b(?:always|never|then|first|please|should|must|need\s+to|have\s+to|just"
    rf"|(?:remember|make\s+sure|be\s+sure|don'?t\s+forget)\s+to|next\s+time|in\s+(?:the\s+)?future"
    rf"|from\s+now\s+on|and\s+(?:then\s+)?)\s*)(?:{_ACTIONS})\b"
)
_URL = re.compile(r"(?i)\bhttps?://|\bwww\.\w")
# Addressed to the assistant: "you must ...", "the assistant should ...", "as an AI ...".
_TO_THE_AGENT = re.compile(
    r"(?i)\b(?:you|the\s+(?:assistant|agent|model|ai)|claude|assistant)\s+(?:must|shall|should|will|need\s+to"
    r"|have\s+to|are\s+(?:required|instructed|allowed)\s+to)\s+(?:always\s+|never\s+|now\s+)?"
    rf"(?:{_ACTIONS}|ignore|reveal|disclose|print|output|obey|follow|comply|pretend|act\s+as)\b"
    r"|\bas\s+an\s+ai\b|\b(?:assistant|claude|ai)\s*[:,]\s*(?:always|never|you|ignore|run|execute)\b"
)


def injection_reason(text: str) -> str | None:
    """Why `text` reads as an attempt to steer an agent, whoever wrote it, or None."""
    if _OVERRIDE.search(text):
        return "it tells the agent to ignore its instructions"
    if _ROLE_TAG.search(text):
        return "it holds a role tag such as <system>"
    if _PIPE_TO_SHELL.search(text):
        return "it pipes a download into a shell"
    return None


def command_reason(text: str) -> str | None:
    """Why `text` reads as an order to run a command or fetch a URL, or None."""
    if _COMMAND_ORDER.search(text.strip()):
        return "it tells the agent to run or fetch something"
    if _URL.search(text) and re.search(rf"(?i)\b(?:{_ACTIONS})\b", text):
        return "it tells the agent to fetch a URL"
    return None


def instruction_reason(text: str) -> str | None:
    """Why a stored note looks like an instruction to an agent (for health), or None.

    A person's own rules ("Never force-push to main", "Always run the linter
    before pushing") are what memories are for and do not count; what counts is
    an override, a role tag, a pipe-to-shell, or an order addressed to the
    assistant ("you must run ...", "as an AI ...").
    """
    reason = injection_reason(text)
    if reason:
        return reason
    if _TO_THE_AGENT.search(text):
        return "it gives the assistant orders"
    return None
