/**
 * The engine flags `agl sft` and `agl serve` share with `agl train` (declared once in protocol/train-options.ts
 * ENGINE_OPTIONS: help text, parsing, the config's `engine` section they fill in).
 */
import { configOverrides, ENGINE_OPTIONS, type EngineFlags } from '../../protocol/train-options.js';
import { EngineSection, type EngineConfig } from '../algorithm/engine-config.js';

export { type EngineFlags };

/** A full engine section: the flags over the defaults; a bad value is an error naming its flag. */
export function engineFromFlags(f: EngineFlags): EngineConfig {
  const given = configOverrides(ENGINE_OPTIONS, f).engine ?? {};
  const r = EngineSection.safeParse(given);
  if (!r.success) {
    const i = r.error.issues[0]!;
    const key = String(i.path[0]);
    const flag = Object.entries(ENGINE_OPTIONS).find(([, o]) => o.config === `engine.${key}`)?.[0] ?? key;
    throw new Error(`--${flag}: ${i.message}`);
  }
  return r.data;
}
