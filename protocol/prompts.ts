/**
 * Prompts as versioned resources, and what prompt optimization (`agl optimize`, daemon/optimize/) keeps of its work:
 *   PromptCandidate   every named prompt's text at once (a candidate is a dict of texts, as GEPA's), with its lineage
 *                     (parents, origin, the critique or reflection that made it, the minibatch it came from) and, once
 *                     decided, its status and scores. Its texts and lineage never change once stored.
 *   OptimizerCall     one call of the optimizer's model (a reflection, critique, edit or merge): request, answer or
 *                     error, tokens and cost. Kept apart from the agent's spans; a resumed run replays them.
 *   PromotedPrompt    the text agents get outside optimization, per agent and prompt name: what `agl optimize promote`
 *                     (or the editor's Apply) published. Nothing replaces a user's prompt without their say.
 * An optimization is a run (TrainingRun of kind 'optimize': its config is OptimizeConfig, its summary
 * OptimizationSummary); each rollout it scores carries RolloutMetadata { runId, taskId, candidate, split }, and its
 * final reward and feedback are that (candidate, task) pair's score: the rollouts are the score cache.
 * How an agent reads a prompt (sdk/llm.ts `llm.prompt(name, seed, vars)`): the rollout's resources hold a
 * `prompt_template` named after it (a candidate being scored) -> the promoted text for the rollout's agent -> the seed.
 */
import { z } from 'zod';
import { PROMPT_NAME_PATTERN } from './prompt-template.js';
import { ClientJsonObject, RUN_KINDS, RunKind } from './store.js';

/** A prompt's name as agents use it in `llm.prompt(name, ...)`: letters, digits, `_`, `-`, `.`; 1-64 characters. */
export const PromptName = z.string().regex(PROMPT_NAME_PATTERN, 'a prompt name is 1-64 letters, digits, _, - or .');

/** How a candidate came to be. */
export const CANDIDATE_ORIGINS = ['seed', 'reflection', 'merge', 'edit', 'user'] as const;
export const CandidateOrigin = z.enum(CANDIDATE_ORIGINS);
/**
 * proposed: stored, not scored yet; accepted: kept (GEPA: strictly better than its parent on the same minibatch, then
 * scored on all of val; beam: in the beam); rejected: scored and not kept; refused: checked and never scored (why in
 * `reason`: a placeholder dropped, empty, a duplicate, too long, the optimizer's answer unusable).
 */
export const CANDIDATE_STATUSES = ['proposed', 'accepted', 'rejected', 'refused'] as const;
export const CandidateStatus = z.enum(CANDIDATE_STATUSES);

/** The scores a candidate was decided on: the minibatch it was proposed from (its parent's and its own), val, test. */
export const CandidateScores = z
  .object({
    minibatch: z.object({ parent: z.number(), child: z.number() }).nullable().default(null),
    /** Mean over the fixed val set (null: not scored on val). */
    val: z.number().nullable().default(null),
    test: z.number().nullable().default(null),
  })
  .strict();
export type CandidateScores = z.infer<typeof CandidateScores>;

export const PromptCandidate = z.object({
  /** `pc-<run>-<ordinal>`: a resumed run makes the same ids for the same candidates. */
  id: z.string(),
  runId: z.string(),
  /** Its place in the run's deterministic order: 0 is the seed. */
  ordinal: z.number().int().min(0),
  /** Every optimized prompt's text, by name. */
  prompts: z.record(PromptName, z.string()),
  parents: z.array(z.string()),
  origin: CandidateOrigin,
  /** The prompt the proposal changed (GEPA reflects on one prompt at a time); null for the seed and a merge. */
  component: PromptName.nullable(),
  /** What the optimizer wrote about the parent's rollouts (the reflection, or the critique an edit followed). */
  reflection: z.string().nullable(),
  /** The task ids of the minibatch it was proposed from (a merge: the val tasks it was judged on). */
  minibatch: z.array(z.string()).nullable(),
  status: CandidateStatus,
  /** Why it was refused or rejected, in a sentence. */
  reason: z.string().nullable(),
  scores: CandidateScores,
  /** The resources version whose prompt_template entries hold its texts (its rollouts run with it). */
  resourcesId: z.string().nullable(),
  createdAt: z.number(),
  /** When its status was decided (null while proposed). */
  decidedAt: z.number().nullable(),
});
export type PromptCandidate = z.infer<typeof PromptCandidate>;
/** The id a run's candidate gets from its place in the run's order: a resumed run makes the same ids. */
export const candidateId = (runId: string, ordinal: number): string => `pc-${runId}-${ordinal}`;

/**
 * What the optimizer stores: everything but the times (the store sets them). A candidate is stored `proposed` unless
 * it is refused at birth (a check failed before any rollout: status `refused` with its reason). Its lineage is given
 * explicitly (null where it has none).
 */
export const PromptCandidateInput = PromptCandidate.omit({ createdAt: true, decidedAt: true })
  .extend({
    id: z.string().min(1),
    runId: z.string().min(1),
    status: CandidateStatus.default('proposed'),
    reason: z.string().nullable().default(null),
    scores: CandidateScores.default(CandidateScores.parse({})),
    resourcesId: z.string().nullable().default(null),
  })
  .strict()
  .superRefine((c, ctx) => {
    const names = Object.keys(c.prompts);
    if (names.length === 0) ctx.addIssue({ code: 'custom', path: ['prompts'], message: 'a candidate holds at least one prompt: give { name: text }' });
    if (c.component !== null && !names.includes(c.component)) {
      ctx.addIssue({ code: 'custom', path: ['component'], message: `'${c.component}' is none of the candidate's prompts (${names.join(', ')})` });
    }
    if (c.parents.includes(c.id)) ctx.addIssue({ code: 'custom', path: ['parents'], message: 'a candidate is not its own parent' });
  });
export type PromptCandidateInput = z.input<typeof PromptCandidateInput>;
export type PromptCandidateInputParsed = z.output<typeof PromptCandidateInput>;
/**
 * Deciding a proposed candidate: once. Deciding it again with the same status and reason changes nothing, except that
 * a score still null may be filled in (its val score after an acceptance on the minibatch, its test score at the end);
 * another status or reason, or a score that differs from the one stored, is a conflict.
 */
export const CandidateDecision = z
  .object({
    status: z.enum(['accepted', 'rejected', 'refused']),
    reason: z.string().nullable().default(null),
    scores: CandidateScores.default(CandidateScores.parse({})),
  })
  .strict();
export type CandidateDecision = z.input<typeof CandidateDecision>;
export type CandidateDecisionParsed = z.output<typeof CandidateDecision>;

export const OPTIMIZER_PURPOSES = ['reflect', 'critique', 'edit', 'merge'] as const;
export const OptimizerCall = z.object({
  runId: z.string(),
  /** Its place in the run's deterministic order (a resumed run asks call `seq` again and gets this answer). */
  seq: z.number().int().min(0),
  purpose: z.enum(OPTIMIZER_PURPOSES),
  model: z.string(),
  /** sha256 of the request's model and messages: a replay that asks something else is not answered from here. */
  requestHash: z.string(),
  /** The request's chat messages. */
  messages: z.array(z.object({ role: z.enum(['system', 'user', 'assistant']), content: z.string() }).strict()),
  /** The answer's text; null when every attempt failed (`error` says why). */
  response: z.string().nullable(),
  error: z.string().nullable(),
  attempts: z.number().int().min(1),
  promptTokens: z.number().int().min(0),
  completionTokens: z.number().int().min(0),
  /** In the currency of the prices given (per million tokens); null without prices. */
  cost: z.number().nullable(),
  ms: z.number().min(0),
  createdAt: z.number(),
});
export type OptimizerCall = z.infer<typeof OptimizerCall>;
export const OptimizerCallInput = OptimizerCall.omit({ createdAt: true })
  .extend({ runId: z.string().min(1) })
  .strict();
export type OptimizerCallInput = z.input<typeof OptimizerCallInput>;

export const PromotedPrompt = z.object({
  /** The agent's stable id (protocol/agent-id.ts). */
  agent: z.string(),
  name: PromptName,
  text: z.string(),
  /** The candidate and run it came from; null for a text the user gave. */
  candidateId: z.string().nullable(),
  runId: z.string().nullable(),
  /** Who published it: `agl optimize promote`, `editor`. */
  by: z.string(),
  promotedAt: z.number(),
});
export type PromotedPrompt = z.infer<typeof PromotedPrompt>;
/**
 * What `agl optimize promote` (or the editor's Apply) publishes. With a candidate, `text` is that candidate's text of
 * `name` and `runId` its run (null: the store fills it in); without one, a text the user gave.
 */
export const PromotePromptInput = PromotedPrompt.omit({ promotedAt: true })
  .extend({ agent: z.string().min(1), by: z.string().min(1), runId: z.string().nullable().default(null) })
  .strict();
export type PromotePromptInput = z.input<typeof PromotePromptInput>;
export type PromotePromptInputParsed = z.output<typeof PromotePromptInput>;

/** Clearing an agent's promoted prompt: its agents get the seed again. */
export const ClearPromotedPromptInput = z.object({ agent: z.string().min(1), name: PromptName, by: z.string().min(1) }).strict();
export type ClearPromotedPromptInput = z.input<typeof ClearPromotedPromptInput>;

/** One entry of a prompt's promotion history, newest first: a promotion, or (text null) a clear back to the seed. */
export const PromptPromotion = PromotedPrompt.extend({ text: z.string().nullable() });
export type PromptPromotion = z.infer<typeof PromptPromotion>;

/** What an optimization keeps in its run's summary (TrainingRun.summary, kind 'optimize'). */
export interface OptimizationSummary {
  stopReason?: 'budget' | 'completed' | 'cancelled' | 'failed';
  error?: string;
  /** Rollouts spent (minibatches, val, test: all counted) and the budget. */
  rollouts?: number;
  budget?: number;
  optimizerCalls?: number;
  optimizerTokens?: { prompt: number; completion: number };
  cost?: number | null;
  /** With an LLM judge as the reward (`agl optimize --judge-*`): its calls, tokens and cost (null without its prices), apart from the optimizer's. */
  judgeCalls?: number;
  judgeTokens?: { prompt: number; completion: number };
  judgeCost?: number | null;
  seedCandidate?: string;
  bestCandidate?: string;
  scores?: { seed: { val: number | null; test: number | null }; best: { val: number | null; test: number | null } };
  candidates?: number;
  elapsedMs?: number;
  /** Each prompt whose seed is a file: that file (absolute), where `agl optimize promote` writes the new text beside. */
  seedFiles?: Record<string, string>;
}

/** The run kinds the store holds (declared beside TrainingRun in store.ts, which records a run's kind). */
export { RUN_KINDS, RunKind };

/** Keeps arbitrary keys JSON-safe at the edge (an optimizer's request metadata). */
export const OptimizerMeta = ClientJsonObject;
