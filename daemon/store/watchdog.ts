/**
 * Watchdog: runs store.runHealthCheck on a timer, so timeouts, unresponsive attempts and retries happen
 * even when nobody writes to the store (agent-lightning v0 only checked on writes and lost rollouts, #218).
 * Safe with several daemons on one PostgreSQL database: the health check itself is concurrency-safe.
 */
import type { HealthCheckResult, LightningStore } from '../../protocol/lightning-store.js';

export interface WatchdogOptions {
  /** Milliseconds between checks (default 1000). */
  intervalMs?: number;
  /** Called after each check that changed something. */
  onChange?: (result: HealthCheckResult) => void;
  /** Called when a check throws (default: logged to stderr); the timer keeps running. */
  onError?: (error: unknown) => void;
}

export class Watchdog {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<unknown> | null = null;
  /** Number of checks completed (for status and tests). */
  checks = 0;

  constructor(
    private readonly store: LightningStore,
    private readonly options: WatchdogOptions = {},
  ) {}

  start(): this {
    if (this.timer) return this;
    const interval = this.options.intervalMs ?? 1000;
    this.timer = setInterval(() => {
      if (!this.running)
        this.running = this.tick().finally(() => {
          this.running = null;
        });
    }, interval);
    this.timer.unref();
    return this;
  }

  /** Runs one check now. */
  async tick(): Promise<HealthCheckResult | null> {
    try {
      const result = await this.store.runHealthCheck();
      this.checks++;
      const changed = result.timedOut.length + result.unresponsive.length + result.requeued.length + result.failed.length > 0;
      if (changed) this.options.onChange?.(result);
      return result;
    } catch (error) {
      (this.options.onError ?? ((e) => console.error('[agl watchdog] health check failed:', e)))(error);
      return null;
    }
  }

  /** Stops the timer and waits for a check in progress. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running;
  }
}
