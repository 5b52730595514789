/**
 * The trajectory viewer at half width (490 px, beside the editor) on real sql rollouts with long results, in the dark
 * and the light theme: the sql sample's agent run by the runner through the daemon's gateway (an upstream LLM scripted
 * to play writer, checker and rewriter), one GRPO group of two samples, its transitions from the trainer's own adapter,
 * credit and GRPO code. "Who is paid more than 32000?" returns 48 rows:
 *  - a group card shows a long result folded to its first 10 lines ("show all · n lines" unfolds it, "show less" folds
 *    it back), a tool step's long output to 3, so a card is a few hundred pixels, not one screen per result;
 *  - a call opened in the span tree scrolls its detail (under the tree at this width) into sight;
 *  - the states view says which steps are in sight and that it scrolls sideways, and which way;
 *  - the focused row of the rollouts list is outlined in the theme's focus colour.
 * Screenshots: test-results/webview/long-*.png.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Page } from 'playwright-core';
import { spansToTrajectory } from '../../daemon/algorithm/adapter.js';
import { parseTrainConfig } from '../../daemon/algorithm/config.js';
import { assignCredit } from '../../daemon/algorithm/credit.js';
import { computeAdvantages } from '../../daemon/algorithm/grpo.js';
import { trajectoryHandlers } from '../../extension/panels/data.js';
import type { Transition } from '../../protocol/store.js';
import { openCompanyDb, SCHEMA_LINE } from '../../samples/sql/db.js';
import { runQuery } from '../../samples/sql/execute.js';
import { type SampleDaemon, startSampleDaemon } from '../samples/sample-daemon.js';
import { contentText } from '../samples/scripted-llm.js';
import { openWebview, type WebviewSession } from './harness.js';
import { DARK_MODERN, LIGHT_MODERN } from './theme.js';

const AGENT = `${resolve('samples/sql/agent.ts')}#sqlAgent`;
const RUN = 'run-sql-long';
const STEP = 1;
const TASK = JSON.parse(
  readFileSync('samples/sql/data/train.jsonl', 'utf8')
    .split('\n')
    .find((l) => l.includes('"train-57"'))!,
) as {
  id: string;
  question: string;
  gold: string;
};

/**
 * Writer queries, one per rollout: the first forgets the filter (the checker rejects it, the rewriter fixes it: reward
 * 1), the second filters on the wrong amount (the checker accepts it: reward 0), so the group has something to teach.
 */
const WRITER = ['SELECT name FROM emp', 'SELECT name FROM emp WHERE pay > 90000'];

async function seed(env: SampleDaemon): Promise<string[]> {
  const config = parseTrainConfig({ training: { agentMatch: '^(writer|rewriter)$', grpo: { scaleRewards: 'group' } }, policies: { writer: {}, rewriter: {} } });
  await env.daemon.client.createTrainingRun({ id: RUN, agent: AGENT, totalSteps: 2, config: config as unknown as Record<string, unknown> });
  const ids: string[] = [];
  const items: Omit<Transition, 'advantage'>[] = [];
  for (let sample = 0; sample < WRITER.length; sample++) {
    const r = await env.runToEnd(TASK, AGENT, { runId: RUN, step: STEP, taskId: TASK.id, sample });
    assert.equal(r.status, 'succeeded');
    ids.push(r.id);
    const [attempt] = await env.daemon.client.getAttempts(r.id);
    const spans = await env.daemon.client.querySpans({ rolloutId: r.id, attemptId: attempt!.id });
    const reward = spans.find((s) => s.attributes['agl.reward.final'] === true)?.attributes['agl.reward.value'] as number;
    for (const c of assignCredit(spansToTrajectory(spans, { agentMatch: config.training.agentMatch }), config.training.credit))
      items.push({
        runId: RUN,
        step: STEP,
        rolloutId: r.id,
        attemptId: attempt!.id,
        spanId: c.step.spanId,
        groupId: TASK.id,
        index: c.step.index,
        agentName: c.step.agentName,
        reward,
        credit: c.credit,
        promptTokens: c.step.promptIds.length,
        completionTokens: c.step.completionIds.length,
      });
  }
  const adv = computeAdvantages(items, config.training.grpo);
  await env.daemon.client.addTransitions(items.map((it, k) => ({ ...it, advantage: adv.advantages[k]! })));
  await env.daemon.client.updateTrainingRun(RUN, { step: 2, status: 'succeeded' });
  return ids;
}

function goldRows(): number {
  const db = openCompanyDb();
  try {
    return runQuery(db, TASK.gold).rows.length;
  } finally {
    db.close();
  }
}

/** Lines a folded block shows, and its whole length in lines. */
const folded = (page: Page, selector: string) =>
  page
    .locator(selector)
    .first()
    .evaluate((el) => {
      const content = el.querySelector('.fold-content') as HTMLElement;
      const line = parseFloat(getComputedStyle(content).lineHeight);
      const toggle = el.querySelector('.fold-toggle') as HTMLElement;
      return {
        shown: Math.round(content.clientHeight / line),
        whole: Math.round(content.scrollHeight / line),
        toggle: toggle.hidden ? null : toggle.textContent,
      };
    });

describe('trajectory viewer at half width on real sql rollouts with 48-row results', () => {
  let env: SampleDaemon;
  let rollouts: string[];
  before(async () => {
    let writes = 0;
    env = await startSampleDaemon((body) => {
      const messages = body.messages ?? [];
      const last = contentText(messages.at(-1)?.content);
      if (contentText(messages[0]?.content) === SCHEMA_LINE) return WRITER[writes++ % WRITER.length]!;
      if (last.endsWith('Correct?')) return last.includes('WHERE') ? 'yes' : 'no';
      if (last.endsWith('Better SQL:')) return TASK.gold;
      return 'unexpected prompt';
    });
    rollouts = await seed(env);
  });
  after(async () => {
    await env?.close();
  });

  for (const theme of ['dark', 'light'] as const) {
    describe(`${theme} theme`, () => {
      let view: WebviewSession;
      before(async () => {
        view = await openWebview('trajectory', trajectoryHandlers(env.daemon.client), { width: 490, height: 800, theme });
      });
      after(async () => {
        await view?.close();
      });

      it('folds a long result to 10 lines and a tool step to 3 in the group cards; "show all" unfolds, "show less" folds back', async () => {
        const page = view.page;
        await view.notify('trajectory/show', { view: { kind: 'group', runId: RUN, step: STEP } });
        await page.waitForSelector('.sample-card');
        const card = `.sample-card[data-rollout-id="${rollouts[0]}"]`;
        const result = `${card} .answer dd[data-field="result"]`;
        await page.waitForFunction((sel) => !(document.querySelector(`${sel} .fold-toggle`) as HTMLElement | null)?.hidden, result);
        const before = await folded(page, result);
        const rows = goldRows();
        assert.ok(rows > 40, `the gold query returns ${rows} rows`);
        assert.deepEqual(before, { shown: 10, whole: rows, toggle: `show all · ${rows} lines` }, 'one row per line, the first 10 shown');
        assert.deepEqual(await folded(page, '.expected-emitted [data-field="result"]'), before, 'the gold rows above the cards fold the same way');
        // The gold query once: in the task (its `gold` field); the emitted expected output names it instead of repeating it.
        assert.equal(await page.locator('.expected-emitted [data-field="sql"]').count(), 0, 'the gold query is not shown a second time');
        assert.match(await page.locator('.expected-emitted .expected-same').innerText(), /^\(its sql is the task's gold above\)$/);
        assert.equal(await page.locator('.group dd[data-key="gold"]').innerText(), TASK.gold);
        const tool = await folded(page, `${card} .tool-row .foldable`);
        assert.equal(tool.shown, 3, `a tool step's output folded to 3 lines: ${JSON.stringify(tool)}`);
        const height = (await page.locator(card).boundingBox())!.height;
        assert.ok(height < 700, `a card is shorter than a screen: ${height} px`);
        await view.screenshot(`long-group-folded-${theme}`);

        await page.locator(`${result} .fold-toggle`).click();
        const open = await folded(page, result);
        assert.deepEqual([open.shown, open.toggle], [open.whole, 'show less'], 'the whole result');
        assert.equal(await page.locator(`${result} .fold-toggle`).getAttribute('aria-expanded'), 'true');
        await page.locator(`${result} .fold-toggle`).click();
        assert.equal((await folded(page, result)).shown, 10, 'folded again');
        assert.equal(await page.evaluate(() => document.body.dataset.view), 'group', 'the toggle opened nothing else');
      });

      it("opens a card's call, by a click or by Enter on the focused row, scrolled to its detail", async () => {
        const page = view.page;
        const inSight = (role: string) =>
          page.waitForFunction((role) => {
            const detail = document.querySelector('.detail-pane');
            if (document.body.dataset.view !== 'rollout' || !detail || !new RegExp(`${role} · call`).test(detail.textContent ?? '')) return false;
            const top = detail.getBoundingClientRect().top;
            return top >= 0 && top < window.innerHeight / 2;
          }, role);
        await view.notify('trajectory/show', { view: { kind: 'group', runId: RUN, step: STEP } });
        const card = page.locator(`.sample-card[data-rollout-id="${rollouts[0]}"]`);
        await card.waitFor();
        const rewriter = card.locator('.call-row[data-role="rewriter"]');
        assert.equal(await rewriter.getAttribute('tabindex'), '0', 'a Tab stop');
        await rewriter.focus();
        await page.keyboard.press('Enter');
        await inSight('rewriter');
        await page.keyboard.press('Backspace');
        await card.waitFor();
        await card.locator('.call-row[data-role="checker"]').first().click();
        await inSight('checker');
      });

      it('scrolls to the detail of a call opened in the span tree, under the tree at this width', async () => {
        const page = view.page;
        await view.notify('trajectory/show', { view: { kind: 'rollout', rolloutId: rollouts[0] } });
        await page.waitForSelector('.span-row[data-kind="llm"]');
        await page.evaluate(() => window.scrollTo(0, 0));
        const row = page.locator('.span-row[data-kind="llm"]').nth(2); // the rewriter's call
        await row.scrollIntoViewIfNeeded();
        await row.click();
        await page.waitForFunction(() => /rewriter/.test(document.querySelector('.detail-pane')?.textContent ?? ''));
        await page.waitForFunction(() => {
          const top = document.querySelector('.detail-pane')!.getBoundingClientRect().top;
          return top >= 0 && top < window.innerHeight / 2;
        });
        const tree = (await page.locator('.span-tree').boundingBox())!;
        const detail = (await page.locator('.detail-pane').boundingBox())!;
        assert.ok(detail.y >= tree.y + tree.height - 1, 'the detail is under the tree');
        await page.screenshot({ path: resolve('test-results', 'webview', `long-call-detail-${theme}.png`) });
      });

      it('says which steps of the states view are in sight and that it scrolls sideways', async () => {
        const page = view.page;
        await page.click('vscode-tab-header.tab-states');
        const cue = page.locator('.states-cue');
        await cue.waitFor({ state: 'visible' });
        const steps = await page.locator('.states-table th.step-col').count();
        assert.ok(steps >= 6, `writer, tool, checker, rewriter, tool, checker...: ${steps} steps`);
        assert.match((await cue.innerText()).trim(), new RegExp(`^s1–s\\d+ of ${steps} steps in sight: scroll right for the others →$`));
        assert.equal(await page.locator('.states-scroll.more-right').count(), 1, 'the right edge fades');
        await page.screenshot({ path: resolve('test-results', 'webview', `long-states-${theme}.png`) });
        await page.locator('.states-scroll').evaluate((el) => el.scrollTo({ left: el.scrollWidth }));
        await page.waitForFunction(
          (n) =>
            new RegExp(`^s\\d+–s${n} of ${n} steps in sight: ← scroll left for the others$`).test(document.querySelector('.states-cue')!.textContent!.trim()),
          steps,
        );
        assert.equal(await page.locator('.states-scroll.more-right').count(), 0);
      });

      it("outlines the focused row of the rollouts list in the theme's focus colour", async () => {
        const page = view.page;
        await view.notify('trajectory/show', { view: { kind: 'rollouts' } });
        await page.waitForSelector('.rollout-row');
        await page.locator('vscode-textfield[data-filter="search"] input').focus();
        await page.keyboard.press('ArrowDown');
        await page.waitForFunction(() => !!(document.activeElement as HTMLElement | null)?.dataset.rolloutId);
        const style = await page.evaluate(() => {
          const s = getComputedStyle(document.activeElement!);
          return [s.outlineStyle, s.outlineColor];
        });
        const focus = (theme === 'light' ? LIGHT_MODERN : DARK_MODERN)['list-focusOutline']!;
        const rgb = `rgb(${[1, 3, 5].map((i) => parseInt(focus.slice(i, i + 2), 16)).join(', ')})`;
        assert.deepEqual(style, ['solid', rgb]);
        await view.screenshot(`long-list-focused-${theme}`);
        assert.deepEqual([...view.problems], []);
      });
    });
  }
});
