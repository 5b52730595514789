/**
 * Request counters for GET /metrics, kept in memory: a count per status and a latency histogram per route,
 * labelled by route pattern (express's matched route, or the hot path's declared path: the same label),
 * rendered in the Prometheus text format with the lines other parts add through addCollector().
 */
import type { RequestHandler } from 'express';

const BUCKETS_S = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10, 60];

interface RouteStats {
  count: Map<number, number>;
  buckets: number[];
  sum: number;
  n: number;
}

/** Request counters kept in memory; a Map lookup and a few adds per request. */
export class RequestMetrics {
  private readonly routes = new Map<string, RouteStats>();
  private readonly collectors: Array<() => string | Promise<string>> = [];

  readonly middleware: RequestHandler = (req, res, next) => {
    const start = process.hrtime.bigint();
    res.once('finish', () => {
      // Label by route pattern (never the raw URL: ids would explode the series count).
      // A router's mount path is gone from req.baseUrl once an error left it: routers note it in res.locals.routeBase.
      const route = req.route ? `${(res.locals.routeBase as string | undefined) ?? req.baseUrl}${req.route.path as string}` : '(unmatched)';
      this.observe(`${req.method} ${route}`, res.statusCode, Number(process.hrtime.bigint() - start) / 1e9);
    });
    next();
  };

  observe(key: string, status: number, seconds: number): void {
    let s = this.routes.get(key);
    if (!s) {
      s = { count: new Map(), buckets: new Array(BUCKETS_S.length).fill(0), sum: 0, n: 0 };
      this.routes.set(key, s);
    }
    s.count.set(status, (s.count.get(status) ?? 0) + 1);
    for (let i = 0; i < BUCKETS_S.length; i++)
      if (seconds <= BUCKETS_S[i]) {
        s.buckets[i]++;
        break;
      }
    s.sum += seconds;
    s.n++;
  }

  /** Adds lines (complete Prometheus text, with # HELP/# TYPE) to every scrape. */
  addCollector(collect: () => string | Promise<string>): void {
    this.collectors.push(collect);
  }

  async render(): Promise<string> {
    const esc = (v: string) => v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
    const lines = ['# HELP agl_http_requests_total HTTP requests answered, by method, route and status.', '# TYPE agl_http_requests_total counter'];
    for (const [key, s] of this.routes) {
      const [method, route] = key.split(' ');
      for (const [status, n] of s.count) lines.push(`agl_http_requests_total{method="${method}",route="${esc(route)}",status="${status}"} ${n}`);
    }
    lines.push('# HELP agl_http_request_duration_seconds Time to answer, by method and route.', '# TYPE agl_http_request_duration_seconds histogram');
    for (const [key, s] of this.routes) {
      const [method, route] = key.split(' ');
      const labels = `method="${method}",route="${esc(route)}"`;
      let cumulative = 0;
      BUCKETS_S.forEach((le, i) => {
        cumulative += s.buckets[i];
        lines.push(`agl_http_request_duration_seconds_bucket{${labels},le="${le}"} ${cumulative}`);
      });
      lines.push(`agl_http_request_duration_seconds_bucket{${labels},le="+Inf"} ${s.n}`);
      lines.push(`agl_http_request_duration_seconds_sum{${labels}} ${s.sum}`, `agl_http_request_duration_seconds_count{${labels}} ${s.n}`);
    }
    for (const collect of this.collectors) {
      try {
        lines.push((await collect()).trimEnd());
      } catch (err) {
        lines.push(`# collector failed: ${esc(String((err as Error).message))}`);
      }
    }
    return lines.join('\n') + '\n';
  }
}
