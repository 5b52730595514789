/**
 * The `engine` section of the training config (protocol/train-config.ts: train.yaml, and the flags of agl train /
 * sft / serve) and what openPolicy needs from it. Kept apart from config.ts so that the daemon reads it without
 * loading the training code (and TF.js).
 */
import type { EngineConfig } from '../../protocol/train-config.js';

export { EngineSection, SamplerSection, type EngineConfig, type SamplerConfig } from '../../protocol/train-config.js';

/**
 * openPolicy's engine options for a config's engine section. `serving`: the policy is only served (agl serve), so the
 * torch engine keeps no float32 master weights or moments for it.
 */
export function engineOptions(e: EngineConfig, o: { dataDir?: string; log?: (line: string) => void; serving?: boolean } = {}) {
  return {
    engine: e.kind,
    torch: {
      procs: e.procs,
      device: e.device,
      dtype: e.dtype,
      attn: e.attention,
      python: e.python,
      threads: e.threads,
      gradientCheckpointing: e.gradientCheckpointing,
      shard: e.shard,
      nodes: e.nodes,
      nodeRank: e.nodeRank,
      rdzv: e.rdzv,
      trainable: o.serving ? ('none' as const) : e.lora ? ('adapters' as const) : ('full' as const),
      dataDir: o.dataDir,
      log: o.log,
    },
  };
}
