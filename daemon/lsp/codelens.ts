/**
 * The CodeLens above each agent function: its headline number and rollout count ("held-out reward 0.95
 * (from 0.29) · 500+ rollouts", or "no rollouts yet"), with a tooltip saying exactly what the number is
 * (protocol/agent-headline.ts), then "▶ Run", "⚡ Train" and "Trajectories". The commands are the extension's
 * (protocol/commands.ts); their first argument is the agent id.
 */
import type { CodeLens } from 'vscode-languageserver';
import { rolloutCount } from '../../protocol/agent-headline.js';
import { COMMANDS } from '../../protocol/commands.js';
import type { AgentInfo, AgentStats } from '../../protocol/lsp.js';

/** The summary lens title; `stats` undefined means not fetched yet (daemon up) or daemon down. */
export function formatStats(stats: AgentStats | undefined, daemonUp: boolean, starting = false): string {
  if (!daemonUp) return starting ? 'Agent Lightning daemon starting…' : 'Agent Lightning daemon not running';
  if (!stats) return 'reward …';
  const parts: string[] = [stats.headline.text];
  if (stats.rollouts > 0) parts.push(rolloutCount(stats.rollouts, stats.rolloutsCapped));
  if (stats.active > 0) parts.push(`${stats.active} running`);
  return parts.join(' · ');
}

/** The summary lens tooltip: what the number is, and what a click does. */
export function statsTooltip(stats: AgentStats | undefined, daemonUp: boolean): string {
  if (!daemonUp) return 'Start the Agent Lightning daemon';
  if (!stats) return "Reading this agent's results from the store…";
  return `${stats.headline.tooltip}${stats.active > 0 ? ` ${stats.active} queued or running.` : ''} Click to list this agent's rollouts.`;
}

export function lensesFor(agent: AgentInfo, stats: AgentStats | undefined, daemonUp: boolean, starting = false): CodeLens[] {
  const range = { start: agent.range.start, end: agent.range.start };
  const args = [agent.id, agent.uri];
  const summary = daemonUp
    ? { title: formatStats(stats, true), tooltip: statsTooltip(stats, true), command: COMMANDS.trajectories, arguments: args }
    : { title: formatStats(stats, false, starting), tooltip: statsTooltip(stats, false), command: COMMANDS.startDaemon, arguments: [] };
  return [
    { range, command: summary },
    { range, command: { title: '▶ Run', command: COMMANDS.run, arguments: args } },
    { range, command: { title: '⚡ Train', command: COMMANDS.train, arguments: args } },
    {
      range,
      command: { title: 'Trajectories', tooltip: `List the rollouts of ${agent.id}, filtered on this agent`, command: COMMANDS.trajectories, arguments: args },
    },
  ];
}
