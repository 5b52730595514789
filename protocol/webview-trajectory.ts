/**
 * Messages between the trajectory viewer webview (webview/trajectory/) and its panel in the extension
 * host (extension/panels/trajectory-panel.ts). The host fetches from the daemon; the webview derives
 * and draws (span tree, waterfall, chat, credit, GRPO groups, states).
 */
import type { RolloutSearchRequest, RolloutsViewRequest } from './api.js';
import type { CallInfo, RunRoles } from './call-roles.js';
import type { ServedKey, ServedModel } from './served-by.js';
import type { EpisodeAnswer, PromptReading } from './span-reading.js';
import type { Attempt, Rollout, RolloutMode, RolloutStatus, RunKind, Span, Transition } from './store.js';
import type { ScaleRewards } from './grpo-advantage.js';
import type { HumanLabel, StoredHumanLabel } from './human-label.js';
import { DaemonMessages, commandType, notificationType, requestType } from './webview-ipc.js';

export const TRAJECTORY_VIEW_TYPE = 'agl.trajectoryViewer';

/**
 * What the rollouts list shows: the store API's filters, search and sort (protocol/api.ts documents each),
 * kept with setState and shown as chips. `candidate`, `promptVersion` and `servedBy` are set from elsewhere (a rollout's
 * prompt versions or the model that answered it, an optimization's candidate) and shown as chips the user can remove.
 */
export type RolloutFilter = Pick<
  RolloutSearchRequest,
  | 'status'
  | 'mode'
  | 'agent'
  | 'resourcesVersion'
  | 'search'
  | 'rewardMin'
  | 'rewardMax'
  | 'runId'
  | 'step'
  | 'candidate'
  | 'promptVersion'
  | 'servedBy'
  | 'hasError'
  | 'sort'
  | 'order'
>;

/** One page of the list: `limit` rows from `offset` (the virtual list asks for the rows coming into view). */
export type RolloutPageRequest = RolloutsViewRequest;

/** One line of the rollouts table. */
export interface RolloutRow {
  rollout: Rollout;
  /** The latest attempt's final reward (its last reward span); null when it emitted none. */
  reward: number | null;
  /** Resources version the rollout ran with, when known. */
  resourcesVersion: number | null;
  /** The latest attempt's run time (start to end), as the detail view shows it; null while it runs. */
  durationMs: number | null;
  /** When the latest attempt started (the time before it was spent queued); null before a claim. */
  startedAt: number | null;
  /** The latest attempt's error message, if any. */
  error: string | null;
  /** Spans of the latest attempt with an error status. */
  errorSpans: number;
  /** What answered the latest attempt's LLM calls (protocol/served-by.ts), in the order first seen; empty when no call says. */
  served: ServedKey[];
  /** Whether any runner is connected to claim it (protocol/runner-presence.ts): a queued row says when none is. */
  runnerConnected: boolean;
}

/** A run to filter by: a training run, or a prompt optimization (its rollouts carry its id too). */
export interface RunChoice {
  id: string;
  agent: string;
  kind: RunKind;
  createdAt: number;
}

/**
 * One page of the rollouts list, assembled by the daemon in one request (POST /v1/agl/views/rollouts, daemon/store/
 * views-rollouts.ts rolloutsPage): the store filters, searches, sorts, counts and summarises, without reading spans.
 */
export interface RolloutPage {
  items: RolloutRow[];
  /** Where `items` start among all the rollouts that match. */
  offset: number;
  /** Every rollout that matches the filter (exact). */
  total: number;
  /** Every rollout in the store: `storeTotal - total` are hidden by the filters. */
  storeTotal: number;
  /** Choices for the filters (sent by the host so the webview bundle need not carry zod). */
  statuses: RolloutStatus[];
  modes: RolloutMode[];
  agents: string[];
  resourcesVersions: number[];
  runs: RunChoice[];
}

/**
 * Everything about one rollout that the viewer draws, assembled by the daemon in one request (POST /v1/agl/views/rollout,
 * daemon/store/views.ts rolloutView).
 */
export interface RolloutDetail {
  rollout: Rollout;
  attempts: Attempt[];
  /** The attempt whose spans are given. */
  attemptId: string | null;
  spans: Span[];
  /** The algorithm's transitions for these spans (credit, advantage), newest training step first. */
  transitions: Transition[];
  resourcesVersion: number | null;
  /** What answered the attempt's LLM calls (protocol/served-by.ts), in the order first seen. */
  served: ServedModel[];
  /** Whether any runner is connected (a queued rollout with none says so). */
  runnerConnected: boolean;
  /** Each LLM call of the attempt in call-number order: its number, role, policy and version, trained or not and why. */
  calls: CallInfo[];
  /** The selection rule of the training run that made the rollout (or trained on it); null when none did. */
  roles: RunRoles | null;
  /** The episode's answer (protocol/span-reading.ts episodeAnswer). */
  answer: EpisodeAnswer;
  /** The prompt versions the attempt read (`llm.prompt`), in the order first read (protocol/span-reading.ts promptVersions). */
  prompts: PromptReading[];
}

/** The task's expected output, shown beside a group's samples. */
export interface ExpectedAnswer {
  /** The task's fields holding its expected output (span-reading.ts EXPECTED_TASK_KEYS: answer, gold, ...), as given. */
  fields: { key: string; value: unknown }[];
  /** What the agent emitted as the output it scored against (kind `expected` / `<name>.expected`): sql's gold query and rows. */
  emitted: EpisodeAnswer | null;
}

/** One sample of a GRPO group: a rollout of the group's task. */
export interface GroupSample {
  rollout: Rollout;
  reward: number | null;
  /** The spans of the attempt the algorithm used. */
  spans: Span[];
  transitions: Transition[];
  /** Why the attempt failed, when it did (the attempt's error message). */
  error: string | null;
  /** The episode's answer (protocol/span-reading.ts episodeAnswer): what the group view shows and merges by. */
  answer: EpisodeAnswer;
  /** Each LLM call in call-number order, with its role, policy, version and training (protocol/call-roles.ts). */
  calls: CallInfo[];
}

/**
 * The numbers a group's stored advantages came from (protocol/grpo-advantage.ts): the group is every call
 * of its rollouts, so mean and std are over the calls' credits. Read from the stored transitions and the
 * run's recorded config; the advantages shown are the stored ones, never recomputed.
 */
export interface GroupAdvantage {
  /** Calls (transitions) in the group, and their credits' mean and unbiased std. */
  calls: number;
  mean: number;
  std: number;
  /** The whole step's calls' std (what 'batch' scaling divides by). */
  batchStd: number;
  /**
   * How the group's calls' advantages were scaled (their policy's grpo.scaleRewards: the run's training.grpo, or with
   * policies per role each role's own); null when the run did not record it, or its policies scaled differently (byPolicy).
   */
  scaleRewards: ScaleRewards | null;
  /** The GRPO variant of the group's calls' policy (training.grpo.variant, or a role policy's own), when recorded and shared. */
  variant: string | null;
  /** The group's calls come from policies that scaled advantages differently: each policy with its settings and its calls here. */
  byPolicy?: { policy: string; roles: string[] | null; scaleRewards: ScaleRewards; variant: string; calls: number }[];
  /** What each credit's distance to the mean was divided by; null when the scaling is unknown. */
  divisor: number | null;
  /** Whether every stored advantage equals (credit - mean) / divisor (to 1e-6); null when the scaling is unknown. */
  matchesStored: boolean | null;
  /** Every credit equal: GRPO learns nothing from the group. */
  zeroVariance: boolean;
  /**
   * The run grouped by task and role (training.groupBy task-role): each role's calls are compared among themselves,
   * so the numbers the stored advantages came from are these, one per role (`matchesStored` above covers them all).
   */
  byRole?: {
    role: string | null;
    calls: number;
    mean: number;
    std: number;
    /** How this role's policy scaled its advantages (null: not recorded). */
    scaleRewards?: ScaleRewards | null;
    divisor: number | null;
    matchesStored: boolean | null;
    zeroVariance: boolean;
  }[];
}

export interface GroupData {
  groupId: string;
  /** The task (the rollouts' shared input), whole. */
  input: unknown;
  samples: GroupSample[];
  /** Null for a group not trained on yet (no transitions). */
  advantage: GroupAdvantage | null;
  /** How many different answers the samples gave (samples that recorded none are not counted). */
  distinctAnswers: number;
  /** The task's expected output, when the task or the agent gives one. */
  expected: ExpectedAnswer | null;
}

export interface GroupQuery {
  runId?: string;
  step?: number;
  /** Show the group this rollout belongs to. */
  rolloutId?: string;
}

export interface GroupPage {
  runId: string | null;
  step: number | null;
  /** Steps of the run that have transitions, to move between them. */
  steps: number[];
  groups: GroupData[];
  /** The run's selection rule (which roles it trains, by which policy); null without a run. */
  roles: RunRoles | null;
}

/**
 * What "Add to dataset" adds (extension/panels/dataset-add.ts): one rollout, with the expected answer the user corrected
 * when they did; the rollouts selected in the list; or every rollout the list's filter shows. Each becomes a dataset row
 * (protocol/dataset-rows.ts) appended to a `*.eval.jsonl` file the user picks.
 */
export type DatasetTarget =
  | { kind: 'rollout'; rolloutId: string; corrected?: { expected: unknown } }
  | { kind: 'selection'; rolloutIds: string[] }
  | { kind: 'filter'; filter: RolloutFilter };

/**
 * What Add to dataset did: the file (as the workspace names it), rows added, the line of the row a correction replaced
 * (the user agreed: its task was there with another expected answer), rows left out (task there already), rollouts
 * with no answer.
 */
export interface DatasetAdded {
  file: string;
  added: number;
  replacedLine?: number;
  duplicates: number;
  noAnswer: number;
}

/** What Add to dataset did, in the words the viewer's status line and the extension's message both use. */
export function datasetAddedText(r: DatasetAdded): string {
  const parts = [
    r.replacedLine !== undefined
      ? `the row on line ${r.replacedLine} of ${r.file} now expects the corrected answer`
      : `${r.added} row${r.added === 1 ? '' : 's'} added to ${r.file}`,
    r.duplicates ? `${r.duplicates} left out: ${r.file} holds their task already` : null,
    r.noAnswer ? `${r.noAnswer} recorded no answer` : null,
  ];
  return `${parts.filter(Boolean).join('; ')}.`;
}

/** Which screen the viewer shows; persisted with setState so a restored panel reopens there. */
export type TrajectoryView =
  | { kind: 'rollouts' }
  | { kind: 'rollout'; rolloutId: string; attemptId?: string; tab?: 'timeline' | 'states'; selectedSpanId?: string }
  | ({ kind: 'group' } & GroupQuery);

export interface TrajectoryState {
  view: TrajectoryView;
  filter: RolloutFilter;
}

export const TrajectoryProtocol = {
  listRollouts: requestType<RolloutPageRequest, RolloutPage>('trajectory/listRollouts'),
  getRollout: requestType<{ rolloutId: string; attemptId?: string }, RolloutDetail>('trajectory/getRollout'),
  getGroups: requestType<GroupQuery, GroupPage>('trajectory/getGroups'),
  /**
   * Open the agent's source at the line that made a call (code.filepath / code.lineno), or, when the call
   * has no location, at the definition of `symbol` (the agent function) in `filepath`.
   */
  openCode: commandType<{ filepath: string; lineno: number | null; symbol?: string }>('trajectory/openCode'),
  openDashboard: commandType<{ runId: string }>('trajectory/openDashboard'),
  /** Adds rows to a dataset the user picks (a confirmation with the count first, for a selection or a filter); null: cancelled. */
  addToDataset: requestType<DatasetTarget, DatasetAdded | null>('trajectory/addToDataset'),
  /** Labels the rollout's attempt good, bad or with a score (protocol/human-label.ts), stored through the daemon; answers the label read back. */
  labelRollout: requestType<{ rolloutId: string; attemptId: string; label: HumanLabel }, StoredHumanLabel>('trajectory/labelRollout'),
  /** Host -> webview: switch to this view (the panel was opened or revealed for it). */
  show: notificationType<{ view: TrajectoryView; filter?: RolloutFilter }>('trajectory/show'),
  /** Host -> webview: rollouts changed or their spans landed (the daemon's events, while the panel is visible); the
   *  list re-reads its page, a rollout on screen re-reads itself when it is among `rolloutIds` or `all` is set
   *  (after a reconnection, or more changed than the event lists). */
  changed: notificationType<{ rolloutIds: string[]; all?: boolean }>('trajectory/changed'),
  ...DaemonMessages,
} as const;
