/**
 * The status bar item: the daemon's state (starting / ready / down / stopped) and, while training, the
 * progress ("training 3/10 · reward 0.41"). Clicking it opens the actions quick pick.
 */
import * as vscode from 'vscode';
import { COMMANDS } from '../protocol/commands.js';

export type DaemonStatus =
  { kind: 'starting' } | { kind: 'ready'; url: string; attached: boolean; model: string | null } | { kind: 'down'; reason: string } | { kind: 'stopped' };

export interface TrainingStatus {
  agent: string;
  step: number;
  totalSteps: number;
  reward: number | null;
}

export class StatusBar implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem('agentLightning.status', vscode.StatusBarAlignment.Left, 10);
  private daemon: DaemonStatus = { kind: 'starting' };
  private training: TrainingStatus | null = null;

  constructor() {
    this.item.name = 'Agent Lightning';
    this.item.command = COMMANDS.showActions;
    this.render();
    this.item.show();
  }

  setDaemon(status: DaemonStatus): void {
    this.daemon = status;
    this.render();
  }
  setTraining(status: TrainingStatus | null): void {
    this.training = status;
    this.render();
  }

  private render(): void {
    const d = this.daemon;
    this.item.backgroundColor = undefined;
    if (this.training && d.kind === 'ready') {
      const t = this.training;
      const reward = t.reward === null ? '' : ` · reward ${t.reward.toFixed(2)}`;
      this.item.text = `$(sync~spin) Agent Lightning: training ${t.step}/${t.totalSteps || '?'}${reward}`;
      this.item.tooltip = `Training ${t.agent}. Click for actions (open the dashboard, cancel).`;
      return;
    }
    switch (d.kind) {
      case 'starting':
        this.item.text = '$(loading~spin) Agent Lightning: starting…';
        this.item.tooltip = 'Starting the Agent Lightning daemon (or looking for a running one).';
        break;
      case 'ready':
        this.item.text = '$(zap) Agent Lightning: ready';
        this.item.tooltip = `Daemon at ${d.url}${d.attached ? ' (already running, attached)' : ` (started by VS Code, serving ${d.model})`}. Click for actions.`;
        break;
      case 'down':
        this.item.text = '$(error) Agent Lightning: down';
        this.item.tooltip = `The daemon is not running: ${d.reason}\nClick for actions (start, show log).`;
        this.item.backgroundColor = new vscode.ThemeColor('statusBarItem.errorBackground');
        break;
      case 'stopped':
        this.item.text = '$(circle-slash) Agent Lightning: stopped';
        this.item.tooltip = 'The daemon was stopped. Click to start it.';
        break;
    }
  }

  dispose(): void {
    this.item.dispose();
  }
}
