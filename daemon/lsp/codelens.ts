/**
 * The CodeLens above each agent function: its reward summary ("reward 0.62 ▲0.31 · 128 rollouts", or
 * "no rollouts yet"), then "▶ Run", "⚡ Train" and "Trajectories". The commands are the extension's
 * (protocol/commands.ts); their first argument is the agent id.
 */
import type { CodeLens } from 'vscode-languageserver';
import { COMMANDS } from '../../protocol/commands.js';
import type { AgentInfo, AgentStats } from '../../protocol/lsp.js';

function signed(trend: number): string {
  if (Math.abs(trend) < 0.005) return '±0.00';
  return `${trend > 0 ? '▲' : '▼'}${Math.abs(trend).toFixed(2)}`;
}

/** The summary lens title; `stats` undefined means not fetched yet (daemon up) or daemon down. */
export function formatStats(stats: AgentStats | undefined, daemonUp: boolean, starting = false): string {
  if (!daemonUp) return starting ? 'Agent Lightning daemon starting…' : 'Agent Lightning daemon not running';
  if (!stats) return 'reward …';
  const parts: string[] = [];
  const count = `${stats.rollouts}${stats.rolloutsCapped ? '+' : ''} rollout${stats.rollouts === 1 && !stats.rolloutsCapped ? '' : 's'}`;
  if (stats.rollouts === 0) parts.push('no rollouts yet');
  else if (stats.latestReward === null) parts.push(`no reward yet · ${count}`);
  else parts.push(`reward ${stats.latestReward.toFixed(2)}${stats.trend === null ? '' : ' ' + signed(stats.trend)} · ${count}`);
  if (stats.active > 0) parts.push(`${stats.active} running`);
  return parts.join(' · ');
}

export function lensesFor(agent: AgentInfo, stats: AgentStats | undefined, daemonUp: boolean, starting = false): CodeLens[] {
  const range = { start: agent.range.start, end: agent.range.start };
  const args = [agent.id, agent.uri];
  const summary = daemonUp
    ? { title: formatStats(stats, true), command: COMMANDS.trajectories, arguments: args }
    : { title: formatStats(stats, false, starting), command: COMMANDS.startDaemon, arguments: [] };
  return [
    { range, command: summary },
    { range, command: { title: '▶ Run', command: COMMANDS.run, arguments: args } },
    { range, command: { title: '⚡ Train', command: COMMANDS.train, arguments: args } },
    { range, command: { title: 'Trajectories', command: COMMANDS.trajectories, arguments: args } },
  ];
}
