/**
 * The store API's schemas for prompt optimization (protocol/prompts.ts): a run's prompt candidates, its optimizer
 * calls, the prompts promoted per agent, and the optimization view's query. Declared as routes in routes.ts beside the
 * others; request bodies are strict (an unknown key is named, not dropped), like api.ts's.
 */
import { z } from 'zod';
import {
  CandidateDecision,
  ClearPromotedPromptInput,
  OptimizerCall,
  OptimizerCallInput,
  PromotePromptInput,
  PromotedPrompt,
  PromptCandidate,
  PromptCandidateInput,
  PromptName,
  PromptPromotion,
} from './prompts.js';

/** POST /prompt-candidates: one candidate (an identical one stored already is answered as stored). */
export const AddPromptCandidateRequest = PromptCandidateInput;
export type AddPromptCandidateRequest = z.input<typeof AddPromptCandidateRequest>;
/** GET /prompt-candidates?runId=: the run's candidates in their order. */
export const PromptCandidateListQuery = z.object({ runId: z.string().min(1) });
export const PromptCandidateList = z.object({ items: z.array(PromptCandidate) });
export type PromptCandidateList = z.infer<typeof PromptCandidateList>;
/** POST /prompt-candidates/:id/decision. */
export const DecideCandidateRequest = CandidateDecision;
export type DecideCandidateRequest = z.input<typeof DecideCandidateRequest>;

/** POST /optimizer-calls: one call (an identical one stored already is answered as stored). */
export const AddOptimizerCallRequest = OptimizerCallInput;
export type AddOptimizerCallRequest = z.input<typeof AddOptimizerCallRequest>;
/** GET /optimizer-calls?runId=: the run's calls in their order. */
export const OptimizerCallListQuery = z.object({ runId: z.string().min(1) });
export const OptimizerCallList = z.object({ items: z.array(OptimizerCall) });
export type OptimizerCallList = z.infer<typeof OptimizerCallList>;

/** POST /prompts/promoted. */
export const PromotePromptRequest = PromotePromptInput;
export type PromotePromptRequest = z.input<typeof PromotePromptRequest>;
/** GET /prompts/promoted?agent=: the texts agents get now (every agent's without `agent`). */
export const PromotedPromptListQuery = z.object({ agent: z.string().min(1).optional() });
export const PromotedPromptList = z.object({ items: z.array(PromotedPrompt) });
export type PromotedPromptList = z.infer<typeof PromotedPromptList>;
/** POST /prompts/promoted/clear: `cleared` is false when nothing was promoted for that prompt. */
export const ClearPromotedPromptRequest = ClearPromotedPromptInput;
export type ClearPromotedPromptRequest = z.input<typeof ClearPromotedPromptRequest>;
export const ClearPromotedPromptResponse = z.object({ cleared: z.boolean() });
export type ClearPromotedPromptResponse = z.infer<typeof ClearPromotedPromptResponse>;
/** GET /prompts/promoted/history?agent=&name=: every promotion and clear of that prompt, newest first. */
export const PromptPromotionsQuery = z.object({ agent: z.string().min(1), name: PromptName });
export const PromptPromotionList = z.object({ items: z.array(PromptPromotion) });
export type PromptPromotionList = z.infer<typeof PromptPromotionList>;

/** GET /views/optimization?runId=: an optimization as the editor's view shows it (protocol/webview-optimize.ts). */
export const OptimizationViewQuery = z.object({ runId: z.string().min(1) }).strict();
