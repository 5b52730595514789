/**
 * The CodeLens above each agent function: its headline number and rollout count ("held-out reward 0.95
 * (from 0.29) · 500+ rollouts", or "no rollouts yet") and, once it has a training run or rollouts without a reward,
 * which reward it trains on ("reward: judge": protocol/reward-source.ts), with a tooltip saying exactly what the
 * number is (protocol/agent-headline.ts), its evals' and prompt optimizations' results each on its own lens ("eval
 * calc.eval 0.94 (Dec 7)", "prompt system: best val 1.00, not promoted": protocol/run-results.ts), then "▶ Run",
 * "⚡ Train" and "Trajectories". The commands are the extension's
 * (protocol/commands.ts); their first argument is the agent id.
 * Above each `llm.prompt(name, seed)` call: "Optimize "name"", with the best val score an optimization of it reached
 * (or how far a running one is), and "Optimization" opening that run's view. Optimize's argument is the prompt
 * (protocol/lsp.ts PromptInfo).
 */
import type { CodeLens, Command } from 'vscode-languageserver';
import { rolloutCount } from '../../protocol/agent-headline.js';
import { COMMANDS } from '../../protocol/commands.js';
import type { AgentInfo, AgentStats, PromptInfo, PromptOptimization } from '../../protocol/lsp.js';
import { describeRewardSource } from '../../protocol/reward-source.js';
import { describeEvalResult, describeOptimizationResult } from '../../protocol/run-results.js';

/** The summary lens title; `stats` undefined means not fetched yet (daemon up) or daemon down. */
export function formatStats(stats: AgentStats | undefined, daemonUp: boolean, starting = false): string {
  if (!daemonUp) return starting ? 'Agent Lightning daemon starting…' : 'Agent Lightning daemon not running';
  if (!stats) return 'reward …';
  const parts: string[] = [stats.headline.text];
  if (stats.rollouts > 0) parts.push(rolloutCount(stats.rollouts, stats.rolloutsCapped));
  if (stats.active > 0) parts.push(`${stats.active} running`);
  if (stats.reward) parts.push(describeRewardSource(stats.reward).text);
  return parts.join(' · ');
}

/** The summary lens tooltip: what the number is, and what a click does. */
export function statsTooltip(stats: AgentStats | undefined, daemonUp: boolean): string {
  if (!daemonUp) return 'Start the Agent Lightning daemon';
  if (!stats) return "Reading this agent's results from the store…";
  const reward = stats.reward ? ` ${describeRewardSource(stats.reward).tooltip}` : '';
  return `${stats.headline.tooltip}${stats.active > 0 ? ` ${stats.active} queued or running.` : ''}${reward} Click to list this agent's rollouts.`;
}

export function lensesFor(agent: AgentInfo, stats: AgentStats | undefined, daemonUp: boolean, starting = false): CodeLens[] {
  const range = { start: agent.range.start, end: agent.range.start };
  const args = [agent.id, agent.uri];
  const summary = daemonUp
    ? { title: formatStats(stats, true), tooltip: statsTooltip(stats, true), command: COMMANDS.trajectories, arguments: args }
    : { title: formatStats(stats, false, starting), tooltip: statsTooltip(stats, false), command: COMMANDS.startDaemon, arguments: [] };
  return [
    { range, command: summary },
    ...(daemonUp && stats ? resultLenses(stats, args).map((command) => ({ range, command })) : []),
    { range, command: { title: '▶ Run', command: COMMANDS.run, arguments: args } },
    { range, command: { title: '⚡ Train', command: COMMANDS.train, arguments: args } },
    {
      range,
      command: { title: 'Trajectories', tooltip: `List the rollouts of ${agent.id}, filtered on this agent`, command: COMMANDS.trajectories, arguments: args },
    },
  ];
}

/** The agent's evals (its rollouts, listed) and each optimized prompt's optimization (its view), a lens each. */
function resultLenses(stats: AgentStats, args: unknown[]): Command[] {
  const evals = stats.evals.map((e) => ({ ...describeEvalResult(e), command: COMMANDS.trajectories, arguments: args }));
  const names = [...new Set(stats.optimizations.flatMap((o) => o.prompts))];
  const prompts = names.flatMap((name) => {
    const run = promptRun(name, stats.optimizations);
    return run ? [{ ...describeOptimizationResult(name, run, stats.promoted), command: COMMANDS.openOptimizationView, arguments: [run.runId] }] : [];
  });
  return [...evals, ...prompts].map(({ text, tooltip, command, arguments: a }) => ({ title: text, tooltip, command, arguments: a }));
}

/**
 * The optimization a prompt's lens tells of: a running one of it (the newest), else the one whose best candidate scored
 * highest on val (the newest on a tie), else the newest; null when the agent has none of that prompt.
 */
export function promptRun(name: string, optimizations: readonly PromptOptimization[]): PromptOptimization | null {
  const of = optimizations.filter((o) => o.prompts.includes(name)).sort((a, b) => b.updatedAt - a.updatedAt);
  const running = of.find((o) => o.status === 'running');
  if (running) return running;
  const scored = of.filter((o) => o.best !== null);
  return scored.length ? scored.reduce((top, o) => (o.best! > top.best! ? o : top)) : (of[0] ?? null);
}

const score = (v: number) => v.toFixed(2);

/** The words after "Optimize "name"": the best val reached (from the seed's), or a running run's progress. */
export function describePromptRun(o: PromptOptimization | null): { text: string; tooltip: string } {
  if (!o) return { text: '', tooltip: 'No optimization of it yet.' };
  const best = o.best === null ? null : `best val ${score(o.best)}${o.seed !== null && o.seed !== o.best ? ` (seed ${score(o.seed)})` : ''}`;
  const where = `optimization ${o.runId}`;
  if (o.status === 'running') {
    return {
      text: `optimizing: ${o.rollouts}/${o.budget} rollouts${best ? ` · ${best}` : ''}`,
      tooltip: `The ${where} is running: ${o.rollouts} of its ${o.budget} rollouts spent${best ? `; its ${best.replace('best val', 'best candidate so far scores')} on val` : ''}.`,
    };
  }
  if (!best) return { text: `${o.status}, not scored`, tooltip: `The ${where} ${o.status} before a candidate was scored on val.` };
  return {
    text: best,
    tooltip: `Mean val score of the best candidate of the ${where} (${o.status}, ${o.rollouts} rollouts)${o.seed !== null ? `; the seed scored ${score(o.seed)} on the same tasks` : ''}.`,
  };
}

/** The lenses above one `llm.prompt` call: Optimize (with what its optimizations reached), and the run's view when one exists. */
export function promptLensesFor(prompt: PromptInfo, stats: AgentStats | undefined): CodeLens[] {
  const range = { start: prompt.range.start, end: prompt.range.start };
  const run = stats ? promptRun(prompt.name, stats.optimizations) : null;
  const said = describePromptRun(run);
  const lenses: CodeLens[] = [
    {
      range,
      command: {
        title: `✦ Optimize "${prompt.name}"${said.text ? ` · ${said.text}` : ''}`,
        tooltip: `Optimize the prompt "${prompt.name}"${prompt.agent ? ` of ${prompt.agent}` : ''} against an optimizer model (agl optimize). ${said.tooltip}`,
        command: COMMANDS.optimizePrompt,
        arguments: [prompt],
      },
    },
  ];
  if (run) {
    lenses.push({
      range,
      command: {
        title: 'Optimization',
        tooltip: `Open the view of optimization ${run.runId}: its candidates, their lineage and scores`,
        command: COMMANDS.openOptimizationView,
        arguments: [run.runId],
      },
    });
  }
  return lenses;
}
