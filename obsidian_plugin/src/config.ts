/**
 * `.vaultmem/config.yaml`, the settings a grade needs (vaultmem/config.py has every key).
 * A missing file or key means the default; a broken file is an error naming it, as in the CLI.
 */
import { parse } from "yaml";

export interface Config {
  desired_retention: number;
  maximum_interval_days: number;
  leech_lapses: number;
  strength_initial: number;
  strength_reward: number;
  strength_decay: number;
  strength_idle_days: number;
  strength_floor: number;
  default_tier: string;
}

export const DEFAULT_CONFIG: Config = {
  desired_retention: 0.9, maximum_interval_days: 36500, leech_lapses: 8, strength_initial: 0.5,
  strength_reward: 0.15, strength_decay: 0.85, strength_idle_days: 7.0, strength_floor: 0.05, default_tier: "L1",
};

const SECTIONS: Record<string, Record<string, keyof Config>> = {
  scheduling: { desired_retention: "desired_retention", maximum_interval_days: "maximum_interval_days", leech_lapses: "leech_lapses" },
  strength: { initial: "strength_initial", reward: "strength_reward", decay: "strength_decay", idle_days: "strength_idle_days", floor: "strength_floor" },
  notes: { default_tier: "default_tier" },
};

/** The settings in `text` (the file's content, or null when there is none). Throws on a broken file. */
export function parseConfig(text: string | null, path = ".vaultmem/config.yaml"): Config {
  const config: Config = { ...DEFAULT_CONFIG };
  if (!text) return config;
  let data: unknown;
  try {
    data = parse(text, { version: "1.1" });
  } catch (error) {
    throw new Error(`${path}: not valid YAML (${(error as Error).message.split("\n")[0]}); fix it or delete it to use the defaults`);
  }
  if (data === null || data === undefined) return config;
  if (typeof data !== "object" || Array.isArray(data)) throw new Error(`${path}: expected sections like 'scheduling:'`);
  for (const [section, values] of Object.entries(data as Record<string, unknown>)) {
    const keys = SECTIONS[section];
    if (!keys || !values || typeof values !== "object") continue; // sections a grade does not need
    for (const [key, value] of Object.entries(values as Record<string, unknown>)) {
      const name = keys[key];
      if (!name) continue;
      if (name === "default_tier") {
        config.default_tier = String(value);
        continue;
      }
      const number = Number(value);
      if (typeof value === "boolean" || !Number.isFinite(number)) throw new Error(`${path}: ${section}.${key} should be a number, got ${String(value)}`);
      (config as unknown as Record<string, number>)[name] = name === "maximum_interval_days" || name === "leech_lapses" ? Math.trunc(number) : number;
    }
  }
  return config;
}
