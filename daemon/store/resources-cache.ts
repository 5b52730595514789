/**
 * The published resources a rollout runs with, read through one cache over any LightningStore (a local
 * backend in the gateway, the HTTP client AglClient in the runner), and which LLM resource of them serves a
 * call. Shared by the gateway (daemon/server/gateway.ts) and the runner (daemon/runner/execute.ts), so the
 * runner reaches it without importing the server.
 */
import type { LightningStore } from '../../protocol/lightning-store.js';
import type { LlmResource, Resources, Rollout } from '../../protocol/store.js';

/**
 * A rollout's pinned resources by id (published versions never change: cached for good), else the latest,
 * re-read at most every `latestTtlMs` (a new version reaches rollouts that pin none within that time).
 */
export class ResourcesCache {
  private latest: { at: number; value: Resources | null } | null = null;
  private readonly byId = new Map<string, Resources>();

  constructor(
    private readonly store: Pick<LightningStore, 'getResources' | 'getLatestResources'>,
    private readonly latestTtlMs: number,
  ) {}

  /** The resources `rollout` pins (when they exist), else the latest published; null when none is. */
  async forRollout(rollout: Pick<Rollout, 'resourcesId'> | null): Promise<Resources | null> {
    if (rollout?.resourcesId) {
      let pinned = this.byId.get(rollout.resourcesId);
      if (!pinned) {
        pinned = (await this.store.getResources(rollout.resourcesId)) ?? undefined;
        if (pinned) this.byId.set(pinned.id, pinned);
      }
      if (pinned) return pinned;
    }
    if (!this.latest || Date.now() - this.latest.at > this.latestTtlMs) this.latest = { at: Date.now(), value: await this.store.getLatestResources() };
    return this.latest.value;
  }
}

/** The LLM resource for a requested model: same model name first, then the one named `llm`, then any. */
export function pickLlmResource(resources: Resources | null, model: string | undefined): LlmResource | null {
  if (!resources) return null;
  const llms = Object.entries(resources.resources).filter(([, r]) => r.type === 'llm') as [string, LlmResource][];
  return (llms.find(([, r]) => r.model === model) ?? llms.find(([name]) => name === 'llm') ?? llms[0])?.[1] ?? null;
}
