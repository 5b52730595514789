/**
 * Entry of the optimization view (bundled to dist/webview/optimize.js): one prompt optimization (`agl optimize`, a run
 * of kind 'optimize') as the daemon assembles it (protocol/webview-optimize.ts OptimizationView): a run picker and what
 * the run spent, the best val score against rollouts used (curve.ts), the lineage tree (lineage.ts), the selected
 * candidate's diff against its parent with its reflection beside it (candidate.ts), and the candidate x val-task grid
 * with the Pareto front marked (grid.ts). The panel says when the run moved and the view reads it again, keeping the
 * selection and the keyboard's focus; a candidate's rollouts and a cell's rollout open in the trajectory viewer.
 */
import '@vscode-elements/elements/dist/main.js';
import '@vscode/codicons/dist/codicon.css';
import 'uplot/dist/uPlot.min.css';
import '../shared/theme.css';
import '../shared/run-chart.css';
import './optimize.css';
import type { OptimizationSummary } from '../../protocol/prompts.js';
import type { TrainingRun } from '../../protocol/store.js';
import { agentShortName } from '../../protocol/agent-id.js';
import { OptimizeProtocol as P, type OptimizationCandidate, type OptimizationView, type OptimizeState } from '../../protocol/webview-optimize.js';
import { HostConnection } from '../shared/host.js';
import { h, icon, mount } from '../shared/dom.js';
import { errorState, shouldReload } from '../shared/recovery.js';
import { candidatePanel } from './candidate.js';
import { BestValChart } from './curve.js';
import { ScoreGrid } from './grid.js';
import { LineageTree } from './lineage.js';
import { bestCandidate, fmtScore, nextStep, STATUS_LOOK } from './model.js';

const runName = (r: TrainingRun) => `${r.id} · ${agentShortName(r.agent)} · ${r.status}`;

/** The detail pane before any candidate: the seed being read while the run runs, else why there is none (a spinner only while it runs). */
/** The run's next step (promote its best, or how to clear what it promoted), on a line of its own. */
function nextStepLine(v: OptimizationView, best: OptimizationCandidate | null): HTMLElement | null {
  const step = nextStep(v, best);
  return step ? h('div', { class: 'next-step' }, icon(step.startsWith('Next') ? 'arrow-right' : 'info'), ` ${step}`) : null;
}

function noCandidate(v: OptimizationView): HTMLElement {
  if (v.run.status === 'running')
    return h('div', { class: 'empty-state' }, icon('loading', 'codicon-modifier-spin'), h('p', {}, 'Reading the seed’s prompts…'));
  return h('div', { class: 'empty-state' }, icon('info'), h('p', {}, `The run ended (${v.run.status}) before its seed was read: it has no candidate.`));
}

class OptimizationViewer {
  state: OptimizeState;
  runs: TrainingRun[] = [];
  view: OptimizationView | null = null;
  private readonly header = h('header', { class: 'view-header' });
  private readonly facts = h('div', { class: 'run-facts' });
  private readonly detail = h('div', { class: 'detail' });
  private readonly body = h('div', { class: 'body' });
  private readonly chart = new BestValChart((id) => this.select(id));
  private readonly lineage = new LineageTree((id) => this.select(id));
  private readonly grid = new ScoreGrid(
    (id) => this.select(id),
    (rolloutId) => this.host.command(P.openRollout, { rolloutId }),
  );
  /** A read under way, and whether the run moved again meanwhile (read once more after it). */
  private reading: Promise<void> | null = null;
  private again = false;

  constructor(
    private readonly host: HostConnection<OptimizeState>,
    private readonly root: HTMLElement,
  ) {
    this.state = host.state ?? { runId: null };
    mount(root, this.header, this.facts, this.body);
  }

  private save(patch: Partial<OptimizeState>): void {
    this.state = { ...this.state, ...patch };
    this.host.state = this.state;
  }

  private readonly startDaemon = (): void => this.host.command(P.startDaemon, {});

  drawHeader(): void {
    const select = h(
      'vscode-single-select',
      { class: 'run-select', 'aria-label': 'Optimization run' },
      ...this.runs.map((r) => h('vscode-option', { value: r.id, selected: r.id === this.state.runId }, runName(r))),
    );
    select.addEventListener('change', () => void this.showRun((select as unknown as { value: string }).value));
    mount(this.header, h('h1', {}, icon('sparkle'), ' Prompt optimization'), h('div', { class: 'spacer' }), this.runs.length ? select : null);
  }

  /** What the run is and what it spent: agent, prompts, algorithm, rollouts of the budget, candidates by status, calls. */
  private drawFacts(v: OptimizationView): void {
    const s = v.run.summary as OptimizationSummary;
    const config = v.run.config as { prompts?: string[]; algorithm?: string };
    const budget = s.budget ?? v.run.totalSteps;
    const counts = Object.entries(STATUS_LOOK)
      .map(([status, look]) => [look, v.candidates.filter((c) => c.status === status).length] as const)
      .filter(([, n]) => n > 0)
      .map(([look, n]) => h('span', { class: 'count', title: look.title }, icon(look.icon), ` ${n} ${look.word}`));
    const best = bestCandidate(v);
    const seed = v.candidates[0];
    mount(
      this.facts,
      h('span', { class: `pill status-${v.run.status}` }, v.run.status, v.run.status === 'running' ? h('span', { class: 'live-dot' }) : null),
      h('span', { class: 'cfg', title: v.run.agent }, 'agent ', h('b', {}, v.run.agent)),
      config.prompts ? h('span', { class: 'cfg' }, 'prompts ', h('b', {}, config.prompts.join(', '))) : null,
      config.algorithm ? h('span', { class: 'cfg' }, h('b', {}, config.algorithm)) : null,
      h('span', { class: 'kpi rollouts-used' }, 'rollouts ', h('b', {}, `${v.rolloutsUsed} / ${budget}`)),
      h('span', { class: 'kpi val-gain' }, 'val ', h('b', {}, `${fmtScore(seed?.valMean)} → ${fmtScore(best?.valMean)}`)),
      s.scores && (s.scores.seed.test !== null || s.scores.best.test !== null)
        ? h(
            'span',
            { class: 'kpi test-gain', title: 'held-out test tasks, scored at the end' },
            'test ',
            h('b', {}, `${fmtScore(s.scores.seed.test)} → ${fmtScore(s.scores.best.test)}`),
          )
        : null,
      h('span', { class: 'counts' }, ...counts),
      h(
        'span',
        { class: 'cfg calls', title: 'the optimizer model’s calls (reflections, critiques, edits, merges)' },
        `${v.calls.count} optimizer calls · ${v.calls.tokens.prompt + v.calls.tokens.completion} tokens${v.calls.cost !== null ? ` · cost ${v.calls.cost.toFixed(4)}` : ''}`,
      ),
      s.judgeCalls !== undefined
        ? h(
            'span',
            { class: 'cfg judge-calls', title: 'the LLM judge’s calls: it scored the rollouts (the reward); counted at each val score' },
            `${s.judgeCalls} judge calls · ${(s.judgeTokens?.prompt ?? 0) + (s.judgeTokens?.completion ?? 0)} tokens${typeof s.judgeCost === 'number' ? ` · cost ${s.judgeCost.toFixed(4)}` : ''}`,
          )
        : null,
      s.error ? h('span', { class: 'error-text', role: 'alert' }, s.error) : null,
      nextStepLine(v, best),
    );
  }

  /** Draws the view; the selected candidate stays (else the best, else the newest). */
  private draw(v: OptimizationView): void {
    this.view = v;
    const best = bestCandidate(v);
    const picked = v.candidates.find((c) => c.id === this.state.candidateId) ?? best ?? v.candidates.at(-1) ?? null;
    this.drawFacts(v);
    if (!this.body.contains(this.grid.root)) {
      mount(this.body, h('div', { class: 'columns' }, h('div', { class: 'left' }, this.chart.root, this.lineage.root), this.detail), this.grid.root);
    }
    this.chart.draw(v);
    this.lineage.draw(v, picked?.id ?? null);
    this.grid.draw(v, picked?.id ?? null);
    mount(
      this.detail,
      picked
        ? candidatePanel(picked, v, best?.id ?? null, {
            select: (id) => this.select(id),
            openRollouts: (id) => this.host.command(P.openRollouts, { runId: v.run.id, candidateId: id }),
            apply: (id) => this.host.command(P.apply, { runId: v.run.id, candidateId: id }),
          })
        : noCandidate(v),
    );
  }

  select(candidateId: string): void {
    this.save({ candidateId });
    if (this.view) this.draw(this.view);
    this.detail.querySelector<HTMLElement>('.candidate-card')?.scrollIntoView({ block: 'nearest' });
  }

  /** Reads the shown run's view again (one read at a time; one more when it moved meanwhile). */
  reload(): Promise<void> {
    if (this.reading) {
      this.again = true;
      return this.reading;
    }
    const runId = this.state.runId;
    if (!runId) return Promise.resolve();
    this.reading = (async () => {
      try {
        const v = await this.host.request(P.getView, { runId });
        if (this.state.runId === runId) this.draw(v);
      } catch (err) {
        mount(
          this.body,
          errorState(`Could not read optimization ${runId}: ${(err as Error).message}`, { retry: () => void this.reload(), startDaemon: this.startDaemon }),
        );
      } finally {
        this.reading = null;
      }
      if (this.again) {
        this.again = false;
        await this.reload();
      }
    })();
    return this.reading;
  }

  async showRun(runId: string, candidateId?: string): Promise<void> {
    if (runId !== this.state.runId) this.save({ runId, candidateId: candidateId ?? null });
    else if (candidateId) this.save({ candidateId });
    this.drawHeader();
    const run = this.runs.find((r) => r.id === runId);
    this.host.command(P.watchRun, { runId, agent: run?.agent ?? '' });
    await this.reload();
  }

  async start(): Promise<void> {
    try {
      this.runs = await this.host.request(P.listRuns, {});
    } catch (err) {
      mount(
        this.body,
        errorState(`Could not list optimizations: ${(err as Error).message}`, { retry: () => void this.start(), startDaemon: this.startDaemon }),
      );
      return;
    }
    const runId = this.state.runId && this.runs.some((r) => r.id === this.state.runId) ? this.state.runId : this.runs[0]?.id;
    this.drawHeader();
    if (runId) return this.showRun(runId, this.state.candidateId ?? undefined);
    mount(
      this.body,
      h(
        'div',
        { class: 'empty-state' },
        icon('sparkle'),
        h('p', {}, 'No prompt optimization yet.'),
        h(
          'p',
          { class: 'muted' },
          'Start one with "Agent Lightning: Optimize This Prompt" (or the Optimize lens above an llm.prompt call); it fills in here live.',
        ),
      ),
    );
  }
}

const host = new HostConnection<OptimizeState>();
const root = document.getElementById('app') ?? document.body.appendChild(h('div', { id: 'app' }));
const viewer = new OptimizationViewer(host, root);
host.onNotification(P.changed, ({ runId }) => runId === viewer.state.runId && void viewer.reload());
host.onNotification(P.runAppeared, () => {
  if (!viewer.view) void viewer.start();
  else
    void host.request(P.listRuns, {}).then((runs) => {
      viewer.runs = runs;
      viewer.drawHeader();
    });
});
host.onNotification(P.show, ({ runId, candidateId }) => {
  if (viewer.runs.some((r) => r.id === runId)) void viewer.showRun(runId, candidateId);
  else
    void host.request(P.listRuns, {}).then((runs) => {
      viewer.runs = runs;
      void viewer.showRun(runId, candidateId);
    });
});
host.onNotification(P.state, ({ up }) => {
  if (up && shouldReload(root, host.waiting)) void (viewer.view ? viewer.reload() : viewer.start());
});
void viewer.start();
host.ready();
