/**
 * The two side panels: the review queue (what `vaultmem review` lists, in its order,
 * with its labels and four grade buttons) and the provenance of the open note
 * (source, the supersede chain both ways, contested-with, evidence, recent grades).
 * Plain DOM, styled by styles.css with Obsidian's CSS variables.
 */
import { ItemView, type WorkspaceLeaf } from "obsidian";
import type { Note } from "./note";
import type { VaultmemPlugin } from "./main";
import { formatStamp } from "./pyvalues";
import { dueForReview, label, RATINGS, type Rating, retrievability } from "./schedule";

export const REVIEW_VIEW = "vaultmem-review";
export const PROVENANCE_VIEW = "vaultmem-provenance";

function el<K extends keyof HTMLElementTagNameMap>(parent: HTMLElement, tag: K, cls?: string, text?: string): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined) node.textContent = text;
  parent.append(node);
  return node;
}

/** One line for lists: the text, or a skill's title (core/model.py's `summary`, shortened). */
export function summary(note: Note): string {
  const lines = note.body.split(/\r?\n/).map((l) => l.trim()).filter(Boolean);
  if (note.type === "skill") return (lines.find((l) => l.startsWith("# ")) ?? lines[0] ?? "").replace(/^# /, "");
  return lines.join(" ");
}

/** A side panel that renders itself whole on every refresh (the review queue, provenance). */
abstract class VaultmemView extends ItemView {
  constructor(leaf: WorkspaceLeaf, protected plugin: VaultmemPlugin) {
    super(leaf);
  }
  async onOpen(): Promise<void> {
    await this.refresh();
  }

  private generation = 0;

  async refresh(): Promise<void> {
    const root = document.createElement("div"); // built aside, shown whole: two refreshes never interleave
    const generation = ++this.generation;
    await this.render(root);
    if (generation === this.generation) this.contentEl.replaceChildren(...Array.from(root.childNodes));
  }

  protected abstract render(root: HTMLElement): Promise<void>;
}

export class ReviewView extends VaultmemView {
  getViewType(): string {
    return REVIEW_VIEW;
  }
  getDisplayText(): string {
    return "vaultmem review";
  }
  getIcon(): string {
    return "brain";
  }
  protected async render(root: HTMLElement): Promise<void> {
    this.contentEl.classList.add("vaultmem-review");
    const now = this.plugin.now();
    const { notes, config } = await this.plugin.loadNotes();
    const due = dueForReview(notes, now, config).slice(0, this.plugin.reviewLimit);
    el(root, "h4", "vaultmem-heading", due.length ? `Due for review (${due.length})` : "Review");
    if (!due.length) {
      el(root, "p", "vaultmem-empty", "Nothing is due. Every memory is confirmed for now.");
      return;
    }
    for (const [note, r] of due) {
      const item = el(root, "div", "vaultmem-item");
      item.dataset.id = note.id;
      const head = el(item, "div", "vaultmem-item-head");
      const word = label(note, now, config);
      el(head, "span", `vaultmem-label vaultmem-label-${word}`, word);
      el(head, "span", "vaultmem-namespace", note.namespace);
      el(head, "span", "vaultmem-r", r === null ? "not graded yet" : `R ${Math.round(r * 100)}%`);
      const text = el(item, "a", "vaultmem-text", summary(note));
      text.addEventListener("click", () => this.plugin.openNote(note.path));
      const buttons = el(item, "div", "vaultmem-buttons");
      for (const rating of RATINGS) {
        const button = el(buttons, "button", `vaultmem-grade vaultmem-grade-${rating}`, rating[0].toUpperCase() + rating.slice(1));
        button.addEventListener("click", () => void this.grade(note, rating));
      }
    }
  }

  /** Grade from the queue; the plugin refreshes every open view after the write. */
  grade(note: Note, rating: Rating): Promise<void> {
    return this.plugin.grade(note.path, rating);
  }
}

export class ProvenanceView extends VaultmemView {
  getViewType(): string {
    return PROVENANCE_VIEW;
  }
  getDisplayText(): string {
    return "vaultmem provenance";
  }
  getIcon(): string {
    return "git-fork";
  }
  protected async render(root: HTMLElement): Promise<void> {
    this.contentEl.classList.add("vaultmem-provenance");
    const note = await this.plugin.activeNote();
    if (!note) {
      el(root, "p", "vaultmem-empty", "Open a vaultmem memory to see where it came from.");
      return;
    }
    const { notes, config } = await this.plugin.loadNotes(true);
    const now = this.plugin.now();
    el(root, "h4", "vaultmem-heading", summary(note));
    const facts = el(root, "div", "vaultmem-facts");
    const r = retrievability(note, now, config);
    el(facts, "span", `vaultmem-label vaultmem-label-${label(note, now, config)}`, label(note, now, config));
    el(facts, "span", "vaultmem-namespace", `${note.namespace} · ${note.tier} · ${note.status}`);
    el(facts, "span", "vaultmem-r", r === null ? "not graded yet" : `R ${Math.round(r * 100)}%`);

    this.section(root, "Source", (box) => {
      if (!note.source) el(box, "span", "vaultmem-none", "none recorded");
      else if (/^\[\[.*\]\]$/.test(note.source)) this.link(box, note.source, note.path);
      else if (/^https?:\/\//.test(note.source)) {
        const a = el(box, "a", "external-link", note.source);
        a.setAttribute("href", note.source);
      } else el(box, "span", undefined, note.source);
    });
    const byLink = new Map(notes.map((n) => [`[[${n.path.split("/").pop()!.replace(/\.md$/, "")}]]`, n]));
    this.section(root, "Supersede chain", (box) => {
      const older: string[] = [];
      for (let link = note.supersedes, guard = 0; link && guard < 50; guard++) {
        older.unshift(link);
        link = byLink.get(link)?.supersedes ?? "";
      }
      const newer: string[] = [];
      for (let link = note.superseded_by, guard = 0; link && guard < 50; guard++) {
        newer.push(link);
        link = byLink.get(link)?.superseded_by ?? "";
      }
      if (!older.length && !newer.length) {
        el(box, "span", "vaultmem-none", "no corrections");
        return;
      }
      const chain = el(box, "ol", "vaultmem-chain");
      for (const link of older) this.link(el(chain, "li", "vaultmem-older"), link, note.path);
      el(chain, "li", "vaultmem-this", "this note");
      for (const link of newer) this.link(el(chain, "li", "vaultmem-newer"), link, note.path);
    });
    this.section(root, "Contested with", (box) => {
      if (!note.contested_with.length) el(box, "span", "vaultmem-none", note.contested ? "contested" : "not contested");
      for (const link of note.contested_with) this.link(el(box, "div"), link, note.path);
    });
    this.section(root, "Evidence", (box) => {
      el(box, "div", undefined, `${note.sessions.length} sessions, ${note.days.length} days${note.explicit ? ", stated explicitly" : ""}`);
      if (note.projects.length) el(box, "div", undefined, `projects: ${note.projects.join(", ")}`);
      if (note.days.length) el(box, "div", "vaultmem-muted", `last on ${note.days[note.days.length - 1]}`);
    });
    const grades = await this.plugin.recentGrades(note.id);
    this.section(root, "Recent grades", (box) => {
      if (!grades.length) {
        el(box, "span", "vaultmem-none", "never graded");
        return;
      }
      const table = el(box, "table", "vaultmem-grades");
      for (const g of grades) {
        const row = el(table, "tr");
        el(row, "td", undefined, String(g.review_datetime ?? "").slice(0, 16).replace("T", " "));
        el(row, "td", `vaultmem-grade-${g.rating}`, String(g.rating));
        el(row, "td", "vaultmem-muted", `${g.state_before} → ${g.state}`);
      }
    });
    el(root, "div", "vaultmem-muted", `created ${formatStamp(note.created).replace("T", " ")} · due ${formatStamp(note.due).replace("T", " ")}`);
  }

  private section(root: HTMLElement, title: string, fill: (box: HTMLElement) => void): void {
    const box = el(root, "div", "vaultmem-section");
    el(box, "div", "vaultmem-section-title", title);
    fill(box);
  }

  private link(parent: HTMLElement, link: string, source: string): void {
    const target = link.replace(/^\[\[|\]\]$/g, "");
    const a = el(parent, "a", "internal-link", target);
    a.dataset.href = target;
    a.addEventListener("click", () => void this.app.workspace.openLinkText(target, source));
  }
}
