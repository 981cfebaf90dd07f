/**
 * Scheduling, as vaultmem/core/schedule.py does it: the FSRS-6 card and strength.
 *
 * Built on ts-fsrs's algorithm core (`FSRSAlgorithm`: its default FSRS-6 weights,
 * parameter clipping and `next_state`), not on its scheduler, for two reasons the
 * cross-language vectors prove (test/vectors.test.ts):
 * - elapsed days: ts-fsrs's scheduler counts the difference of UTC calendar dates,
 *   the Python `fsrs` package that `vaultmem grade` runs counts whole days of real
 *   time (`timedelta.days`, a floor): 23 h 50 min across midnight is a same-day
 *   review there. `next_state` is driven with the Python count.
 * - rounding: ts-fsrs rounds every intermediate (difficulty, stability, the decay
 *   factor, retrievability) to 8 decimals; Python does not. Over 240 vectors that
 *   moved 8 results by 0.0001 after vaultmem's 4-decimal rounding, so `PythonFsrs`
 *   overrides the formulas with Python's expressions, in its order, unrounded.
 * The learning steps are walked as the Python scheduler walks them (1 m and 10 m,
 * relearning 10 m: the `fsrs` defaults vaultmem uses). Pure: no Obsidian, no I/O.
 */
import { FSRSAlgorithm, Rating as FsrsRating } from "ts-fsrs";
import type { Config } from "./config";
import { HIDDEN_STATUSES, type Note } from "./note";
import { isoUtc, PyFloat, pyRound } from "./pyvalues";

export const RATINGS = ["again", "hard", "good", "easy"] as const;
export type Rating = (typeof RATINGS)[number];
const RATING_VALUE: Record<Rating, number> = { again: 1, hard: 2, good: 3, easy: 4 };
const LEARNING_STEPS = [60, 600];
const RELEARNING_STEPS = [600];
const DAY = 86400;
const MAX_EVIDENCE = 20;

const S_MIN = 0.001;

/** Python's `round(x)` to an integer: half to even. */
function roundHalfEven(value: number): number {
  const floor = Math.floor(value);
  const diff = value - floor;
  if (diff > 0.5) return floor + 1;
  if (diff < 0.5) return floor;
  return floor % 2 === 0 ? floor : floor + 1;
}

/** ts-fsrs's core with the arithmetic of the Python `fsrs` scheduler (no 8-decimal rounding, no upper cap). */
export class PythonFsrs extends FSRSAlgorithm {
  private get w(): readonly number[] {
    return this.param.w;
  }
  private get decay(): number {
    return -this.w[20];
  }
  private get factor(): number {
    return 0.9 ** (1 / this.decay) - 1;
  }
  override init_stability(g: FsrsRating): number {
    return Math.max(this.w[g - 1], S_MIN);
  }
  override init_difficulty(g: FsrsRating): number {
    return this.w[4] - Math.E ** (this.w[5] * (g - 1)) + 1;
  }
  override next_difficulty(d: number, g: FsrsRating): number {
    const delta = -(this.w[6] * (g - 3));
    const damped = d + ((10.0 - d) * delta) / 9.0;
    const next = this.w[7] * this.init_difficulty(FsrsRating.Easy) + (1 - this.w[7]) * damped;
    return Math.min(Math.max(next, 1.0), 10.0);
  }
  override next_recall_stability(d: number, s: number, r: number, g: FsrsRating): number {
    const hard = g === FsrsRating.Hard ? this.w[15] : 1;
    const easy = g === FsrsRating.Easy ? this.w[16] : 1;
    return s * (1 + Math.E ** this.w[8] * (11 - d) * s ** -this.w[9] * (Math.E ** ((1 - r) * this.w[10]) - 1) * hard * easy);
  }
  override next_forget_stability(d: number, s: number, r: number): number {
    const longTerm = this.w[11] * d ** -this.w[12] * ((s + 1) ** this.w[13] - 1) * Math.E ** ((1 - r) * this.w[14]);
    const shortTerm = s / Math.E ** (this.w[17] * this.w[18]);
    return Math.min(longTerm, shortTerm);
  }
  override next_short_term_stability(s: number, g: FsrsRating): number {
    let increase = Math.E ** (this.w[17] * (g - 3 + this.w[18])) * s ** -this.w[19];
    if (g >= FsrsRating.Hard) increase = Math.max(increase, 1.0);
    return Math.max(s * increase, S_MIN);
  }
  override next_interval(s: number, _elapsed: number): ReturnType<FSRSAlgorithm["next_interval"]> {
    const days = roundHalfEven((s / this.factor) * (this.param.request_retention ** (1 / this.decay) - 1));
    return Math.min(Math.max(days, 1), this.param.maximum_interval) as ReturnType<FSRSAlgorithm["next_interval"]>;
  }
  override forgetting_curve = (elapsed: number, s: number): number => (1 + (this.factor * elapsed) / s) ** this.decay;
  override next_state(state: { stability: number; difficulty: number } | null, t: number, g: number, r?: number): { stability: number; difficulty: number } {
    const grade = g as FsrsRating;
    if (state === null) return { stability: this.init_stability(grade), difficulty: Math.min(Math.max(this.init_difficulty(grade), 1), 10) };
    const { stability: s, difficulty: d } = state;
    let next: number;
    if (t === 0) next = this.next_short_term_stability(s, grade);
    else if (grade === FsrsRating.Again) next = this.next_forget_stability(d, s, r ?? this.forgetting_curve(t, s));
    else next = this.next_recall_stability(d, s, r ?? this.forgetting_curve(t, s), grade);
    return { stability: Math.max(next, S_MIN), difficulty: this.next_difficulty(d, grade) };
  }
}

const algorithms = new Map<string, PythonFsrs>();

function algorithm(config: Config): PythonFsrs {
  const key = `${config.desired_retention}/${config.maximum_interval_days}`;
  let found = algorithms.get(key);
  if (!found) {
    found = new PythonFsrs({
      request_retention: config.desired_retention,
      maximum_interval: config.maximum_interval_days,
      enable_fuzz: false,
      enable_short_term: true,
    });
    algorithms.set(key, found);
  }
  return found;
}

/** Whole days between two instants, as Python's `(b - a).days` (a floor, negative when b is earlier). */
export function pythonDays(from: number, to: number): number {
  return Math.floor((to - from) / DAY);
}

interface Card { state: string; step: number | null; stability: number | null; difficulty: number | null; due: number }

/** `fsrs.Scheduler.review_card` with fuzz off, on ts-fsrs's formulas. */
export function reviewCard(note: Note, rating: Rating, now: number, config: Config): Card {
  const fsrs = algorithm(config);
  const grade = RATING_VALUE[rating] as FsrsRating;
  const days = note.last_review !== null ? pythonDays(note.last_review, now) : null;
  let stability: number;
  let difficulty: number;
  if (note.state === "learning" && (note.stability === null || note.difficulty === null)) {
    const first = fsrs.next_state(null, 0, grade);
    stability = first.stability;
    difficulty = first.difficulty;
  } else {
    if (note.stability === null || note.difficulty === null) throw new Error(`${note.path}: a ${note.state} card needs stability and difficulty`);
    const memory = { stability: note.stability, difficulty: note.difficulty };
    // Under a day: short-term stability. Never reviewed (a hand-written card): retrievability 0, as in Python.
    const next = days === null ? fsrs.next_state(memory, 1, grade, 0) : fsrs.next_state(memory, days >= 1 ? days : 0, grade);
    stability = next.stability;
    difficulty = next.difficulty;
  }
  const interval = () => fsrs.next_interval(stability, days ?? 0) * DAY;
  let state = note.state;
  let step = note.step;
  let next: number;
  if (state === "review") {
    if (rating === "again") {
      state = "relearning";
      step = 0;
      next = RELEARNING_STEPS[0];
    } else {
      next = interval();
    }
  } else {
    const steps = state === "learning" ? LEARNING_STEPS : RELEARNING_STEPS;
    const current = step ?? 0;
    if (current >= steps.length && rating !== "again") {
      [state, step, next] = ["review", null, interval()];
    } else if (rating === "again") {
      [step, next] = [0, steps[0]];
    } else if (rating === "hard") {
      next = current === 0 && steps.length === 1 ? steps[0] * 1.5
        : current === 0 && steps.length >= 2 ? (steps[0] + steps[1]) / 2 : steps[current];
    } else if (rating === "good" && current + 1 < steps.length) {
      step = current + 1;
      next = steps[step];
    } else {
      [state, step, next] = ["review", null, interval()];
    }
  }
  return { state, step, stability, difficulty, due: Math.floor(now + next) };
}

/** Probability the memory is still recalled at `now`; null if never graded. */
export function retrievability(note: Note, now: number, config: Config): number | null {
  if (note.last_review === null || !note.stability) return null;
  const days = Math.max(0, pythonDays(note.last_review, now));
  return algorithm(config).forgetting_curve(days, note.stability);
}

/** Since when idle decay is unaccounted for (schedule.py's `idle_anchor`): a graded memory
 * is not idle before its review date. */
function idleAnchor(note: Note): number {
  return Math.max(note.created, note.updated, ...(note.last_review !== null ? [note.last_review, note.due] : []),
    ...(note.decayed !== null ? [note.decayed] : []));
}

/** Strength after the whole idle periods since the anchor (schedule.py's `idle_decay`). */
export function idleDecay(note: Note, now: number, config: Config): number {
  const period = config.strength_idle_days * DAY;
  const anchor = idleAnchor(note);
  if (note.strength <= config.strength_floor || now <= anchor || period <= 0) return note.strength;
  const periods = Math.trunc((now - anchor) / period);
  if (periods === 0) return note.strength;
  // One period at a time, each rounded as stored, up to the floor (schedule.py): daily and monthly runs agree.
  let strength = note.strength;
  let used = 0;
  while (used < periods && strength > config.strength_floor) {
    strength = pyRound(Math.max(config.strength_floor, strength * config.strength_decay), 4);
    used += 1;
    if (config.strength_decay >= 1) used = periods;
  }
  return strength;
}

function added(items: string[], item: string): string[] {
  return items.includes(item) ? items : [...items, item].slice(-MAX_EVIDENCE);
}

/** tiers.py's `with_evidence`: one more act of recurrence (a good or easy grade). */
export function withEvidence(note: Note, session: string, project: string, now: number): Partial<Note> {
  const day = new Date(now * 1000).toISOString().slice(0, 10);
  const changes: Partial<Note> = {
    sessions: added(note.sessions, session || `day-${day}`),
    days: added(note.days, day),
    projects: project ? added(note.projects, project) : note.projects,
  };
  for (const key of ["sessions", "days", "projects"] as const) {
    if ((changes[key] as string[]).join("\u0000") === note[key].join("\u0000") && changes[key]!.length === note[key].length) delete changes[key];
  }
  return changes;
}

/** A grade: the property changes and the review-log record (schedule.py's `grade`). */
export function grade(note: Note, rating: Rating, now: number, config: Config): [Partial<Note>, Record<string, unknown>] {
  const card = reviewCard(note, rating, now, config);
  const lapses = note.lapses + (rating === "again" && note.state === "review" ? 1 : 0);
  let strength = idleDecay(note, now, config);
  if (rating === "good" || rating === "easy") strength = Math.min(1.0, strength + config.strength_reward);
  else if (rating === "again") strength = Math.max(config.strength_floor, strength - config.strength_reward); // wrong: weaker
  let status = note.status;
  if (lapses > note.lapses && lapses >= config.leech_lapses) status = "suspended"; // the lapse that reaches it
  else if (status === "stale") status = "active";
  const stability = pyRound(card.stability!, 4);
  const difficulty = pyRound(card.difficulty!, 4);
  const changes: Partial<Note> = {
    state: card.state, step: card.step, stability, difficulty, due: card.due, last_review: now,
    reps: note.reps + 1, lapses, strength: pyRound(strength, 4), status, updated: now, decayed: null,
  };
  const float = (value: number | null) => (value === null ? null : new PyFloat(value));
  const record = {
    id: note.id, rating, rating_value: RATING_VALUE[rating], review_datetime: isoUtc(now),
    state_before: note.state, stability_before: float(note.stability), difficulty_before: float(note.difficulty),
    elapsed_days: note.last_review === null ? null : new PyFloat(pyRound((now - note.last_review) / DAY, 4)),
    state: card.state, stability: new PyFloat(stability), difficulty: new PyFloat(difficulty), due: isoUtc(card.due),
  };
  return [changes, record];
}

/** How sure the memory is, in one word (schedule.py's `label`). */
export function label(note: Note, now: number, config: Config): string {
  if (["superseded", "archived", "suspended"].includes(note.status)) return note.status;
  if (note.contested) return "contested";
  if (note.reps === 0) return "new";
  if (note.state !== "review") return "learning";
  const value = retrievability(note, now, config);
  if (value === null) return "new";
  if (value > 0.8) return "strong";
  return value >= 0.5 ? "fading" : "weak";
}

/** Visible notes whose due date has passed, most at risk first (lifecycle.py's `due_for_review`). */
export function dueForReview(notes: Note[], now: number, config: Config): [Note, number | null][] {
  const due = notes.filter((n) => !HIDDEN_STATUSES.has(n.status) && n.due <= now)
    .map((n) => [n, retrievability(n, now, config)] as [Note, number | null]);
  return due.sort(([a, ra], [b, rb]) => {
    const ka = ra !== null ? 1 : 0;
    const kb = rb !== null ? 1 : 0;
    if (ka !== kb) return ka - kb;
    if ((ra ?? 0) !== (rb ?? 0)) return (ra ?? 0) - (rb ?? 0);
    return a.due - b.due;
  });
}
