"""The rules, pure: the note format, scheduling, lifecycle, tiers, conflicts, time in
queries, redaction, capture, prompts. No file, socket, clock or environment access
here (a test holds it): every function takes what it needs, `now` included."""
