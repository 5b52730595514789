/**
 * What an LLM judge said, where the viewer shows a reward (protocol/judge-reading.ts reads it from the spans): its
 * explanation beside the reward (a call's detail, a rollout's summary, a group card), a judge call's detail (score,
 * the place the rollout was shown at, tries, tokens, cost, its answer as given, a retest's second score), and the group view's ranking: the
 * group's rollouts best first by the judge's score, each with its reason and, folded, the text the judge read
 * (protocol/episode-text.ts renderEpisode: the same rendering the judge was sent).
 */
import { renderEpisode } from '../../protocol/episode-text.js';
import { judgeRanking, judgeVerdict, type JudgeVerdict } from '../../protocol/judge-reading.js';
import { AGL } from '../../protocol/spans.js';
import type { Span } from '../../protocol/store.js';
import type { GroupSample } from '../../protocol/webview-trajectory.js';
import { fmtNumber, h, icon, shortId } from '../shared/dom.js';
import { foldable } from '../shared/fold.js';

const ordinal = (n: number) =>
  `${n}${n % 10 === 1 && n % 100 !== 11 ? 'st' : n % 10 === 2 && n % 100 !== 12 ? 'nd' : n % 10 === 3 && n % 100 !== 13 ? 'rd' : 'th'}`;

/** Who judged and how, in a few words: "judge gpt-4.1-mini, group mode, shown 3rd of 8". */
export function judgeWho(v: JudgeVerdict): string {
  const shown = v.position !== null && v.order.length > 1 ? `, shown ${ordinal(v.position)} of ${v.order.length}` : '';
  return `judge ${v.model ?? '?'}${v.mode ? `, ${v.mode} mode` : ''}${shown}`;
}

/** A retest (judge.retest) in words: " · shown again 7th: 0.80 (a retest, never a reward)"; '' without one. */
function retestWords(v: JudgeVerdict): string {
  if (!v.retest) return '';
  const where = v.retest.position !== null ? ` ${ordinal(v.retest.position)}` : ' in a call of its own';
  return ` · shown again${where}: ${v.retest.score === null ? 'no score' : fmtNumber(v.retest.score)} (a retest, never a reward)`;
}

/** The judge's score and reward in words: "score 0.80" or "score 0.80, added to the agent's 1 (reward 1.40)". */
function scoreWords(v: JudgeVerdict): string {
  if (v.score === null) return 'no score';
  const added = v.agentReward !== null && v.reward !== null ? `, added to the agent's ${fmtNumber(v.agentReward)} (reward ${fmtNumber(v.reward)})` : '';
  return `score ${fmtNumber(v.score)}${added}`;
}

/** The judge's explanation beside a reward (null when no judge scored the rollout). */
export function judgeReason(spans: readonly Span[]): HTMLElement | null {
  const v = judgeVerdict(spans);
  if (!v) return null;
  if (v.error)
    return h(
      'div',
      { class: 'judge-reason failed', title: judgeWho(v) },
      icon('warning'),
      h('span', {}, ` The judge could not score this rollout: ${v.error}`),
    );
  return h(
    'div',
    { class: 'judge-reason', title: `${judgeWho(v)}: ${scoreWords(v)}` },
    icon('law'),
    h('span', { class: 'judge-who' }, ` ${judgeWho(v)}: `),
    h('span', { class: 'judge-explanation' }, v.explanation ?? '(no explanation given)'),
  );
}

/** A judge span's numbers: score, place shown, tries, tokens, cost; then its explanation and its answer as given. */
export function judgeSpanDetail(span: Span, metric: (label: string, value: string, cls?: string, title?: string) => HTMLElement): HTMLElement[] {
  const v = judgeVerdict([span]);
  if (!v) return [];
  const answer = span.attributes[AGL.judgeAnswer];
  return [
    h(
      'div',
      { class: 'metrics judge-metrics' },
      metric('Judge', v.model ?? '—'),
      metric('Score', v.score === null ? '—' : fmtNumber(v.score), '', v.error ?? ''),
      metric(
        'Shown',
        v.position !== null ? `${ordinal(v.position)} of ${v.order.length}` : '—',
        '',
        'Where this rollout was among those the judge read (shuffled per call)',
      ),
      v.retest
        ? metric(
            'Retest',
            v.retest.score === null ? '—' : fmtNumber(v.retest.score),
            '',
            `The judge's second score of this rollout${v.retest.position !== null ? `, shown again ${ordinal(v.retest.position)}` : ''}: how far it agrees with itself (judge.retest); never a reward`,
          )
        : null,
      metric('Tries', v.attempts === null ? '—' : String(v.attempts)),
      metric(
        'Tokens',
        `${fmtNumber(v.inputTokens)} + ${fmtNumber(v.outputTokens)}`,
        '',
        "The whole call's prompt + completion tokens (it judged every rollout shown)",
      ),
      metric(
        'Cost',
        v.cost === null ? '—' : `$${v.cost.toFixed(4)}`,
        '',
        v.cost === null ? 'No prices given (judge.priceIn, judge.priceOut)' : "The whole call's cost",
      ),
    ),
    v.explanation ? h('div', { class: 'judge-reason' }, icon('law'), h('span', { class: 'judge-explanation' }, ` ${v.explanation}`)) : null,
    typeof answer === 'string' ? h('details', { class: 'judge-answer' }, h('summary', {}, "The judge's answer"), h('pre', { class: 'mono' }, answer)) : null,
  ].filter((x): x is HTMLElement => x !== null);
}

/**
 * The group's ranking by the judge, best first: rank, score, the rollout (a link), where it was shown, the reason, and
 * the text the judge read, folded. Null when no sample of the group was judged.
 */
export function judgeRankingBlock(samples: GroupSample[], openRollout: (rolloutId: string) => void): HTMLElement | null {
  const ranked = judgeRanking(samples, (s) => s.spans);
  const failed = samples.map((s) => judgeVerdict(s.spans)).find((v) => v?.error);
  if (!ranked.length && !failed) return null;
  const first = ranked[0]?.verdict ?? failed!;
  return h(
    'div',
    { class: 'judge-ranking', 'data-judged': ranked.length },
    h('div', { class: 'metric-label' }, icon('law'), ` The judge's ranking · ${first.model ?? '?'}${first.mode ? `, ${first.mode} mode` : ''}`),
    failed && !ranked.length ? h('div', { class: 'judge-reason failed' }, icon('warning'), ` The judge could not score this group: ${failed.error}`) : null,
    h(
      'ol',
      {},
      ...ranked.map(({ item, verdict, rank }) => {
        const link = h(
          'a',
          { href: '#', class: 'open-rollout', 'data-rollout-id': item.rollout.id, title: `Open rollout ${item.rollout.id}` },
          shortId(item.rollout.id),
        );
        link.addEventListener('click', (e) => {
          e.preventDefault();
          openRollout(item.rollout.id);
        });
        const shown = (verdict.position !== null && verdict.order.length > 1 ? ` · shown ${ordinal(verdict.position)}` : '') + retestWords(verdict);
        return h(
          'li',
          { class: 'judge-rank', 'data-rank': rank, 'data-rollout-id': item.rollout.id, 'data-score': verdict.score },
          h('span', { class: 'chip judge-score', title: scoreWords(verdict) }, `#${rank} · ${fmtNumber(verdict.score)}`),
          ' ',
          link,
          h('span', { class: 'muted' }, shown),
          h('div', { class: 'judge-explanation' }, verdict.explanation ?? '(no explanation given)'),
          h(
            'details',
            { class: 'judge-read' },
            h('summary', { class: 'muted' }, 'What the judge read'),
            foldable(h('pre', { class: 'mono' }, renderEpisode(item.spans)), 20),
          ),
        );
      }),
    ),
  );
}
