/**
 * The extension's VS Code command ids, declared once: package.json `contributes.commands` lists them (a test
 * checks that it lists exactly these), extension/commands.ts registers them, and the CodeLens the language
 * server serves (daemon/lsp/codelens.ts) invokes them with the agent id as first argument (an `llm.prompt` call's
 * lenses: Optimize This Prompt with the prompt (protocol/lsp.ts PromptInfo), the optimization view with a run id).
 */
export const COMMANDS = {
  train: 'agentLightning.train',
  run: 'agentLightning.runRollout',
  trajectories: 'agentLightning.openTrajectoryViewer',
  openTrainingDashboard: 'agentLightning.openTrainingDashboard',
  markAsAgent: 'agentLightning.markAsAgent',
  optimizePrompt: 'agentLightning.optimizePrompt',
  openOptimizationView: 'agentLightning.openOptimizationView',
  startDaemon: 'agentLightning.startDaemon',
  stopDaemon: 'agentLightning.stopDaemon',
  restartDaemon: 'agentLightning.restartDaemon',
  showDaemonLog: 'agentLightning.showDaemonLog',
  showActions: 'agentLightning.showActions',
  /** Two eval runs side by side (args: the baseline's run id, the other's; none: picked). */
  compareEvalRuns: 'agentLightning.compareEvalRuns',
  /** A Test Explorer item's rollout in the trajectory viewer (arg: the test item; none: a pick of the last failures). */
  openEvalTrajectory: 'agentLightning.openEvalTrajectory',
} as const;

export type CommandId = (typeof COMMANDS)[keyof typeof COMMANDS];
